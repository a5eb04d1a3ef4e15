"""Answer text for a BI program: the value with its unit, the formula in words, the rows used, the source
table and the SQL. The computed value is the number right after the last "=" of the text."""
from __future__ import annotations

import re
from typing import Optional

from app.agent.bi.metrics import outflow_item
from app.agent.bi.periods import column_period, strip_periods
from app.agent.bi.program import Operand, Program, fmt
from app.agent.bi.question import label_span
from app.agent.bi.units import restated
from app.agent.vocabulary import asked_direction, asked_sign, asks_yes_no

TITLES = {"difference": "Change", "pct_change": "Percentage change", "average": "Average", "sum": "Total",
          "ratio": "Ratio", "count": "Count"}


def column_title(table, name: str) -> str:
    col = next((c for c in table.columns if c.name == name), None)
    p = column_period(name, col.label if col else "")
    return p.label() if p else ((col.label if col and col.label else name))


def col_name(o: Operand) -> str:
    return o.col.period.label() if o.col.period else o.col.title


def _unit(prog: Program) -> str:
    if prog.op == "pct_change" or (prog.op == "ratio" and prog.percent):
        return ""
    if prog.op in ("ratio", "count"):
        return ""
    col = prog.operands[0].col
    if col.percent or col.unit == "%":
        return "percentage points" if prog.op == "difference" else "%"
    return col.unit or prog.view.unit or ""


def _subject(prog: Program) -> str:
    ops = prog.operands
    if prog.single_row:
        periods = [col_name(o) for o in ops]
        if prog.op in ("difference", "pct_change"):
            return f"{ops[0].row.label}, {periods[1]} to {periods[0]}"
        return f"{ops[0].row.label}, {', '.join(periods)}"
    names = [o.row.label for o in ops]
    when = col_name(ops[0]) if len({id(o.col) for o in ops}) == 1 else ""
    joined = {"ratio": " to ", "difference": " minus ", "pct_change": " vs "}.get(prog.op, " and ")
    return joined.join(names) + (f", {when}" if when else "")


def rows_used(prog: Program) -> str:
    return "; ".join(f"{o.row.text} ({col_name(o)}) {fmt(o.cell.value)}" for o in prog.operands)


def source(prog: Program) -> str:
    t = prog.table
    return f'table "{t.title}" ({t.filename}, page {t.page})'


def answer_text(prog: Program, value: Optional[float], sql: str, asked: Optional[str] = None,
                question: str = "") -> str:
    """``asked``: the scale the question wants ("million"); a value in another scale is restated in it.
    ``question``: a row it names as printed ("What was the interest expense in 2018?") is stated as printed."""
    unit = _unit(prog)
    unit_s = f" ({unit})" if unit else ""
    tail = f"\nSource: {source(prog)}.\nSQL: {sql}"
    if prog.op in TITLES:
        again = restated(value, unit, asked) if prog.op in ("difference", "sum", "average") else ""
        head = f"{TITLES[prog.op]} of {_subject(prog)}: {prog.formula(value)}{unit_s}{again}."
        return head + f"\nRows used: {rows_used(prog)}." + tail
    if prog.op in ("max", "min"):
        vals = [o for o in prog.operands if isinstance(o.cell.value, (int, float))]
        if not vals:
            return "The table has no values for this." + tail
        pick = (max if prog.op == "max" else min)(vals, key=lambda o: o.cell.value)
        word = "highest" if prog.op == "max" else "lowest"
        if prog.single_row:
            name = col_name(pick)
            what = pick.row.label
        else:
            name = pick.row.label
            what = col_name(pick)
        ranked = sorted(vals, key=lambda o: o.cell.value, reverse=prog.op == "max")
        listing = "; ".join(f"{col_name(o) if prog.single_row else o.row.label} {fmt(o.cell.value)}" for o in ranked)
        return f"{name} ({word} {what}: {listing}){unit_s}." + tail
    by_row: dict = {}
    if prog.view.shape == "long" and not (len(prog.operands) == 1):  # one line per period, as stored
        for o in prog.operands:
            by_row.setdefault(id(o.col), []).append(o)
        parts = [f"{col_name(ops[0])}: " + ", ".join(f"{o.row.label} {fmt(o.cell.value)}" for o in ops)
                 for ops in by_row.values()]
        return "; ".join(parts) + unit_s + "." + tail
    for o in prog.operands:
        by_row.setdefault(id(o.row), []).append(o)
    parts = []
    for ops in by_row.values():
        if len(ops) == 1 and len(by_row) == 1:
            cell = ops[0].cell.value
            item = outflow_item(ops[0].row.label) if isinstance(cell, (int, float)) and cell < 0 \
                and label_span(question, ops[0].row.label) is None else None  # a row named as printed: as printed
            value = -cell if item else cell  # capital expenditure printed as an outflow: its amount is the magnitude
            note = f" ({item}, printed as an outflow)" if item else ""
            again = restated(value, unit, asked)
            parts.append(f"{ops[0].row.label}, {col_name(ops[0])}: {fmt(value)}{unit_s}{again}{note}")
            return "; ".join(parts) + "." + tail
        else:
            parts.append(f"{ops[0].row.label}: " + ", ".join(f"{col_name(o)} {fmt(o.cell.value)}" for o in ops))
    return "; ".join(parts) + unit_s + "." + tail


