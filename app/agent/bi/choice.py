"""Which of the line items a question lists is largest / smallest: "Among operations, investing, and financing
activities, which brought in the most (or lost the least) cash flow in FY2023?", "Which of cost of sales, SG&A
and R&D was the largest expense in 2019?". Each item is grounded in one filing's statements at the period asked
(``bi.operands``), as a metric's operands are; the answer names the item and lists every value.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from app.agent.bi.format import col_name
from app.agent.bi.metric_program import aliases, cell_ref, leaf_line, newest_period, select_sql
from app.agent.bi.operands import Leaf, LeafProgram, ground
from app.agent.bi.periods import Period, strip_periods
from app.agent.bi.program import fmt
from app.agent.bi.table import TableView
from app.agent.bi.units import restated
from app.agent.vocabulary import phrase_pattern, word_lists

_LIST = re.compile(r"^\s*(?:among|of|between|out of)\s+(?:the\s+)?(?P<items>[^?]+?),\s*(?P<rest>(?:which|what)\b.*)$"
                   r"|\bwhich (?:one )?of (?:the )?(?P<items2>[^?]+?)\s+(?P<rest2>(?:had|has|have|was|were|is|are|"
                   r"brought|generated|showed|saw|reported|contributed|made|produced|used)\b.*)$", re.I)
# the superlatives are data (app/data/vocabulary.yaml `metric_words`: choice_most, choice_least, choice_measure)
_W = word_lists("metric_words", ("choice_most", "choice_least", "choice_measure"))
_MOST = re.compile(phrase_pattern(_W["choice_most"], hyphens=False), re.I)
_LEAST = re.compile(phrase_pattern(_W["choice_least"], hyphens=False), re.I)
# what is compared: the words after the superlative ("the most (or lost the least) cash flow for ...": cash flow)
_MEASURE = re.compile(rf"{phrase_pattern(_W['choice_measure'], hyphens=False)}\s+([a-z][a-z &-]{{0,40}}?)"
                      r"(?=\s+(?:for|in|during|of|at|among|between|from|on)\b|\s*[?.,]|\s*$)", re.I)
_SHOWN = {"cash from operations": "operating activities", "cash from investing": "investing activities",
          "cash from financing": "financing activities"}
_FLOWS = {"operat": "cash from operations", "invest": "cash from investing", "financ": "cash from financing"}


def choice_items(question: str) -> Optional[tuple[list[str], str, str]]:
    """(items, max|min, the rest of the question) when the question asks which of listed items is largest."""
    q = " ".join(question.split())
    m = _LIST.search(q)
    if not m:
        return None
    items_text, rest = (m["items"], m["rest"]) if m["items"] else (m["items2"], m["rest2"])
    parts = [p.strip(" ,") for p in re.split(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", items_text) if p.strip(" ,")]
    if len(parts) < 2 or any(len(p.split()) > 8 for p in parts):
        return None
    most, least = _MOST.search(rest), _LEAST.search(rest)
    if not most and not least:
        return None
    op = "max" if most and (not least or most.start() < least.start()) else "min"
    if re.search(r"\bcash ?flows?\b", q, re.I):  # "operations, investing, and financing activities"
        named = [next((c for k, c in _FLOWS.items() if k in p.lower()), None) for p in parts]
        if all(named):
            parts = named
    return parts, op, rest


@dataclass
class ChoiceProgram(LeafProgram):
    items: list[str]
    leaves: list[Leaf]  # one per item, in the question's order
    choose: str  # max | min
    target: Period
    measure: str = ""  # what the question compares ("cash flow")

    @property
    def all_leaves(self) -> list[Leaf]:
        return self.leaves

    def evaluate(self) -> Optional[float]:
        v = [leaf.cell.value for leaf in self.leaves]
        return None if any(x is None for x in v) else (max if self.choose == "max" else min)(v)

    def sql(self) -> str:
        alias = aliases(self.leaves)
        refs = [cell_ref(Leaf(lf.item, lf.view, lf.row, lf.col, lf.cell, False), alias) for lf in self.leaves]
        return select_sql([(f"{self.choose.upper()}({', '.join(refs)})", "value")], self.leaves, alias)

    def answer(self, value: float, sql: str, asked_scale: Optional[str] = None) -> str:
        pick = next(i for i, lf in enumerate(self.leaves) if lf.cell.value == value)
        unit = self.leaves[0].col.unit or self.leaves[0].view.unit or ""
        word = "the most" if self.choose == "max" else "the least"
        ranked = sorted(range(len(self.leaves)), key=lambda i: self.leaves[i].cell.value, reverse=self.choose == "max")
        listing = "; ".join(f"{self.items[i]}: {self.leaves[i].row.label} {fmt(self.leaves[i].cell.value)}"
                            for i in ranked)
        again = restated(value, unit, asked_scale)
        when = col_name(self.leaves[pick])
        what = f" {self.measure}" if self.measure else ""
        head = (f"{self.items[pick][:1].upper()}{self.items[pick][1:]} ({self.leaves[pick].row.label}) had {word}{what}"
                f" in {when}: {listing}{f' ({unit})' if unit else ''}; {self.choose} = {fmt(value)}{again}.")
        lines = [head, "Rows used: " + "; ".join(leaf_line(lf) for lf in self.leaves) + "."]
        lines.append("Source: " + ", ".join(f'table "{t.title}" ({t.filename}, page {t.page})' for t in self.tables) + ".")
        lines.append(f"SQL: {sql}")
        if self.doubts:
            lines.append("Not verified: " + "; ".join(self.doubts) + ".")
        return "\n".join(lines)


def plan_choice(question: str, views_by_doc: dict[str, list[TableView]], periods: list[Period],
                statements: list[str], encode: Optional[Callable] = None) -> tuple[Optional[ChoiceProgram], str]:
    found = choice_items(question)
    if found is None:
        return None, "not a choice among listed items"
    items, op, rest = found
    m = _MEASURE.search(re.sub(r"\([^)]*\)", " ", rest))
    items = [strip_periods(i) or i for i in items]
    best, reasons = None, []
    for doc_id, views in views_by_doc.items():
        target = max(periods, key=lambda p: (p.year, p.quarter or 0)) if periods else newest_period(views)
        if target is None:
            continue
        leaves, missing = [], []
        for item in items:
            got, why = ground(views, item, [target], statements, encode)
            if got is None:
                missing.append(why)
            else:
                leaves.append(got[0])
        if missing:
            reasons.append("; ".join(missing))
            continue
        prog = ChoiceProgram([_SHOWN.get(i, i) for i in items], leaves, op, target, m.group(1).strip() if m else "")
        if not periods:
            prog.doubts.append(f"the question names no period; the newest ({target.label()}) was taken")
        newest = newest_period(views)
        rank = (prog.grounded, newest is not None and newest.year == target.year)
        if best is None or rank > best[0]:
            best = (rank, prog)
    if best is None:
        return None, "Not verified: " + (reasons[0] if reasons else "no statement table gives the items")
    return best[1], "ok"
