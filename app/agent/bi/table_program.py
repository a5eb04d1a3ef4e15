"""One table's program for a parsed question: its rows matched, its period columns found, the cells each
operation reads (lookup, change, average, sum, ratio, max / min, count), then the program's confidence and its
grounding doubts. The planner (``bi.planner``) builds one for each candidate table and keeps the best.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional

from app.agent.bi.count import count_program
from app.agent.bi.ground import (RowMatch, best_col, col_for_period, distinct_rows, expanded_words, latest_cols,
                                 match_cols, match_rows, period_order, word_positions)
from app.agent.bi.grounding import GENERIC, WHOLE_COLUMNS, grounding_doubts
from app.agent.bi.periods import Period, without_quarters
from app.agent.bi.program import Operand, Program
from app.agent.bi.question import ParsedQuestion, entity_text, op_besides, operations_asked, ranks_periods
from app.agent.bi.table import Col, Row, TableView
from app.agent.text import content_words
from app.agent.vocabulary import asked_direction

ROW_FLOOR = 0.45  # a row named by the question at least this well


def build_program(view: TableView, pq: ParsedQuestion, encode=None, boost: float = 0.0) -> Optional[Program]:
    """``boost``: added to every row match of a table of the statement the question names as its source, where
    a label naming more than the question ("Merchandise inventories" for "inventories") is still the row meant."""
    pq = _quarter_year(view, pq)
    matches = match_rows(view, pq, encode)
    if boost:
        matches = [replace(m, score=m.score + boost) if m.matched else m for m in matches]
    if not matches:
        return None
    named = [m for m in matches if m.matched and m.whole]
    label = max(named, key=lambda m: m.score).row.label if named else ""
    read = op_besides(pq, label) if label else pq  # the op word is the named row's own ("Total operating expense")
    label, pq = (label, read) if read is not pq else ("", pq)
    cols_named: list[Col] = []
    for p in pq.periods:
        c = col_for_period(view, p, pq)
        if c is None:
            if view.period_cols:
                return None  # the table does not have the period asked for
            continue
        if c not in cols_named:
            cols_named.append(c)
    if pq.extreme_of and (ranked := _section_rows(view, pq.extreme_of)):  # "the largest liability"
        pq = replace(pq, op=pq.extreme_op)
        col = cols_named[0] if cols_named else _default_cols(view, pq, 1)[0]
        prog = Program(pq.op, view, _ops(ranked, [col]))
        return _finish(view, pq, matches, prog)
    maker = {"lookup": _lookup, "difference": _change, "pct_change": _change, "average": _average,
             "sum": _sum, "ratio": _ratio, "max": _extreme, "min": _extreme, "count": _count}[pq.op]
    prog = maker(view, pq, matches, cols_named)
    if prog is None or not prog.operands:
        return None
    prog.op_label = label
    return _finish(view, pq, matches, prog)


def _quarter_year(view: TableView, pq: ParsedQuestion) -> ParsedQuestion:
    """A quarter named without its year ("Services revenue in Q3") is that quarter of the one year whose quarter
    columns the table holds (of the year the question names, if it names one); otherwise left unplaced."""
    qs = pq.quarters
    if not qs or any(p.quarter for p in pq.periods):
        return pq
    years = {c.period.year for c in view.period_cols if c.period.quarter in qs}
    if pq.periods:
        years &= {p.year for p in pq.periods}
    if len(years) != 1:
        return pq
    year = years.pop()
    return replace(pq, periods=[Period(year, q) for q in qs] + [p for p in pq.periods if p.year != year],
                   phrase=without_quarters(pq.phrase))


def _finish(view: TableView, pq: ParsedQuestion, matches: list[RowMatch], prog: Program) -> Optional[Program]:
    """The program's confidence, grounding doubts and whether its rows are named whole."""
    if not prog.operands or (any(o.cell.value is None for o in prog.operands)
                             and prog.op not in ("lookup", "max", "min")):
        return None
    prog.confidence = _confidence(view, pq, matches, prog)
    prog.doubts = grounding_doubts(view, pq, matches, prog)
    whole = {id(m.row) for m in matches if m.whole}
    prog.whole = len({id(o.row) for o in prog.operands}) > 2 or all(id(o.row) in whole for o in prog.operands)
    return prog


def _section_rows(view: TableView, kind: str) -> list[Row]:
    """The rows (totals out) of the section a statement names by ``kind`` ("Liabilities" for "liability"); of
    several, the one named most nearly by the kind alone ("Liabilities" before "Liabilities and equity")."""
    want = content_words(kind)
    if not want:
        return []
    sections: dict[str, list[Row]] = {}
    for r in view.rows:
        if r.section and want <= content_words(r.section) and not r.is_total:
            sections.setdefault(r.section, []).append(r)
    named = sorted((len(content_words(name)), i, rows) for i, (name, rows) in enumerate(sections.items())
                   if len(rows) >= 2)
    return named[0][2] if named else []