def lookup_text(columns: list[str], rows: list[list], unit: str) -> str:
    """A model-written query's result as text."""
    if not rows:
        return "The query returned no rows."
    parts = []
    for r in rows[:20]:
        if len(r) > 1:
            parts.append(f"{fmt(r[0])}: " + ", ".join(f"{columns[i]} {fmt(v)}" for i, v in enumerate(r[1:], 1)))
        else:
            parts.append(fmt(r[0]))
    return "; ".join(parts) + (f" ({unit})" if unit else "") + "."


def yes_no(question: str, prog: Program, value: Optional[float]) -> str:
    """"Was there any drop in cash between FY2023 and Q2 of FY2024?" answered first with yes / no and the size of
    the change ("Yes, a decline of 781 (41.7%) from FY 2023 to Q2 2024. "); "" for other questions. The yes/no
    opening and the way asked are the vocabulary's (``asks_yes_no``, ``asked_direction``); a table row has no sense
    of better or worse, so "improved" asks whether it went up and "deteriorated" is not answered here. A yes/no
    question a looked-up figure answers ("Has it paid dividends in FY2022?") opens with yes / no (``_holds``)."""
    asked = asks_yes_no(question or "")
    way = asked_direction(question or "") if asked else None
    if asked and way is None and prog.op == "lookup" and len(prog.operands) == 1:
        cell = prog.operands[0].cell.value
        return _holds(question, cell) if isinstance(cell, (int, float)) else ""
    if way in (None, "worse") or prog.op not in ("difference", "pct_change") or not prog.single_row or value is None:
        return ""
    new, old = prog.operands[0].cell.value, prog.operands[1].cell.value
    if new is None or old is None:
        return ""
    change = new - old
    moved = change < 0 if way == "down" else (change > 0 if way in ("up", "better") else change != 0)
    word = "a decline" if change < 0 else ("an increase" if change > 0 else "no change")
    pct = f" ({abs(change) * 100.0 / abs(old):.1f}%)" if old else ""
    size = f" of {fmt(abs(change))}{pct}" if change else ""
    return (f"{'Yes' if moved else 'No'}, there was {word}{size} between {col_name(prog.operands[1])} and "
            f"{col_name(prog.operands[0])}. ")


def _holds(question: str, value: float) -> str:
    """A yes/no question answered by one figure: "Does it have positive working capital?" by its sign, "Has it
    paid dividends in FY2022?" by the figure being there and not zero; "" where the question states a figure of
    its own to compare with ("Is revenue above 10 billion?"), which one looked-up figure does not answer."""
    sign = asked_sign(question)
    if sign is None and re.search(r"\d", strip_periods(question.split("?")[0])):
        return ""
    held = value > 0 if sign == "positive" else (value < 0 if sign == "negative" else value != 0)
    return f"{'Yes' if held else 'No'}: "
