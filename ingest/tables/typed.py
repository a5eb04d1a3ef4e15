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

from ingest.parsers.document import Cell, RawTable
from ingest.tables.captions import CAPTION, JUNK_TITLE, PERIOD_WORDS, caption_header_rows, title_rows
from ingest.tables.grid import blank, drop_empty_columns, fold_columns, periodish, split_glued_values, split_merged_rows
from ingest.tables.numbers import CURRENCIES, ParsedNumber, parse_number  # noqa: F401 - parse_number is re-exported
from ingest.tables.periods import parse_period
from ingest.tables.rows import (PER_SHARE, RowMeta, classify_statement, find_scale, name_unlabelled_totals, row_meta,
                                statement_title)

USD_WORDS = re.compile(r"\bUSD\b|U\.S\. dollars|US dollars|\$", re.I)


@dataclass
class ColumnSpec:
    name: str
    label: str
    sql_type: str  # REAL | TEXT
    unit: str = ""
    role: str = "value"  # label | value | text
    period: str = ""
    period_end: str = ""
    period_months: int = 0
    fiscal_year: int = 0
    fiscal_quarter: int = 0
    scale: str = ""
    currency: str = ""


@dataclass
class TypedTable:
    title: str
    page: int
    unit: str
    columns: list[ColumnSpec]
    rows: list[list[float | str | None]] = field(default_factory=list)
    section: str = ""
    statement: str = ""
    scale: str = ""
    currency: str = ""
    bbox: tuple[float, float, float, float] | None = None
    row_meta: list[RowMeta] = field(default_factory=list)  # one per row when the table has row labels

    @property
    def label_column(self) -> str:
        return next((c.name for c in self.columns if c.role == "label"), "")

    @property
    def periods(self) -> list[str]:
        return list(dict.fromkeys(c.period for c in self.columns if c.period))

    def columns_json(self) -> str:
        return json.dumps([c.__dict__ for c in self.columns])

    def meta_json(self) -> str:
        """The catalogue fields beyond the columns (lx_tables.meta_json; docs/contracts.md "Table catalogue")."""
        return json.dumps({
            "section": self.section, "statement": self.statement, "scale": self.scale, "currency": self.currency,
            "bbox": [round(x, 1) for x in self.bbox] if self.bbox else None, "label_column": self.label_column,
            "periods": self.periods,
            "rows": [{"row_num": i + 1, "label": m.label, "parent": m.parent, "is_total": m.is_total,
                      "unit": m.unit, "scale": m.scale} for i, m in enumerate(self.row_meta)],
        })


def identifier(label: str, fallback: str) -> str:
    s = re.sub(r"[^0-9a-zA-Z]+", "_", label.strip().lower()).strip("_")
    if not s:
        return fallback
    if s[0].isdigit():
        s = ("y" if re.fullmatch(r"(19|20)\d\d", s) else "c_") + s
    return s[:48].rstrip("_")


def period_slug(key: str) -> str:
    """y2021, fy2019, q4_2024, h1_2023, as_of_2023_06_30, m6_to_2023_06_30."""
    slug = re.sub(r"[^0-9a-z]+", "_", key.lower()).strip("_")
    if re.fullmatch(r"\d{4}", key):
        return f"y{key}"
    if key.startswith(("FY", "Q", "H")):
        return slug
    m = re.fullmatch(r"(\d+)M (.+)", key)
    if m:
        return "m" + m.group(1) + "_to_" + re.sub(r"[^0-9]+", "_", m.group(2))
    return "as_of_" + slug


RESERVED = {"row_num", "section", "is_total"}
DURATION_HEAD = re.compile(r"\b(ended|ending|months?|weeks?|years?)\b", re.I)
# a label-only row ending in a connective ("NET INCOME PER COMMON SHARE ATTRIBUTABLE TO") runs on in the next row
WRAPS = re.compile(r"\b(to|of|and|or|for|in|from|by|on|the|attributable|per|at|with|before|after|net\s+of)\s*[,-]?$", re.I)


def _is_text(cell: Cell) -> bool:
    return cell not in (None, "") and parse_number(cell) is None


def _header_like(row: list[Cell]) -> bool:
    filled = [c for c in row if not blank(c)]
    return bool(filled) and all(_is_text(c) or periodish(c) for c in filled)


