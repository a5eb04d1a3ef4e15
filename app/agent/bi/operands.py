"""Operands of a metric grounded in a filing's statements: a line item as a formula names it ("COGS",
"average accounts payable") -> the row of a statement table of ONE document that the filing prints for it
("Cost of sales" on the statement of operations) and the period column asked ("2017").

A row is grounded when its label is named by the item (or one of the labels filings use for the standard
item, ``bi.metrics.CONCEPTS``) as the single-table planner's rows are (``bi.grounding``: the label's words
named, or an embedding this close sharing a word); among grounded rows the statement the item is read from
(accounts payable: the balance sheet, not the cash-flow change in payables) wins, then the statements the
question names; the filing's other tables give an operand only where no statement table has a row for it (a
statement's second page read as a table of its own). On the item's own
statement a label that begins or ends with the item's name is that item, qualified ("Depreciation and
amortization of property, equipment and intangibles", "Common stock cash dividends paid"). A column is one of the table's period columns
for the period asked; a table without one cannot give the operand.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from app.agent.bi.ground import TOTAL_WORDS, RowMatch, col_for_period, match_rows
from app.agent.bi.grounding import ROW_DENSE, ROW_LEX, layout_doubts
from app.agent.bi.metrics import CONCEPTS, concept_of
from app.agent.bi.periods import Period
from app.agent.bi.question import ParsedQuestion
from app.agent.bi.table import Cell, Col, Row, TableView
from app.agent.text import content_words

STATEMENT_NAMES = {"balance_sheet": "balance sheet", "income_statement": "income statement",
                   "cash_flow": "cash flow statement", "equity": "statement of equity"}


@dataclass
class Leaf:
    """One grounded cell: the row of a table for the item, at one period."""
    item: str  # the line item as the formula names it
    view: TableView
    row: Row
    col: Col
    cell: Cell
    absolute: bool  # an outflow / expense: its size, whichever sign the statement prints

    @property
    def value(self) -> Optional[float]:
        v = self.cell.value
        return abs(v) if v is not None and self.absolute else v

    @property
    def table(self):
        return self.view.info


def unique_leaves(leaves) -> list[Leaf]:
    """Leaves in order, each cell once (an operand used twice in a formula is one row of the answer)."""
    out, seen = [], set()
    for leaf in leaves:
        key = (leaf.table.sql_name, leaf.cell.row_num, leaf.cell.column)
        if key not in seen:
            seen.add(key)
            out.append(leaf)
    return out


@dataclass(kw_only=True)
class LeafProgram:
    """What the metric, series and choice programs share: their doubts and notes, the planner's confidence and
    kind, grounded when nothing is in doubt, and their tables from ``all_leaves``: ``table`` is the first
    operand's (its page is the first citation), ``tables`` every table read, once each."""
    doubts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    confidence: float = 1.0
    op: str = "metric"
    kind: str = "metric"

    @property
    def grounded(self) -> bool:
        return not self.doubts

    @property
    def table(self):
        return self.all_leaves[0].table

    @property
    def tables(self) -> list:
        return list({leaf.table.sql_name: leaf.table for leaf in self.all_leaves}.values())


@dataclass
class RowChoice:
    view: TableView
    row: Row
    score: float
    grounded: bool
    rank: tuple


def _pq(phrase: str) -> ParsedQuestion:
    return ParsedQuestion(text=phrase, op="lookup", percent=False, phrase=phrase,
                          wants_total=bool(re.search(r"\btotal\b", phrase, re.I)))


def _grounded(m: RowMatch) -> bool:
    return max(m.lex, m.named) >= ROW_LEX or (m.dense >= ROW_DENSE and bool(m.matched))


def row_choices(views: list[TableView], item: str, statements: list[str],
                encode: Optional[Callable] = None) -> list[RowChoice]:
    """Rows of ``views`` that could be ``item``, best first: a filing's statement tables, and only where none of
    them has a row for it the other tables (a statement's second page read as a table of its own, its title a row:
    the balance sheet's liabilities under "Common stock ($0.01 par value ...)")."""
    statement_views = [v for v in views if getattr(v.info, "statement", "")]
    if statement_views and len(statement_views) < len(views):
        out = _row_choices(statement_views, item, statements, encode)
        if any(c.grounded for c in out):
            return out
        rest = _row_choices([v for v in views if not getattr(v.info, "statement", "")], item, statements, encode,
                            unread=True)
        return [c for c in rest if c.grounded] + out
    return _row_choices(views, item, statements, encode)


