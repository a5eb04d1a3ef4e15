"""A table as the planner sees it: line items (rows) x periods or categories (columns), every cell mapped
back to its physical SQL cell (row_num, column).

Two physical shapes give the same view: *wide* tables (a label column of line items, one numeric column per
period) map directly; *long* tables (a period column and one numeric column per metric, ``year | revenue``)
are transposed, so a metric is a row and each period a column. Section-header rows (a label and no values,
e.g. "Current assets:") become the ``section`` of the rows below them; total rows are marked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from app.agent.bi.periods import PERIOD_COLUMN_NAMES, Period, column_period, value_period
from ingest.text_glue import unglue

# a header cell inside the body: a period or a unit/change heading ("2022 $ million", "currency ∆%", "Year ended")
_HEADER_CELL = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)|∆|\bchange\b|%\s*$|\$\s*(?:million|thousand|billion)|"
                          r"\b(?:months|years?) ended\b", re.I)
TOTAL = re.compile(r"^\s*(total|net total|grand total|sum)\b|\btotals?\s*$", re.I)


@dataclass
class Cell:
    row_num: int
    column: str  # the SQL column name
    value: Optional[float]


@dataclass
class Col:
    key: str
    title: str  # as printed
    period: Optional[Period]
    unit: str = ""
    percent: bool = False
    end: str = ""  # the period's end date as the catalogue read it (ISO), "" unknown
    months: int = 0  # 3, 6, 9, 12; 0 an instant ("as of") or unknown


@dataclass
class Row:
    key: str
    label: str
    section: str = ""
    is_total: bool = False
    cells: dict[str, Cell] = field(default_factory=dict)  # Col.key -> Cell
    reheaded: str = ""  # a header row inside the table above this row ("2022 $ million", "currency ∆%"): the
    # columns' headers may not be this row's (a second table read as part of the first)

    @property
    def text(self) -> str:
        return f"{self.section}: {self.label}" if self.section else self.label


@dataclass
class TableView:
    info: Any  # ingest TableInfo
    shape: str  # wide | long
    label_column: Optional[str]  # wide: the line-item column; long: the period column
    rows: list[Row]
    cols: list[Col]
    unit: str = ""
    misaligned: str = ""  # why the columns' headers may not be their values' (numbers left in a text column)
    description: str = ""  # the table as one text (``bi.catalog.describe``), made once per view

    def col(self, key: str) -> Col:
        return next(c for c in self.cols if c.key == key)

    @property
    def period_cols(self) -> list[Col]:
        return [c for c in self.cols if c.period is not None]


def _meta(obj, name, default=None):
    return getattr(obj, name, default) if obj is not None else default


def _col_period(c) -> Optional[Period]:
    fy = _meta(c, "fiscal_year", 0)  # the catalogue's own reading (docs/contracts.md "Table catalogue")
    if fy:
        q = _meta(c, "fiscal_quarter", 0) or None
        return Period(int(fy), q, str(_meta(c, "period", "")).upper().startswith("FY"))
    return column_period(c.name, c.label)


def _is_period_column(c, values: list) -> bool:
    filled = [v for v in values if v not in (None, "")]
    if not filled:
        return False
    periods = [value_period(v) for v in filled]
    named = c.name.lower() in PERIOD_COLUMN_NAMES or bool(re.fullmatch(r"(fiscal )?(year|period|quarter)s?",
                                                                      (c.label or "").strip().lower()))
    share = sum(p is not None for p in periods) / len(filled)
    return share == 1.0 and (named or len(filled) >= 2) and len(set(periods)) == len(periods)


def load_view(info, rows: list[list], columns: list[str]) -> Optional[TableView]:
    """``rows``/``columns``: ``SELECT * FROM table ORDER BY row_num``."""
    by_name = {c.name: c for c in info.columns}
    idx = {name: i for i, name in enumerate(columns)}
    if "row_num" not in idx:
        return None
    data_cols = [by_name[n] for n in columns if n in by_name]
    values = {c.name: [r[idx[c.name]] for r in rows] for c in data_cols}
    period_col = next((c for c in data_cols if _is_period_column(c, values[c.name])), None)
    numeric = [c for c in data_cols if c.sql_type.upper() != "TEXT" and c is not period_col]
    text_cols = [c for c in data_cols if c.sql_type.upper() == "TEXT" and c is not period_col]
    named_label = _meta(info, "label_column", "")
    text_cols.sort(key=lambda c: (c.name != named_label, _meta(c, "role", "") != "label"))
    row_meta = {r.row_num: r for r in (_meta(info, "rows", None) or [])}
    unit = info.unit or ""
    if not numeric:
        return None
    if period_col is not None and not any(_col_period(c) for c in numeric):
        return _long_view(info, rows, idx, period_col, numeric, unit)
    label_col = text_cols[0].name if text_cols else None
    cols = [Col(c.name, c.label or c.name, _col_period(c), c.unit or unit, c.unit == "%" or "%" in (c.label or ""),
                str(_meta(c, "period_end", "") or ""), int(_meta(c, "period_months", 0) or 0)) for c in numeric]
    # text columns without a header of their own ("col_2"): where a misread table leaves numbers and headers
    others = [c for c in text_cols if c.name != label_col and not (c.label or "").strip()]
    out, section, reheaded = [], "", ""
    for r in rows:
        label = unglue(str(r[idx[label_col]]).strip()) if label_col and r[idx[label_col]] is not None else ""
        meta = row_meta.get(r[idx["row_num"]])
        row_section = (meta.parent if meta is not None else "") or _meta_cell(r, idx, "section")
        cells = {c.name: Cell(r[idx["row_num"]], c.name, _num(r[idx[c.name]])) for c in numeric}
        if all(cell.value is None for cell in cells.values()):
            heads = [str(r[idx[c.name]]) for c in others if _HEADER_CELL.search(str(r[idx[c.name]] or ""))]
            if heads:
                reheaded = heads[0]
            if label:
                section = label.rstrip(":").strip()
            continue
        if not label:
            continue
        total = meta.is_total if meta is not None else _meta_cell(r, idx, "is_total")
        is_total = bool(total) if total is not None else bool(TOTAL.search(label))
        out.append(Row(str(r[idx["row_num"]]), label, row_section or (section if not is_total else section),
                       is_total, cells, reheaded))
    return TableView(info, "wide", label_col, out, cols, unit, _misaligned(others, rows, idx))


_NUMBER_TEXT = re.compile(r"^\(?[-−]?\$?\s*\d[\d,]*(?:\.\d+)?\)?\s*%?$")


def _misaligned(text_cols: list, rows: list, idx: dict) -> str:
    """A text column without a header (not the labels) that holds mostly numbers: the table reader split the columns
    elsewhere than the headers, so a period column's values may belong to its neighbour (a "∆%" column read as
    "2023")."""
    for c in text_cols:
        filled = [str(r[idx[c.name]]).strip() for r in rows if r[idx[c.name]] not in (None, "")]
        nums = [v for v in filled if _NUMBER_TEXT.match(v)]
        if len(nums) >= 2 and len(nums) * 2 >= len(filled):
            return f"numbers such as {nums[0]!r} stand in a text column ({c.label or c.name})"
    return ""


def _meta_cell(r, idx, name):
    return r[idx[name]] if name in idx else None


def _num(v) -> Optional[float]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _long_view(info, rows, idx, period_col, numeric, unit) -> TableView:
    cols, seen = [], set()
    for r in rows:
        p = value_period(r[idx[period_col.name]])
        if p is None or p in seen:
            continue
        seen.add(p)
        cols.append(Col(str(r[idx["row_num"]]), p.label(), p, unit))
    out = []
    for c in numeric:
        cells = {}
        for r in rows:
            key = str(r[idx["row_num"]])
            if any(col.key == key for col in cols):
                cells[key] = Cell(r[idx["row_num"]], c.name, _num(r[idx[c.name]]))
        label = unglue(c.label) or c.name.replace("_", " ")
        out.append(Row(c.name, label, "", bool(TOTAL.search(label)), cells))
        for col in cols:
            col.unit = c.unit or unit
    return TableView(info, "long", period_col.name, out, cols, unit)