FOOTNOTE_MARK = re.compile(r"^(\([a-z]\)|\[[a-z0-9]\]|[*†‡§])+$", re.I)


def _clean(cell: Cell) -> Cell:
    """Whitespace normalised; a cell holding only footnote marks ("(a)", "(a)(b)", "*") is empty: the marks
    printed beside numbers in cells of their own must not make a number column text."""
    if isinstance(cell, str):
        cell = "\n".join(" ".join(part.split()) for part in cell.split("\n")).strip()
        return "" if FOOTNOTE_MARK.match(cell) else cell
    return cell


def _is_number(x) -> bool:
    return parse_number(x) is not None and not blank(x)


def _merge_labels(header_rows: list[list[Cell]], width: int) -> list[str]:
    labels = []
    for j in range(width):
        parts: list[str] = []
        for h in header_rows:
            if blank(h[j]) or re.fullmatch(r"\(\d\)", str(h[j]).strip()):
                continue  # a footnote mark over the column
            if not parts or parts[-1] != str(h[j]).strip():
                parts.append(str(h[j]).strip())
        labels.append(" ".join(parts))
    return labels


def _caption_periods(labels: list[str], value_cols: list[int], notes: str) -> dict[int, str]:
    """Headers left outside the table (a ruled grid under its printed header): years in the caption, in
    order, one per value column, and "Three Months Ended ..." groups spread over them."""
    years = re.findall(r"(?<![\d,.$])((?:19|20)\d\d)(?![\d,])", notes)
    if not value_cols or len(years) < len(value_cols):
        return {}
    years = years[-len(value_cols):]
    groups = re.findall(r"((?:three|six|nine|twelve)\s+months|years?|quarters?|(?:13|26|39|52)\s+weeks)\s+ended\s+"
                        r"([A-Z][a-z]+\.?\s+\d{1,2})", notes, re.I)
    out = {}
    per = len(value_cols) // len(groups) if groups and len(value_cols) % len(groups) == 0 else 0
    for k, j in enumerate(value_cols):
        group = f"{groups[k // per][0]} ended {groups[k // per][1]}, " if per else ""
        out[j] = f"{group}{years[k]}"
    return out