def _row_choices(views: list[TableView], item: str, statements: list[str],
                 encode: Optional[Callable] = None, unread: bool = False) -> list[RowChoice]:
    """``unread``: tables no statement was recognised in, read as the item's own statement may be (a label that
    begins with the item's name is the item)."""
    concept = concept_of(item)
    phrases = [item] + (CONCEPTS[concept][0] if concept else [])
    home = CONCEPTS[concept][1] if concept else ""
    out = []
    for view in views:
        stmt = getattr(view.info, "statement", "") or ""
        best: dict[int, tuple] = {}
        for phrase in dict.fromkeys(phrases):
            for m in match_rows(view, _pq(phrase), encode):
                if not m.matched:
                    continue
                exact = _norm(m.row.label) == _norm(phrase)
                s = m.score + (0.15 if exact else 0.0)
                # on the statement the item is read from, a label that begins with its name ("Depreciation and
                # amortization of property, equipment and intangibles") is that item, qualified
                lab, ph = _norm(m.row.label), _norm(phrase)
                head = bool(home) and (stmt == home or (unread and not stmt)) and (lab.startswith(ph + " ")
                                                                                  or lab.endswith(" " + ph))
                if concept and len(m.matched) < len(content_words(phrase) - TOTAL_WORDS):
                    continue  # "Total revenue" names only a part of "cost of revenue"
                # a standard item is named by its labels' words (an embedding alone took "Total net sales" for
                # "total cost of sales"); another item may also be named by a close embedding sharing a word
                g = (max(m.lex, m.named) >= ROW_LEX if concept else _grounded(m)) or head
                prev = best.get(id(m.row))
                if prev is None or (g, s) > (prev[1], prev[0]):
                    best[id(m.row)] = (s, g, m.row)
        for s, g, row in best.values():
            rank = (g, bool(home) and stmt == home, stmt in statements, bool(stmt), round(s, 3),
                    -int(getattr(view.info, "page", 0) or 0))
            out.append(RowChoice(view, row, s, g, rank))
    out.sort(key=lambda c: c.rank, reverse=True)
    return out


def _norm(label: str) -> str:
    t = re.sub(r"\((?:loss|losses|gain|gains|income|expense|deficit|benefit)\)", " ", label.lower())
    t = re.sub(r"\(\d+\)|[^a-z& ]+", " ", t)
    return " ".join(t.split())


def cell_at(choice: RowChoice, period: Period, item: str, absolute: bool) -> Optional[Leaf]:
    """The row's cell in the table's column for ``period`` (None: the table has no such column or it is empty)."""
    view, row = choice.view, choice.row
    if not view.period_cols:
        return None
    col = col_for_period(view, period, _pq(item))
    if col is None or col.percent or col.key not in row.cells or row.cells[col.key].value is None:
        return None
    return Leaf(item, view, row, col, row.cells[col.key], absolute)


def ground(views: list[TableView], item: str, periods: list[Period], statements: list[str],
           encode: Optional[Callable] = None, outflow: Optional[bool] = None) -> tuple[Optional[list[Leaf]], str]:
    """``item`` at each of ``periods`` from one row of one table of ``views`` (one document's tables):
    (leaves, "") or (None, why not). ``outflow``: read its size whatever the sign (None: as the catalogue's
    line item ``item`` names is)."""
    concept = concept_of(item)
    absolute = outflow if outflow is not None else (CONCEPTS[concept][2] if concept else False)
    choices = row_choices(views, item, statements, encode)
    for c in choices:
        if not c.grounded:
            break
        if layout_doubts(c.view, [c.row]):
            continue
        leaves = [cell_at(c, p, item, absolute) for p in periods]
        if all(leaf is not None for leaf in leaves):
            return leaves, ""
    if not choices or not choices[0].grounded:
        return None, f"no row of the statements names {item!r}"
    when = ", ".join(p.label() for p in periods)
    return None, f"no statement row for {item!r} has a column for {when}"