def _confidence(view: TableView, pq: ParsedQuestion, matches: list[RowMatch], prog: Program) -> float:
    used = {id(o.row) for o in prog.operands}
    scores = [m.score for m in matches if id(m.row) in used]
    row_score = min(scores) if scores else 0.0
    if len(used) > 2 and (pq.breakdown or prog.op in ("max", "min", "count")):  # over all rows: the column decides
        row_score = max(row_score, 0.7)
    texts = [t for o in prog.operands for t in (o.row.text, o.col.title)]
    explained = expanded_words(" ; ".join(texts + [view.info.title or "", getattr(view.info, "section", "") or ""]))
    want = content_words(entity_text(pq.phrase))
    covered = len(want & explained) / max(1, len(want)) if want else 0.5
    return 0.6 * min(1.0, row_score) + 0.4 * covered


def _ops(rows: list[Row], cols: list[Col]) -> list[Operand]:
    return [Operand(r, c, r.cells[c.key]) for r in rows for c in cols if c.key in r.cells]


def _default_cols(view: TableView, pq: ParsedQuestion, n: Optional[int]) -> list[Col]:
    whole = [c for s, c in match_cols(view, pq) if s >= 1.0 and c.period is None
             and (content_words(c.title) - GENERIC or content_words(c.title) <= WHOLE_COLUMNS)]
    if whole and not pq.periods and pq.op in ("lookup", "difference"):  # "as reported", no period asked (in a
        # ratio or a change a named column may be one side of it: "of more than 5 years in the total")
        return whole[: n or 99]
    if view.period_cols:
        return latest_cols(view, pq, n or 99)
    named = [c for s, c in match_cols(view, pq) if s >= 0.5]
    if named:
        return named[: n or 99]
    return view.cols[: n or 99]


def _lookup(view, pq, matches, cols_named):
    if pq.breakdown and view.period_cols and re.search(r"\b(each|by|per|every) (year|period|quarter)", pq.text, re.I):
        top = distinct_rows(matches, 1, ROW_FLOOR)
        return Program("lookup", view, _ops([top[0].row], view.period_cols)) if top else None
    if pq.breakdown:
        rows = [r for r in view.rows if not r.is_total] or view.rows
        cols = cols_named or [best_col(view.period_cols or view.cols, pq)]
        return Program("lookup", view, _ops(rows, cols))
    top = distinct_rows(matches, 2 if " and " in pq.phrase else 1, ROW_FLOOR)
    if not top:
        return None
    if len(top) == 2 and not joined_items(pq.phrase, top[0], top[1]):
        top = top[:1]
    cols = (_span(view, cols_named, pq) if pq.span and len(cols_named) >= 2 else cols_named) \
        or _default_cols(view, pq, None)
    return Program("lookup", view, _ops([m.row for m in sorted(top, key=lambda m: m.pos)], cols))


def joined_items(phrase: str, a: RowMatch, b: RowMatch) -> bool:
    """Two rows are two items asked when an "and" stands between the words that name one and those that name
    the other ("license revenue and subscription revenue"); "work-in-process inventory in 2018 and 2019" names
    one item, whose last word also names the table's total row."""
    pos = word_positions(phrase)
    own_a = [pos[w] for w in a.matched - b.matched if w in pos]
    own_b = [pos[w] for w in b.matched - a.matched if w in pos]
    if not own_a or not own_b:
        return True  # nothing to place: as before
    (lo, hi) = (own_a, own_b) if min(own_a) < min(own_b) else (own_b, own_a)
    return any(max(lo) < m.start() < min(hi) for m in re.finditer(r"\band\b", phrase, re.I))


def _count(view, pq, matches, cols_named):
    return count_program(view, pq, matches, cols_named, ROW_FLOOR)


def _previous(view: TableView, col: Col, pq: ParsedQuestion) -> Optional[Col]:
    older = [c for c in view.period_cols if (c.period.year, c.period.quarter or 0) < (col.period.year,
                                                                                    col.period.quarter or 0)
             and bool(c.period.quarter) == bool(col.period.quarter)]
    if not older:
        return None
    newest = max((c.period.year, c.period.quarter or 0) for c in older)
    return best_col([c for c in older if (c.period.year, c.period.quarter or 0) == newest], pq)


def _two_rows(matches, pq) -> list[RowMatch]:
    two = distinct_rows(matches, 2, ROW_FLOOR)
    return sorted(two, key=lambda m: m.pos) if len(two) == 2 else []


