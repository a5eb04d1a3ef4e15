"""Count questions over a table: "How many years did net income exceed $30,000 thousand?" (the periods of one
row meeting a condition) and "How many expense items in 2019 were above $50 million?" (the rows of one period
column meeting it). The threshold is compared with the values as the table prints them (the question states
it in the table's unit, as analysts do); the count is computed in SQL by the program (``Program.cond``).
"""
from __future__ import annotations

import re
from typing import Optional

from app.agent.bi.program import Operand, Program

COND = re.compile(r"\b(exceed(?:ed|s|ing)?|more than|greater than|above|higher than|over|at least|below|less than|"
                  r"lower than|under|fewer than|smaller than|at most)\s+(?:(?:US)?\$|€|£)?\s*(-?[\d,]*\.?\d+)\s*"
                  r"(thousands?|millions?|billions?|[mbk]n?\b|%|percent)?", re.I)
SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "b": 1e9, "bn": 1e9}
CMP = {"at least": ">=", "at most": "<=", "below": "<", "less than": "<", "lower than": "<", "under": "<",
       "fewer than": "<", "smaller than": "<"}
PERIOD_UNITS = re.compile(r"\bhow many (?:of the |fiscal )?(years?|quarters?|periods?|months?)\b", re.I)


def condition(text: str, table_scale: str = "") -> Optional[tuple[str, float]]:
    """(comparison, threshold in the table's scale when both the question and the table state one)."""
    m = COND.search(text)
    if not m:
        return None
    word = m.group(1).lower()
    cmp = CMP.get(word, ">=" if word == "at least" else ">")
    try:
        n = float(m.group(2).replace(",", ""))
    except ValueError:
        return None
    asked, table = _scales(m, table_scale)
    if asked and table:
        n = n * asked / table
    return cmp, n


def _scales(m: re.Match, table_scale: str) -> tuple[Optional[float], Optional[float]]:
    """(the threshold's scale word, the table's unit) as multiples of one; None where not stated."""
    asked = SCALE.get((m.group(3) or "").lower().rstrip("s"))
    return asked, next((v for k, v in SCALE.items() if len(k) > 2 and k in (table_scale or "").lower()), None)


def scale_unknown(text: str, table_scale: str) -> bool:
    """The question states its threshold at a scale ("more than 5 million") and the table states no unit to
    compare it with: 4,804 may be thousands (4.8 million) or millions."""
    m = COND.search(text)
    if not m:
        return False
    asked, table = _scales(m, table_scale)
    return bool(asked) and table is None


def without_condition(phrase: str) -> str:
    """The phrase without the condition ("exceed $200,000 thousand"), so its number names no line item."""
    return COND.sub(" ", phrase)


def count_program(view, pq, matches, cols_named, row_floor: float) -> Optional[Program]:
    cond = condition(pq.text, f"{getattr(view.info, 'scale', '') or ''} {view.unit or ''}")
    if cond is None:
        return None
    if PERIOD_UNITS.search(pq.text):  # periods of one row
        if not view.period_cols or not matches or matches[0].score < row_floor:
            return None
        row = matches[0].row
        cols = [c for c in _one_per_period(view) if c.key in row.cells and row.cells[c.key].value is not None]
        if pq.periods and len(pq.periods) >= 2:  # "from 2017 to 2019, how many of the years ..."
            years = [p.year for p in pq.periods]
            cols = [c for c in cols if min(years) <= c.period.year <= max(years)]
        ops = [Operand(row, c, row.cells[c.key]) for c in cols]
    else:  # rows of one column
        if len(cols_named) != 1 and view.period_cols:
            return None
        col = cols_named[0] if cols_named else (view.cols[0] if len(view.cols) == 1 else None)
        if col is None:
            return None
        rows = [r for r in view.rows if not r.is_total and col.key in r.cells and r.cells[col.key].value is not None]
        ops = [Operand(r, col, r.cells[col.key]) for r in rows]
    if len(ops) < 2:
        return None
    return Program("count", view, ops, cond=cond)


def _one_per_period(view) -> list:
    seen, out = set(), []
    for c in sorted(view.period_cols, key=lambda c: (c.period.year, c.period.quarter or 0), reverse=True):
        key = (c.period.year, c.period.quarter)
        if key not in seen and not c.percent:
            seen.add(key)
            out.append(c)
    return out