def build_typed_table(raw: RawTable) -> TypedTable | None:
    """The one normaliser for tables of every source: header rows merged, typed columns with their period,
    unit and scale, row labels with their section and totals. None if the table has no data rows."""
    given = raw.indents if raw.indents and len(raw.indents) == len(raw.rows) else [None] * len(raw.rows)
    rows, indents = [], []
    head_kept = 0  # rows kept of the parser's header rows (rows of footnote marks alone are dropped)
    for i, (r, ind) in enumerate(zip(raw.rows, given)):
        r = [_clean(c) for c in r]
        if any(not blank(c) for c in r):
            parts = split_merged_rows([r], _is_number)
            rows += parts
            indents += [ind] * len(parts)
            head_kept += len(parts) if raw.header_rows and i < raw.header_rows else 0
    if len(rows) < 2:
        return None
    rows, sym_currency = drop_empty_columns(rows)
    if not rows or not rows[0]:
        return None
    notes = [raw.title, raw.context]
    rows, title, n_title, captions = title_rows(rows, notes)
    given_title = "" if JUNK_TITLE.match(str(raw.title or "").strip()) else str(raw.title or "")
    title = title if (title and statement_title(title) and not statement_title(given_title)) else (given_title or title)
    width = len(rows[0])
    has_numbers = any(_is_number(c) for r in rows[1:] for c in r[1:])
    if raw.header_rows:
        n_head = max(0, min(head_kept - n_title, len(rows) - 1))
    else:
        n_head = 0
        while n_head < len(rows) - 1 and _header_like(rows[n_head]) and n_head < (4 if has_numbers else 1):
            n_head += 1
    while n_head > 0 and not any(not blank(c) for c in rows[n_head - 1][1:]) \
            and not CAPTION.search(str(rows[n_head - 1][0] or "")):
        n_head -= 1  # "Assets" / "Current assets:" above the first numbers are section rows, not headers
    if not any(periodish(c) for r in rows[:n_head] for c in r[1:]):
        # a period row below stray lines (footnote marks, a "Fiscal Year" row read as data) is the header
        for k in range(n_head, min(n_head + 5, len(rows) - 1)):
            cells = [c for c in rows[k][1:] if not blank(c)]
            if len(cells) >= 2 and all(periodish(c) for c in cells):
                n_head = k + 1
                break
    rows = fold_columns(split_glued_values(rows, n_head), n_head)
    width = len(rows[0])
    captions += caption_header_rows(rows[:n_head], notes)
    labels = _merge_labels(rows[:n_head], width)
    if labels and (CAPTION.search(labels[0]) or len(labels[0].split()) > 4):
        notes.append(labels[0])  # a caption over the row labels is no column name
        labels[0] = ""
    body, indents = rows[n_head:], indents[n_title + n_head:]
    if not body:
        return None
    note_text = " ".join(str(n) for n in notes + labels if n)
    # the table's own captions first; the lines above it (which may reach a paragraph higher up) last
    own = " ".join(str(n) for n in [notes[0]] + notes[2:] + labels if n)
    scale = find_scale(own) or find_scale(str(raw.context or ""))
    header_currency = next((code for sym, code in CURRENCIES.items() if sym != "$" and sym in note_text), "")
    header_currency = header_currency or ("USD" if USD_WORDS.search(note_text) else "") or sym_currency
    numeric = []
    for j in range(width):
        filled = [c for c in (r[j] for r in body) if not blank(c)]
        parsed = [parse_number(c) for c in filled]
        good = [p for p in parsed if p is not None]
        numeric.append(bool(good) and any(p.value is not None for p in good)
                       and (len(good) == len(filled) or (j > 0 and len(good) >= 0.8 * len(filled) and len(good) >= 4)))
    label_col = 0 if not numeric[0] else None
    value_cols = [j for j in range(width) if numeric[j]]
    period_context = " ".join(str(n) for n in notes if n)
    if labels and labels[0] and PERIOD_WORDS.search(labels[0]):
        period_context += " " + labels[0]  # "Year Ended June 30," printed over the row labels
    periods = {j: parse_period(labels[j], period_context) for j in value_cols}
    if labels and DURATION_HEAD.search(labels[0]):  # "Fiscal Years Ended" beside "January 28, 2023" on one line
        for j, per in periods.items():
            if per and not per.months and per.end and not DURATION_HEAD.search(labels[j]):
                periods[j] = parse_period(f"{labels[0]} {labels[j]}", period_context) or per
    if not any(periods.values()):
        for j, header in _caption_periods(labels, value_cols, period_context).items():
            periods[j] = parse_period(header, period_context)
            labels[j] = labels[j] or header
    # rows: wrapped labels joined, section rows as parents, totals, per-share rows
    has_values = [any(not blank(r[j]) for j in range(width) if j != label_col) for r in body]
    metas: list[RowMeta] = []
    if label_col is not None:
        merged_body, merged_values, merged_ind = [], [], []
        for i, r in enumerate(body):
            ind = indents[i]
            prev_open = merged_body and not merged_values[-1] and merged_body[-1][0]
            if prev_open and ((isinstance(r[0], str) and r[0][:1].islower()) or (blank(r[0]) and has_values[i])
                              or (isinstance(r[0], str) and WRAPS.search(str(merged_body[-1][0])))):
                r = [f"{merged_body[-1][0]} {r[0] or ''}".strip()] + r[1:]
                merged_body.pop()
                merged_values.pop()
                ind = merged_ind.pop()
            merged_body.append(r)
            merged_values.append(has_values[i])
            merged_ind.append(ind)
        body, has_values = merged_body, merged_values
        metas, kept = row_meta([str(r[0] or "") for r in body], has_values, scale, note_text,
                               merged_ind if any(x is not None for x in merged_ind) else None)
        body = [body[i] for i in kept]
        for m, r in zip(metas, body):  # "Effective tax rate  15.1 %  16.2 %" in a table of amounts
            vals = [p for p in (parse_number(r[j]) for j in value_cols if not blank(r[j])) if p and p.value is not None]
            if vals and all(p.percent for p in vals) and not m.unit:
                m.unit, m.scale = "%", ""
    columns, used = [], set(RESERVED)
    for j in range(width):
        cells = [r[j] for r in body]
        parsed = [parse_number(c) for c in cells if not blank(c)]
        unit, currency, col_scale = "", "", scale
        per = periods.get(j)
        if numeric[j]:
            pct = [p for p in parsed if p and p.value is not None]
            if sum(p.percent for p in pct) * 2 > len(pct) or re.search(r"%|\bpercent", labels[j], re.I):
                unit, col_scale = "%", ""
            elif PER_SHARE.search(labels[j]):  # an "EPS (Diluted)" column is never in millions
                currency = next((p.currency for p in parsed if p and p.currency), "") or header_currency
                money = "cents" if re.search(r"\bcents?\b", labels[j], re.I) else currency
                unit, col_scale = " ".join(x for x in (money, "per share") if x), ""
            else:
                currency = next((p.currency for p in parsed if p and p.currency), "") or header_currency
                unit = " ".join(x for x in (currency, scale) if x)
        # short headers name their column ("2024" -> y2024, "FY 2024" -> fy_2024); long ones by their period
        base = identifier(labels[j], "") if labels[j] and len(labels[j]) <= (24 if per else 40) else ""
        base = base or (period_slug(per.key) if per and numeric[j] else "")
        base = base or identifier(labels[j], "") or ("item" if j == label_col else f"col_{j + 1}")
        name, n = base, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        role = "label" if j == label_col else ("value" if numeric[j] else "text")
        columns.append(ColumnSpec(
            name, labels[j], "REAL" if numeric[j] else "TEXT", unit, role,
            per.key if per else "", per.end if per else "", per.months if per else 0, per.year if per else 0,
            per.quarter if per else 0, col_scale if numeric[j] else "", currency))
    typed_rows = []
    for r in body:
        out = []
        for j, c in enumerate(r):
            if columns[j].sql_type == "REAL":
                p = parse_number(c)
                out.append(p.value if p else None)
            else:
                out.append(None if blank(c) else str(c))
        typed_rows.append(out)
    if label_col is not None and metas:  # "Total revenues" printed without its label
        value_idx = [j for j in range(width) if j != label_col and columns[j].sql_type == "REAL"]
        for i in name_unlabelled_totals(metas, [[r[j] for j in value_idx] for r in typed_rows]):
            typed_rows[i][label_col] = metas[i].label
    header_currency = header_currency or next((c.currency for c in columns if c.currency), "")
    table_unit = " ".join(x for x in (header_currency, scale) if x)
    statement = classify_statement(title, str(raw.context or ""), [m.label for m in metas], captions,
                                   has_periods=len({c.period for c in columns if c.period}))
    if statement and not statement_title(title):  # "$ in millions (unaudited)" under the statement's title
        named = [ln for ln in str(raw.context or "").splitlines()[-4:] + captions if statement_title(ln) == statement]
        title = " ".join(named[-1].split()) if named else title
    return TypedTable(title or "table", raw.page, table_unit, columns, typed_rows,
                      section=" ".join(str(raw.context or "").split())[:300],
                      statement=statement, scale=scale, currency=header_currency, bbox=raw.bbox, row_meta=metas)


def sql_table_name(title: str, doc_id: str, version: int, index: int) -> str:
    slug = identifier(title, "table")[:24].strip("_") or "table"
    return f"t_{slug}_{doc_id[:8]}_v{version}_{index}"


def create_sql_table(conn: sa.Connection, name: str, table: TypedTable) -> None:
    """Create and fill the physical table inside the caller's transaction."""
    md = sa.MetaData()
    cols = [sa.Column("row_num", sa.Integer, primary_key=True)]
    cols += [sa.Column(c.name, sa.Float if c.sql_type == "REAL" else sa.Text) for c in table.columns]
    cols += [sa.Column("section", sa.Text), sa.Column("is_total", sa.Integer)]
    t = sa.Table(name, md, *cols)
    t.create(conn)
    metas = table.row_meta if len(table.row_meta) == len(table.rows) else [None] * len(table.rows)
    if table.rows:
        conn.execute(t.insert(), [
            {"row_num": i + 1, **{c.name: v for c, v in zip(table.columns, row)},
             "section": (m.parent or None) if m else None, "is_total": int(m.is_total) if m else 0}
            for i, (row, m) in enumerate(zip(table.rows, metas))
        ])


def drop_sql_table(conn: sa.Connection, name: str) -> None:
    sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
