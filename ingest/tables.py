"""Financial tables -> typed SQL tables registered in the catalogue.

Cells such as "(1,234.5)", "$ 12", "12.5%", "—" become numbers (or NULL); a column whose every filled
cell is a number is REAL, anything else TEXT. Values are stored as printed: a statement "in thousands"
keeps 1,234.5 and its columns carry the unit "USD thousands", so nothing is silently rescaled.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import sqlalchemy as sa

from ingest.parsers import Cell, RawTable

DASHES = {"-", "—", "–", "−", "--", "n/a", "na", "n.a.", "nm", "*"}
NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$")
SCALE = re.compile(
    r"\b(?:in|amounts? in|expressed in|USD|US\$|\$)\s*(?:(?:U\.?S\.?|USD|US)\s+)?(?:dollars\s+)?"
    r"(thousands|millions|billions)\b", re.I)
USD_WORDS = re.compile(r"\bUSD\b|U\.S\. dollars|US dollars|\$", re.I)
CURRENCIES = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}


@dataclass
class ParsedNumber:
    value: float | None  # None = an explicit blank such as "—"
    currency: str = ""
    percent: bool = False


def parse_number(cell: Cell) -> ParsedNumber | None:
    """A number from a financial-statement cell, or None when the cell is not numeric."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return ParsedNumber(float(cell))
    if cell is None:
        return None
    s = str(cell).strip().replace("\u00a0", " ")
    if not s:
        return None
    if s.lower() in DASHES:
        return ParsedNumber(None)
    negative = False
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1].strip()
    currency = ""
    for sym, code in CURRENCIES.items():
        if sym in s:
            currency, s = code, s.replace(sym, "")
    if s.upper().startswith("USD"):
        currency, s = "USD", s[3:]
    percent = s.endswith("%")
    s = s.rstrip("%").replace(" ", "")
    if s.startswith(("−", "–")):
        s = "-" + s[1:]
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1]
    if not s or not NUMBER.match(s) or not any(ch.isdigit() for ch in s):
        return None
    value = float(s.replace(",", ""))
    return ParsedNumber(-value if negative else value, currency, percent)


@dataclass
class ColumnSpec:
    name: str
    label: str
    sql_type: str  # REAL | TEXT
    unit: str = ""


@dataclass
class TypedTable:
    title: str
    page: int
    unit: str
    columns: list[ColumnSpec]
    rows: list[list[float | str | None]] = field(default_factory=list)

    def columns_json(self) -> str:
        return json.dumps([c.__dict__ for c in self.columns])


def identifier(label: str, fallback: str) -> str:
    s = re.sub(r"[^0-9a-zA-Z]+", "_", label.strip().lower()).strip("_")
    if not s:
        return fallback
    if s[0].isdigit():
        s = ("y" if re.fullmatch(r"(19|20)\d\d", s) else "c_") + s
    return s[:48]


def _is_text(cell: Cell) -> bool:
    return cell not in (None, "") and parse_number(cell) is None


def _is_year(cell: Cell) -> bool:
    return bool(re.fullmatch(r"(FY\s?)?(19|20)\d\d[A-Z]?", str(cell).strip())) if cell not in (None, "") else False


def _header_like(row: list[Cell]) -> bool:
    filled = [c for c in row if c not in (None, "")]
    return bool(filled) and all(_is_text(c) or _is_year(c) for c in filled)


def _clean(cell: Cell) -> Cell:
    if isinstance(cell, str):
        return " ".join(cell.split())
    return cell


def build_typed_table(raw: RawTable) -> TypedTable | None:
    """Header rows, typed columns and units for one raw table; None if it has no data rows."""
    rows = [[_clean(c) for c in r] for r in raw.rows if any(c not in (None, "") for c in r)]
    if len(rows) < 2:
        return None
    width = max(len(r) for r in rows)
    rows = [r + [None] * (width - len(r)) for r in rows]
    title, notes = raw.title, [raw.title, raw.context]
    # a lone text cell spanning the first row is a title ("Income statement (in thousands)")
    while len(rows) > 2 and sum(c not in (None, "") for c in rows[0]) == 1 and width > 1 and _is_text(rows[0][0]):
        notes.append(str(rows[0][0]))
        title = title or str(rows[0][0])
        rows = rows[1:]
    header_rows = []
    has_numbers = any(parse_number(c) is not None and c not in (None, "") for r in rows[1:] for c in r[1:])
    # several header rows only above numeric data ("Year ended" / "2024 2023"); a text table has one
    while len(rows) > 1 and _header_like(rows[0]) and len(header_rows) < (3 if has_numbers else 1):
        header_rows.append(rows.pop(0))
    labels = []
    for j in range(width):
        parts = [str(h[j]) for h in header_rows if h[j] not in (None, "")]
        labels.append(" ".join(parts))
    notes.extend(labels)
    scale_match = SCALE.search(" ".join(str(n) for n in notes if n))
    scale = scale_match.group(1).lower() if scale_match else ""
    note_text = " ".join(str(n) for n in notes if n)
    header_currency = next((code for sym, code in CURRENCIES.items() if sym != "$" and sym in note_text), "")
    header_currency = header_currency or ("USD" if USD_WORDS.search(note_text) else "")
    columns, used = [], set()
    for j in range(width):
        cells = [r[j] for r in rows]
        filled = [c for c in cells if c not in (None, "")]
        parsed = [parse_number(c) for c in filled]
        numeric = bool(filled) and all(p is not None for p in parsed)
        unit = ""
        if numeric:
            if any(p.percent for p in parsed) or "%" in labels[j]:
                unit = "%"
            else:
                currency = next((p.currency for p in parsed if p.currency), "") or header_currency
                unit = " ".join(x for x in (currency, scale) if x)
        name = identifier(labels[j], "item" if j == 0 else f"col_{j + 1}")
        base, n = name, 2
        while name in used or name == "row_num":
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        columns.append(ColumnSpec(name, labels[j], "REAL" if numeric else "TEXT", unit))
    typed_rows = []
    for r in rows:
        out = []
        for j, c in enumerate(r):
            if columns[j].sql_type == "REAL":
                p = parse_number(c)
                out.append(p.value if p else None)
            else:
                out.append(None if c in (None, "") else str(c))
        typed_rows.append(out)
    table_unit = " ".join(x for x in (header_currency, scale) if x)
    return TypedTable(title or "table", raw.page, table_unit, columns, typed_rows)


def sql_table_name(title: str, doc_id: str, version: int, index: int) -> str:
    slug = identifier(title, "table")[:24].strip("_") or "table"
    return f"t_{slug}_{doc_id[:8]}_v{version}_{index}"


def create_sql_table(conn: sa.Connection, name: str, table: TypedTable) -> None:
    """Create and fill the physical table inside the caller's transaction."""
    md = sa.MetaData()
    cols = [sa.Column("row_num", sa.Integer, primary_key=True)]
    cols += [sa.Column(c.name, sa.Float if c.sql_type == "REAL" else sa.Text) for c in table.columns]
    t = sa.Table(name, md, *cols)
    t.create(conn)
    if table.rows:
        conn.execute(t.insert(), [
            {"row_num": i + 1, **{c.name: v for c, v in zip(table.columns, row)}} for i, row in enumerate(table.rows)
        ])


def drop_sql_table(conn: sa.Connection, name: str) -> None:
    sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
