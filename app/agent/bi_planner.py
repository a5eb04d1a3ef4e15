"""Deterministic BI planner: maps a numeric question onto a catalogue table, its rows/columns, an aggregate
and periods, and writes the SQL. Used with the small embedded model (a larger model writes SQL itself).

Two table shapes are understood: *wide* (a label column of line items or segments, one numeric column per
period, e.g. ``item | y2024 | y2023``) and *long* (a period column and numeric metric columns, e.g.
``year | revenue_usd``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from app.agent.text import content_words

NUMERIC_CUES = re.compile(
    r"\b(how much|total|sum|revenue|income|profit|loss|growth|grow|grew|increase|decrease|change|average|mean|"
    r"margin|cost|expenses?|ebitda|quarter|q[1-4]|fiscal|fy|segment|compare|comparison|percent|%|by year|"
    r"each year|per year|trend|figures?|amount)\b", re.I)
GROWTH = re.compile(r"\b(growth|grow|grew|increase|decrease|change|rise|rose|fell|declin\w*)\b", re.I)
AVERAGE = re.compile(r"\b(average|mean)\b", re.I)
ALL_ROWS = re.compile(r"\b(by segment|each segment|per segment|segments|all rows|every segment|breakdown)\b", re.I)
FY = re.compile(r"\b(fy|full[- ]year|fiscal year|annual|whole year)\b", re.I)
YEAR = re.compile(r"\b((?:19|20)\d\d)\b")
QUARTER = re.compile(r"\bq([1-4])(?:\s*(?:of\s*)?((?:19|20)\d\d))?\b", re.I)
PERIOD_NAME = re.compile(r"^(?:(?P<fy>fy)_?|y|q(?P<q>[1-4])_?)?(?P<year>(?:19|20)\d\d)$")
PERIOD_COLUMN_NAMES = {"year", "period", "quarter", "fiscal_year", "fy", "date"}


def looks_numeric(question: str) -> bool:
    return bool(NUMERIC_CUES.search(question))


@dataclass
class Period:
    year: int
    quarter: Optional[int] = None  # 1..4
    fy: bool = False

    def label(self) -> str:
        return f"FY {self.year}" if self.fy else (f"Q{self.quarter} {self.year}" if self.quarter else str(self.year))


def column_period(name: str, label: str = "") -> Optional[Period]:
    key = re.sub(r"[^a-z0-9]+", "_", (label or name).lower()).strip("_")
    for candidate in (key, name.lower()):
        m = PERIOD_NAME.match(candidate)
        if m:
            return Period(int(m["year"]), int(m["q"]) if m["q"] else None, bool(m["fy"]))
    return None


@dataclass
class QuestionPeriods:
    years: set[int] = field(default_factory=set)
    quarters: set[tuple[int, Optional[int]]] = field(default_factory=set)
    fy: bool = False

    @property
    def any(self) -> bool:
        return bool(self.years or self.quarters)


def question_periods(question: str) -> QuestionPeriods:
    qp = QuestionPeriods(years={int(y) for y in YEAR.findall(question)}, fy=bool(FY.search(question)))
    for q, y in QUARTER.findall(question):
        qp.quarters.add((int(q), int(y) if y else None))
    return qp


def select_period_columns(cols: list[tuple[str, Period]], qp: QuestionPeriods, total: bool) -> list[str]:
    if qp.quarters:
        picked = [c for c, p in cols if p.quarter and any(p.quarter == q and (y is None or y == p.year)
                                                          for q, y in qp.quarters)]
        if picked:
            return picked
    fy_cols = [(c, p) for c, p in cols if p.fy]
    if (qp.fy or total) and fy_cols:
        picked = [c for c, p in fy_cols if not qp.years or p.year in qp.years]
        if picked:
            return picked
    if qp.years:
        plain = [c for c, p in cols if not p.quarter and not p.fy and p.year in qp.years]
        return plain or [c for c, p in cols if p.year in qp.years]
    return [c for c, _ in cols]


@dataclass
class BiPlan:
    table: object  # ingest TableInfo
    sql: str
    kind: str  # values | growth | sum | average
    score: float
    label_column: Optional[str] = None
    row_labels: list[str] = field(default_factory=list)
    value_columns: list[str] = field(default_factory=list)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def plan_question(question: str, tables: list, row_labels_of) -> Optional[BiPlan]:
    """The best plan over ``tables`` or None. ``row_labels_of(table, column) -> list[str]`` reads labels."""
    words = content_words(question)
    qp = question_periods(question)
    growth, average = bool(GROWTH.search(question)), bool(AVERAGE.search(question))
    total = bool(re.search(r"\b(total|sum|full[- ]year)\b", question, re.I))
    best: Optional[BiPlan] = None
    for t in tables:
        plan = _plan_wide(t, question, words, qp, growth, average, total, row_labels_of) or \
            _plan_long(t, words, qp, growth, average, total)
        if plan and (best is None or plan.score > best.score):
            best = plan
    return best if best and best.score >= 0.5 else None


def _title_bonus(t, words: set[str]) -> float:
    return 0.25 * len(content_words(t.title) & words)


def _plan_wide(t, question, words, qp, growth, average, total, row_labels_of) -> Optional[BiPlan]:
    text_cols = [c.name for c in t.columns if c.sql_type.upper() == "TEXT"]
    periods = [(c.name, p) for c in t.columns if c.sql_type.upper() != "TEXT"
               for p in [column_period(c.name, c.label)] if p]
    if not text_cols or not periods:
        return None
    label_col = text_cols[0]
    labels = [lab for lab in row_labels_of(t, label_col) if lab]
    scored = []
    for lab in labels:
        lw = content_words(lab)
        if lw:
            overlap = len(lw & words)
            scored.append((overlap / len(lw) if overlap else 0.0, lab))
    top = max((s for s, _ in scored), default=0.0)
    rows = [lab for s, lab in scored if s == top and s >= 0.5]
    if len(rows) > 1 and any(r.strip().lower() == "total" for r in rows):  # "total of A and B": the aggregate
        rows = [r for r in rows if r.strip().lower() != "total"]
    if ALL_ROWS.search(question) and not (top == 1.0 and len(rows) == 1 and rows[0].lower() != "total"):
        rows, top = [lab for lab in labels if lab.strip().lower() != "total"], max(top, 0.75)
    if not rows:
        return None
    score = top + _title_bonus(t, words) + 0.25 * len(content_words(label_col.replace("_", " ")) & words)
    matched = select_period_columns(periods, qp, total)
    if qp.quarters and any(p.quarter for c, p in periods if c in matched):
        score += 0.3
    elif qp.any:
        score += 0.1 if any(p.year in qp.years for c, p in periods if c in matched) else -0.5
    by_name = dict(periods)
    where = f" WHERE {_q(label_col)} IN ({', '.join(_lit(r) for r in rows)})"
    if growth:
        ordered = sorted(matched if len(matched) >= 2 else [c for c, p in periods if not p.quarter and not p.fy]
                         or [c for c, _ in periods], key=lambda c: (by_name[c].year, by_name[c].quarter or 0),
                         reverse=True)
        if len(ordered) < 2:
            return None
        new, old = ordered[0], ordered[1]
        sql = (f"SELECT {_q(label_col)}, {_q(new)}, {_q(old)}, ROUND(({_q(new)} / {_q(old)} - 1) * 100, 2) "
               f"AS growth_pct FROM {_q(t.sql_name)}{where} ORDER BY row_num")
        return BiPlan(t, sql, "growth", score, label_col, rows, [new, old])
    breakdown = bool(re.search(r"\b(by|each|per)\b", question, re.I))
    if len(rows) > 1 and not breakdown and (average or (total and "total" not in [r.lower() for r in rows])) \
            and len(matched) == 1:
        fn = "AVG" if average else "SUM"
        sql = f"SELECT {fn}({_q(matched[0])}) AS {'average' if average else 'total'} FROM {_q(t.sql_name)}{where}"
        return BiPlan(t, sql, "average" if average else "sum", score, label_col, rows, matched)
    cols = ", ".join(_q(c) for c in matched)
    sql = f"SELECT {_q(label_col)}, {cols} FROM {_q(t.sql_name)}{where} ORDER BY row_num"
    return BiPlan(t, sql, "values", score, label_col, rows, matched)


def _plan_long(t, words, qp, growth, average, total) -> Optional[BiPlan]:
    period_col = next((c.name for c in t.columns if c.name.lower() in PERIOD_COLUMN_NAMES
                       or content_words(c.label or "") & {"year", "period", "quarter"}), None)
    metrics = []
    for c in t.columns:
        if c.sql_type.upper() == "TEXT" or c.name == period_col:
            continue
        cw = content_words(f"{c.name.replace('_', ' ')} {c.label}")
        overlap = len(cw & words)
        if overlap:
            metrics.append((overlap / max(1, len(cw)), c.name))
    if period_col is None or not metrics:
        return None
    top = max(s for s, _ in metrics)
    metric = next(name for s, name in metrics if s == top)
    score = max(0.5, top) + _title_bonus(t, words)
    table, p, m = _q(t.sql_name), _q(period_col), _q(metric)
    where = f" WHERE CAST({p} AS INTEGER) IN ({', '.join(map(str, sorted(qp.years)))})" if qp.years else ""
    if growth:
        sql = (f"SELECT cur.{p} AS period, cur.{m} AS value, prev.{m} AS previous, "
               f"ROUND((cur.{m} / prev.{m} - 1) * 100, 2) AS growth_pct FROM {table} cur JOIN {table} prev "
               f"ON CAST(prev.{p} AS INTEGER) = CAST(cur.{p} AS INTEGER) - 1"
               + (where.replace(p, f"cur.{p}") if where else "") + f" ORDER BY cur.{p}")
        return BiPlan(t, sql, "growth", score, period_col, [], [metric])
    if (total or average) and not (qp.years and len(qp.years) == 1):
        fn = "AVG" if average else "SUM"
        sql = f"SELECT {fn}({m}) AS {'average' if average else 'total'} FROM {table}{where}"
        return BiPlan(t, sql, "average" if average else "sum", score, period_col, [], [metric])
    sql = f"SELECT {p}, {m} FROM {table}{where} ORDER BY row_num"
    return BiPlan(t, sql, "values", score, period_col, [], [metric])
