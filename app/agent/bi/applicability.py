"""A metric the company does not report. Analysts ask "If gross margin is not a useful metric for a company like
this, then state that and explain why": a card issuer's income statement prints no cost of goods sold or gross
profit, a bank's no operating income. When the question invites that answer and no statement table of the filings
in scope has a row for one of the line items every formula of the metric needs, that is the answer: the metric is
not how this company's performance is reported, and which rows are missing says why.

Only a row missing from every statement table counts (not a period column missing from a table that has the
row), and only when the filing's text nowhere prints one of the line item's labels either (a balance sheet read as
two tables, the second not recognised as a statement, still prints "Total current liabilities"): a filing whose
statements were not read gives no such answer, and a line item the catalogue knows in parts (``bi.metrics``
``parts``) counts as present when its parts are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from app.agent.bi.formula import Ref, terms
from app.agent.bi.metrics import CONCEPTS, Metric, concept_of
from app.agent.bi.operands import STATEMENT_NAMES, LeafProgram, row_choices
from app.agent.vocabulary import asks_relevance


def unreported_items(metric: Metric, views_by_doc: dict, statements: list[str],
                     encode: Optional[Callable] = None) -> list[str]:
    """The line items of ``metric`` no statement row of any filing in scope names, when every formula of it
    needs one of them; [] when a formula can be grounded or the filings have no statement tables."""
    views = [v for vs in views_by_doc.values() for v in vs if getattr(v.info, "statement", "")]
    if not views:
        return []
    found: dict[str, bool] = {}
    missing: list[str] = []
    for tree in metric.formulas:
        if isinstance(tree, Ref):
            continue
        lacking = []
        for t in terms(tree):
            if t.optional:
                continue
            if t.name not in found:
                found[t.name] = any(c.grounded for c in row_choices(views, t.name, statements, encode))
            if not found[t.name]:
                lacking.append(t.name)
        if not lacking:
            return []
        missing += [n for n in lacking if n not in missing]
    return missing


@dataclass(kw_only=True)
class Unreported(LeafProgram):
    """The answer that a metric is not one the company reports: no SQL, the statement tables read as citations."""
    metric: Metric
    items: list[str]
    views: list = field(default_factory=list)
    kind: str = "unreported"
    op: str = "unreported"

    @property
    def all_leaves(self) -> list:
        return []

    @property
    def tables(self) -> list:
        return list({v.info.sql_name: v.info for v in self.views}.values())

    def answer(self) -> str:
        where = sorted({STATEMENT_NAMES.get(CONCEPTS[c][1], "statements") for c in
                        (concept_of(i) for i in self.items) if c})
        rows = " or ".join(self.items)
        verb = "prints" if len(where) == 1 else "print"
        return (f"{self.metric.name[0].upper()}{self.metric.name[1:]} is not a useful metric for this company: its "
                f"{' and '.join(where) or 'statements'} {verb} no {rows} line, which the {self.metric.name} is "
                f"computed from, so its performance is not reported or measured through {self.metric.name}.")


def _plain(text: str) -> str:
    return " " + " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split()) + " "


def printed(texts, items: list[str]) -> bool:
    """Does any of ``texts`` print the name or one of the row labels of one of ``items``?"""
    labels = {_plain(lb) for i in items for lb in [i] + list(CONCEPTS.get(concept_of(i) or "", ([],))[0])}
    return any(lb in _plain(t) for t in texts for lb in labels if lb.strip())


def plan_unreported(conditional: str, metric: Optional[Metric], views_by_doc: dict, statements: list[str],
                    encode: Optional[Callable] = None, doc_texts: Optional[Callable] = None) -> Optional[Unreported]:
    """The metric-not-reported answer when the question invites it (``conditional``) and it holds, else None.
    ``doc_texts(doc_id)``: the texts of a document's passages (without it, nothing is said to be unreported)."""
    if metric is None or not conditional or not asks_relevance(conditional) or doc_texts is None:
        return None
    items = unreported_items(metric, views_by_doc, statements, encode)
    if not items or any(printed(doc_texts(d), items) for d in views_by_doc):
        return None
    homes = {CONCEPTS[c][1] for c in (concept_of(i) for i in items) if c}
    views = [v for vs in views_by_doc.values() for v in vs if getattr(v.info, "statement", "") in homes]
    prog = Unreported(metric=metric, items=items, views=views[:1])
    prog.doubts.append("the line items' absence is read from the statement tables (the filing is silent on the metric)")
    return prog
