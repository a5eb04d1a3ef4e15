"""A metric over several fiscal years of one filing: its average ("the FY2015 - FY2017 3 year average net profit
margin"), its change ("the change in EBITDA margin from FY2019 to FY2020"), its compound annual growth rate
("the 2 year total revenue CAGR from FY2016 to FY2018") or whether it is consistent ("Are
gross margins historically consistent (not fluctuating more than roughly 2% each year)?": every year the
statements print, the year-over-year changes against the threshold asked).

Each year is a ``MetricProgram`` over the same formula; one SQL statement computes every year and the result.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from app.agent.bi.formula import show
from app.agent.bi.metric_program import (MetricProgram, _percent_tree, aliases, bind, decimals_asked, leaf_line,
                                         select_sql)
from app.agent.bi.metrics import CAGR, Metric
from app.agent.bi.operands import LeafProgram, unique_leaves
from app.agent.bi.periods import Period
from app.agent.bi.program import fmt
from app.agent.bi.question import parse_question
from app.agent.bi.table import TableView
from app.agent.vocabulary import asked_direction, asks_comparison, asks_which_way, asks_yes_no

CONSISTENT = re.compile(r"\b(consistent|stable|steady|fluctuat\w*|volatil\w*)\b", re.I)
THRESHOLD = re.compile(r"\b(?:more than|over|within|exceed\w*|beyond|above)\s+(?:roughly\s+|about\s+|approximately\s+|"
                       r"around\s+|~\s*)?(\d+(?:\.\d+)?)\s*(?:%|percent|percentage points?|pp)", re.I)


def series_kind(question: str, periods: list[Period]) -> Optional[str]:
    """consistency | cagr | trend | average | change | None (one period). A trend: which way the metric moved
    ("has the quick ratio improved between FY2022 and FY2023?", "an improving gross margin as of FY2023?": the
    year asked against the one before), or two years set side by side ("how does it in FY2022 compare to FY2021?")."""
    if CONSISTENT.search(question):
        return "consistency"
    if CAGR.search(question) and len({p.year for p in periods}) >= 2:
        return "cagr"
    years = {p.year for p in periods}
    if years and asked_direction(question) and (asks_yes_no(question) or asks_which_way(question)):
        return "trend"  # asked as yes / no, or which way: "what was the increase ..." stays a change
    if len(years) < 2:
        return None
    op = parse_question(question).op
    if op == "average":
        return "average"
    if op in ("difference", "pct_change"):
        return "change"
    if asks_comparison(question):  # "how does it in FY2022 compare to FY2021?": both years, and which way it went
        return "trend"
    return None


@dataclass
class SeriesProgram(LeafProgram):
    metric: Metric
    parts: list[MetricProgram]  # one per fiscal year, oldest first
    agg: str  # average | change | trend | cagr | consistency
    threshold: Optional[float] = None
    decimals: Optional[int] = None
    direction: Optional[str] = None  # a trend: the way asked (up | down | better | worse | change)
    yes_no: bool = False  # a trend asked as a yes/no question

    @property
    def grounded(self) -> bool:
        return not self.doubts and all(p.grounded for p in self.parts)

    @property
    def target(self) -> Period:
        return self.parts[-1].target

    @property
    def all_leaves(self) -> list:
        return unique_leaves(leaf for p in self.parts for leaf in p.all_leaves)

    def values(self) -> list[Optional[float]]:
        return [p.evaluate() for p in self.parts]

    def evaluate(self) -> Optional[float]:
        v = self.values()
        if any(x is None for x in v) or len(v) < 2:
            return None
        if self.agg == "average":
            return sum(v) / len(v)
        if self.agg in ("change", "trend"):
            return v[-1] - v[0]
        if self.agg == "cagr":
            n = self.parts[-1].target.year - self.parts[0].target.year
            return None if not v[0] or n <= 0 or v[-1] / v[0] < 0 else ((v[-1] / v[0]) ** (1.0 / n) - 1) * 100.0
        return max(abs(b - a) for a, b in zip(v, v[1:]))

    def sql(self) -> str:
        alias = aliases(self.all_leaves)
        e = [p._sql_expr(p.tree, alias) for p in self.parts]
        if self.agg == "average":
            value = f"(({' + '.join(e)}) / {float(len(e))})"
        elif self.agg in ("change", "trend"):
            value = f"({e[-1]} - {e[0]})"
        elif self.agg == "cagr":
            n = self.parts[-1].target.year - self.parts[0].target.year
            value = f"((POWER({e[-1]} * 1.0 / {e[0]}, 1.0 / {n}) - 1) * 100.0)"
        else:
            diffs = [f"ABS({b} - {a})" for a, b in zip(e, e[1:])]
            value = diffs[0] if len(diffs) == 1 else f"MAX({', '.join(diffs)})"
        exprs = [(value, "value")] + [(x, f"FY{p.target.year}") for x, p in zip(e, self.parts)]
        return select_sql(exprs, self.all_leaves, alias)

    def _num(self, v: float, unit: bool = True, *, value: bool = True) -> str:
        d = self.decimals if self.decimals is not None else (1 if self.metric.unit == "percent" else 2)
        if value and self.decimals is None and 0 < abs(v) < 1:  # a value to two significant digits at least:
            d = max(d, 2)  # 0.62%, not 0.6% (a change between values keeps the values' decimals)
        s = f"{round(v, d):,.{d}f}" if d > 0 else f"{int(round(v)):,}"
        return s + ("%" if unit and self.metric.unit == "percent" else "")

    def _trend(self, vals: list[float], years: list[str], pts: str) -> str:
        """Which way the metric moved, and whether that is the way asked: "Yes, the quick ratio rose from 0.67 in
        FY2022 to 0.69 in FY2023 (up 0.02, 3.0%; an improvement)." Better or worse is the catalogue's sense of the
        metric (``better``); where it has none, only the movement is stated."""
        a, b = vals[0], vals[-1]
        change = b - a
        better = self.metric.better
        good = None if not better or not change else (change > 0) == (better == "higher")
        moved = {"up": change > 0, "down": change < 0, "change": change != 0, "better": good,
                 "worse": None if good is None else not good}.get(self.direction or "change")
        word = "rose" if change > 0 else ("fell" if change < 0 else "did not change")
        by = self._num(abs(change), False, value=False)
        size = f"{'up ' if change > 0 else 'down ' if change < 0 else ''}{by}{pts}"
        if self.metric.unit != "percent" and a:
            size += f", {abs(change) * 100.0 / abs(a):.1f}%"
        sense = "" if good is None else ("; an improvement" if good else "; a deterioration")
        said = (f"the {self.metric.name} {word} from {self._num(a)} in {years[0]} to {self._num(b)} in {years[-1]} "
                f"({size}{sense}).")
        if self.yes_no and moved is not None:
            return f"{'Yes' if moved else 'No'}, {said}"
        return said[:1].upper() + said[1:]

    def answer(self, value: float, sql: str, asked_scale: Optional[str] = None) -> str:
        vals = self.values()
        years = [f"FY{p.target.year}" for p in self.parts]
        name = self.metric.name
        pts = " percentage points" if self.metric.unit == "percent" else ""
        listing = ", ".join(f"{y} {self._num(v)}" for y, v in zip(years, vals))
        if self.agg == "average":
            head = (f"Average {name}, {years[0]} to {years[-1]}: ({' + '.join(self._num(v, False) for v in vals)}) / "
                    f"{len(vals)} = {self._num(value)}.")
        elif self.agg == "cagr":
            n = self.parts[-1].target.year - self.parts[0].target.year
            d = self.decimals if self.decimals is not None else 2
            head = (f"{name}, {years[0]} to {years[-1]}: ({fmt(vals[-1])} / {fmt(vals[0])})"
                    f"^(1/{n}) − 1 = {round(value, d):,.{d}f}%.")
        elif self.agg == "trend":
            head = self._trend(vals, years, pts)
        elif self.agg == "change":
            head = (f"Change in {name}, {years[0]} to {years[-1]}: {self._num(vals[-1], False)} − "
                    f"{self._num(vals[0], False)} = {self._num(value, False, value=False)}{pts}.")
        else:
            moves = []
            for (y0, a), (y1, b) in zip(zip(years, vals), list(zip(years, vals))[1:]):
                word = "an increase" if b > a else ("a decline" if b < a else "no change")
                moves.append(f"{word} of {self._num(abs(b - a), False, value=False)}{pts} between {y0} and {y1}")
            if self.threshold is not None:
                ok = value <= self.threshold
                verdict = (f"{'Yes' if ok else 'No'}, the {name} {'has' if ok else 'has not'} been consistent "
                           f"({'within' if ok else 'beyond'} roughly {fmt(self.threshold)}{pts} each year)")
            else:
                verdict = f"The {name} by year"
            largest = self._num(value, False, value=False)
            head = f"{verdict}: {listing}; {'; '.join(moves)}. Largest year-over-year change = {largest}{pts}."
        lines = [head, f"Formula: {name} = {show(self.parts[-1].tree)}; " + "; ".join(
            f"{y}: {p.with_values()} = {self._num(v)}" for y, p, v in zip(years, self.parts, vals)) + "."]
        lines.append("Rows used: " + "; ".join(leaf_line(leaf) for leaf in self.all_leaves) + ".")
        lines.append("Source: " + ", ".join(f'table "{t.title}" ({t.filename}, page {t.page})' for t in self.tables) + ".")
        lines.append(f"SQL: {sql}")
        if self.doubts:
            lines.append("Not verified: " + "; ".join(self.doubts) + ".")
        return "\n".join(lines)


def _years(kind: str, periods: list[Period], views: list[TableView]) -> list[int]:
    if kind == "trend":  # the two years named, or the year named and the one before
        lo, hi = min(p.year for p in periods), max(p.year for p in periods)
        return [hi - 1, hi] if lo == hi else [lo, hi]
    if kind == "consistency":
        ys = {c.period.year for v in views if getattr(v.info, "statement", "") for c in v.period_cols
              if not c.period.quarter}
        return sorted(ys)
    lo, hi = min(p.year for p in periods), max(p.year for p in periods)
    return list(range(lo, hi + 1)) if kind == "average" else [lo, hi]  # change, cagr: the two ends


def plan_series(question: str, metric: Metric, kind: str, views_by_doc: dict[str, list[TableView]],
                periods: list[Period], statements: list[str],
                encode: Optional[Callable] = None) -> tuple[Optional[SeriesProgram], str]:
    best: Optional[tuple] = None
    reasons: list[str] = []
    m = THRESHOLD.search(question)
    for doc_id, views in views_by_doc.items():
        parts: list[MetricProgram] = []
        odd_years: list[str] = []
        for y in _years(kind, periods, views):
            for tree in metric.formulas:
                tree = _percent_tree(metric, tree)
                leaves, missing = bind(views, tree, Period(y), statements, encode)
                if missing:
                    reasons.append(f"FY{y}: " + "; ".join(missing))
                    continue
                part = MetricProgram(metric, tree, Period(y), leaves)
                odd = metric.out_of_range(part.evaluate())
                if odd:
                    odd_years.append(f"FY{y}: {odd}")
                parts.append(part)
                break
        years = _years(kind, periods, views)
        if len(parts) < 2 or (kind != "consistency" and len(parts) < len(years)):
            continue
        prog = SeriesProgram(metric, parts, kind, float(m.group(1)) if m else None, decimals_asked(question),
                             asked_direction(question), asks_yes_no(question) and not asks_which_way(question))
        prog.doubts += odd_years
        rank = (not odd_years, parts[-1].target.year, len(parts))
        if best is None or rank > best[0]:
            best = (rank, prog)
    if best is None:
        return None, "Not verified: " + (reasons[0] if reasons else "no statement table gives its line items")
    return best[1], "ok"