def _change(view, pq, matches, cols_named):
    op = pq.op
    if len(cols_named) >= 2 and view.period_cols:
        new, old = period_order(cols_named)[:2]
        return Program(op, view, _ops([matches[0].row], [new, old]))
    two = _two_rows(matches, pq)
    if two and (len(cols_named) <= 1):
        col = cols_named[0] if cols_named else _default_cols(view, pq, 1)[0]
        return Program(op, view, [Operand(m.row, col, m.row.cells[col.key]) for m in two if col.key in m.row.cells])
    named = [c for s, c in match_cols(view, pq) if s >= 0.5 and c.period is None]
    if len(named) >= 2:
        return Program(op, view, _ops([matches[0].row], named[:2]))
    if cols_named and view.period_cols:
        prev = _previous(view, cols_named[0], pq)
        if prev is None:
            return None
        return Program(op, view, _ops([matches[0].row], [cols_named[0], prev]))
    cols = latest_cols(view, pq, 2) if view.period_cols else []
    if len(cols) < 2:
        return None
    return Program(op, view, _ops([matches[0].row], cols))


def _span(view: TableView, cols_named: list[Col], pq) -> list[Col]:
    """Every period column from the first to the last named (one per period)."""
    years = [c.period.year for c in cols_named]
    inside = [c for c in latest_cols(view, pq, 99) if min(years) <= c.period.year <= max(years)]
    return inside if len(inside) >= len(cols_named) else cols_named


def _average(view, pq, matches, cols_named):
    row = matches[0].row
    if len(cols_named) >= 2 and pq.span:
        cols = _span(view, cols_named, pq)
    elif len(cols_named) >= 2:
        cols = cols_named
    elif len(cols_named) == 1 and view.period_cols:  # "the 2019 average X": 2019 and the year before
        prev = _previous(view, cols_named[0], pq)
        cols = [cols_named[0]] + ([prev] if prev else [])
    elif view.period_cols:
        cols = latest_cols(view, pq, 99)
    else:
        two = _two_rows(matches, pq)
        col = _default_cols(view, pq, 1)[0]
        if two:
            return Program("average", view, [Operand(m.row, col, m.row.cells[col.key]) for m in two
                                              if col.key in m.row.cells])
        cols = [c for c in view.cols if row.cells.get(c.key) and row.cells[c.key].value is not None]
    cols = [c for c in cols if c.key in row.cells and row.cells[c.key].value is not None]
    if len(cols) < 2:
        return None
    return Program("average", view, _ops([row], cols))


def _sum(view, pq, matches, cols_named):
    if len(cols_named) >= 2:
        return Program("sum", view, _ops([matches[0].row], _span(view, cols_named, pq) if pq.span else cols_named))
    two = _two_rows(matches, pq)
    if not two:
        return None
    col = cols_named[0] if cols_named else _default_cols(view, pq, 1)[0]
    return Program("sum", view, [Operand(m.row, col, m.row.cells[col.key]) for m in two if col.key in m.row.cells])


def _ratio(view, pq, matches, cols_named):
    col = cols_named[0] if cols_named else _default_cols(view, pq, 1)[0]
    two = _two_rows(matches, pq)
    if two:
        a, b = two
        if pq.reversed_ratio:
            a, b = b, a
        # "the share of the total that is X": a row named a total divides (a subtotal such as net sales,
        # marked total by the table reader, is not taken for one)
        if a.row.is_total and not b.row.is_total and "total" in a.row.label.lower() and pq.wants_total:
            a, b = b, a
        rows = [a.row, b.row]
    else:
        if not matches or matches[0].score < ROW_FLOOR:
            return None
        totals = [r for r in view.rows if r.is_total and r is not matches[0].row]
        if not totals or not pq.wants_total:
            return None
        rows = [matches[0].row, totals[-1]]
    ops = [Operand(r, col, r.cells[col.key]) for r in rows if col.key in r.cells]
    return Program("ratio", view, ops, percent=pq.percent) if len(ops) == 2 else None


def _extreme(view, pq, matches, cols_named):
    if view.period_cols and ranks_periods(pq.text):
        if not matches or matches[0].score < ROW_FLOOR:
            return None
        cols = cols_named or latest_cols(view, pq, 99)
        return Program(pq.op, view, _ops([matches[0].row], cols))
    rows = [r for r in view.rows if not r.is_total]
    col = cols_named[0] if cols_named else _default_cols(view, pq, 1)[0]
    if "change" in operations_asked(pq.text):  # "which region had the biggest drop": ranked by their change
        change = _change_col(view, col)
        if change is None:
            return None
        op = pq.op
        if asked_direction(pq.text) == "down":  # the biggest drop is the lowest change
            op = "min" if op == "max" else "max"
        return Program(op, view, _ops(rows, [change]), ranked_by="pct_change" if change.percent else "change")
    return Program(pq.op, view, _ops(rows, [col]))


def _change_col(view, col):
    """The change column printed for ``col``'s period: the first column after it whose title says change or
    growth and names no period of its own, read as the change to ``col``'s period."""
    cols = view.cols
    start = next((i for i, c in enumerate(cols) if c is col), 0)
    for c in cols[start + 1:]:
        if c.period is None and operations_asked(c.title) & {"change"}:
            return replace(c, period=col.period)
    return None
