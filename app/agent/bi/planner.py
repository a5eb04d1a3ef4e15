"""Deterministic BI planner: scope -> catalogue search -> a typed program over grounded cells, or None
with the reason when no table in scope answers the question confidently (the agent then hands over to RAG).

``plan_question(question, tables, kb=..., tenant=...)`` is the entry point; the program it returns carries
its table view, operands (row x column cells), SQL and confidence (``bi.program.Program``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from app.agent.bi.catalog import Candidate, load_views, rank_tables, tables_in_scope, vector_cache
from app.agent.bi.instructions import read
from app.agent.bi.applicability import plan_unreported
from app.agent.bi.metric_program import MetricProgram, plan_judgement, plan_metric
from app.agent.bi import fiscal
from app.agent.bi.choice import choice_items, plan_choice
from app.agent.bi.metric_series import plan_series, series_kind
from app.agent.bi.metrics import STATEMENTS, judgement_for, metric_for
from app.agent.vocabulary import asks_yes_no
from app.agent.company_scope import CompanyScope, company_scope, without_companies
from app.agent.bi.periods import PERIOD_COLUMN_NAMES, Period, column_period, periods_in  # noqa: F401 (re-exported)
from app.agent.bi.program import Program
from app.agent.bi.ground import TOTAL_WORDS
from app.agent.bi.question import ParsedQuestion, entity_text, parse_question
from app.agent.bi.table_program import build_program
from app.agent.text import content_words

CONFIDENT = 0.55  # below: hand over to RAG
STATEMENT_BOOST = 0.1  # row matches in a table of the statement the question names as its source
MAX_VIEWS = 5000
MAX_SCOPE_TABLES = 600  # past it (no document or company named), the tables of the documents a search finds
SEARCH_DOCS = 3


def table_views(kb) -> dict:
    """The parsed tables (``TableView``) read so far, owned by the knowledge base the tables live in (keyed by
    tenant and the versioned SQL table name, so a new version of a document is a new key), bounded; a plain
    dict for a caller without one. No module-level cache: a closed knowledge base takes its views with it."""
    store = getattr(getattr(kb, "kb", kb), "derived", None)
    if store is None:
        return {}
    views = store.setdefault("table_views", {})
    if len(views) > MAX_VIEWS:
        views.clear()
    return views


@dataclass
class PlanResult:
    program: Optional[Program | MetricProgram]
    reason: str  # why there is no program (or "ok")
    scope: str = ""
    tried: list[str] = field(default_factory=list)


def plan_question(question: str, tables: list, kb=None, tenant: str = "", doc_ids=None,
                  encode: Optional[Callable] = None, cs=None) -> PlanResult:
    rd = read(question)  # the question without instructions; a definition rewritten as an operation
    if cs is None:  # the frame passes the company scope it read; callers without one read it here
        cs = company_scope(kb, tenant, question, doc_ids) if kb is not None and tenant else CompanyScope()
    rd.question, rd.fallback = without_companies(rd.question, cs.matched), without_companies(rd.fallback, cs.matched)
    pq = parse_question(rd.question)
    text_intent = "a question about the text (why / how / what it means), not a figure"
    if pq.text_intent and not rd.conditional:
        return PlanResult(None, text_intent)
    in_scope, why = tables_in_scope(kb, tenant, tables, question, doc_ids, cs)
    if len(in_scope) > MAX_SCOPE_TABLES and kb is not None and tenant:
        in_scope, why = _searched_documents(kb, tenant, question, in_scope), f"{why}; the documents search finds"
    if not in_scope:
        return PlanResult(None, "no table in the documents in scope", why)
    views = load_views(kb, tenant, in_scope, table_views(kb))
    # "Q2 of FY2024": each filing's own fiscal calendar, read at ingest and stored with the document
    fiscal.apply_stored(views, kb.for_tenant(tenant) if kb is not None and tenant else None)
    if encode is None and kb is not None and getattr(kb, "embedder", None) is not None:
        encode = vector_cache(kb.embedder).encode
    vcache = vector_cache(kb.embedder) if kb is not None and encode is not None else None
    # "If gross margin is not a useful metric for a company like this, state that": the filings print no row for it
    # (only over the filings of the company named or the documents given: never over what a search found)
    texts = (lambda d: [p.text for p in kb.document_passages(tenant, d)]) if kb is not None and tenant else None
    unreported = (plan_unreported(rd.conditional, metric_for(question), _by_doc(views), rd.statements, encode, texts)
                  if doc_ids or cs.doc_ids else None)
    if unreported is not None:
        return PlanResult(unreported, "ok", why, [f"metric {unreported.metric.name}: not reported"])
    if pq.text_intent:
        return PlanResult(None, text_intent)
    judged = judgement_for(rd.question) if asks_yes_no(rd.question) else None
    if judged is not None:  # "Is it a capital-intensive business?": a metric against the catalogue's convention
        jprog, jwhy = plan_judgement(question, judged[0], judged[1], _by_doc(views), periods_in(rd.question),
                                     rd.statements, encode)
        if jprog is not None:
            return PlanResult(jprog, "ok", why, [f"judgement by {judged[1].name}"])
    if choice_items(rd.question):  # "among A, B and C, which is largest": each item grounded
        cprog, cwhy = plan_choice(rd.question, _by_doc(views), periods_in(rd.question), rd.statements, encode)
        if cprog is not None:
            return PlanResult(cprog, "ok", why, ["choice"])
    metric, mwhy = metric_for(question), ""
    kind = series_kind(rd.question, periods_in(rd.question)) if metric is not None else None
    if metric is not None and (metric.defined or kind in ("consistency", "cagr", "trend")):  # its own formula, a trend
        mprog, mwhy = _metric(question, rd, metric, views, encode, kind)
        if mprog is not None:
            return PlanResult(mprog, "ok", why, [f"metric {metric.name}"])
        if not _single_table_formula(metric):
            return PlanResult(None, mwhy, why, [f"metric {metric.name}: {mwhy}"])
    best, tried = _best_program(views, pq, rd.statements, vcache, encode)
    if metric is not None and not metric.defined and (best is None or not best.grounded
                                                      or best.confidence < CONFIDENT
                                                      or _percent_asked_of_amounts(question, metric, best)):
        mprog, mwhy = _metric(question, rd, metric, views, encode, kind)  # the usual definition of the metric
        tried.append(f"metric {metric.name}: {mwhy}")
        if mprog is not None and mprog.grounded:
            return PlanResult(mprog, "ok", why, tried)
    if rd.fallback and (best is None or not best.grounded):  # "current ratio": its usual definition
        alt, alt_tried = _best_program(views, parse_question(rd.fallback), rd.statements, vcache, encode)
        tried += alt_tried
        if alt is not None and alt.confidence >= CONFIDENT and (best is None or alt.grounded):
            alt.notes.append(f"{rd.definition} (the usual definition)")
            best = alt
    if best is None:
        return PlanResult(None, mwhy or "no table in scope has the rows and periods the question names", why, tried)
    if best.confidence < CONFIDENT:
        return PlanResult(None, f"not confident ({best.confidence:.2f}) that {best.table.title!r} answers it",
                          why, tried)
    if hard_doubt(best):  # a period asked that the program does not read, or row and words both in doubt
        return PlanResult(None, f"{best.table.title!r} does not answer it: {'; '.join(best.doubts)}", why, tried)
    return PlanResult(best, "ok", why, tried)


def _searched_documents(kb, tenant: str, question: str, tables: list) -> list:
    """The tables of the (at most ``SEARCH_DOCS``) documents whose passages a search for the question ranks
    first: a question that names no document or company is not planned over every table of the tenant."""
    docs: list[str] = []
    for p in kb.search(tenant, question, k=10, doc_ids=list(dict.fromkeys(t.doc_id for t in tables))):
        if p.doc_id not in docs:
            docs.append(p.doc_id)
    keep = set(docs[:SEARCH_DOCS])
    return [t for t in tables if t.doc_id in keep]


def _percent_asked_of_amounts(question: str, metric, prog) -> bool:
    """"The 3 year average gross margin (as a %)": a row of gross margin amounts does not answer it."""
    if metric.unit != "percent" or not re.search(r"%|\bpercent", question, re.I):
        return False
    return not (getattr(prog, "percent", False) or any(o.col.percent for o in prog.operands)
                or prog.op == "pct_change")


def _by_doc(views) -> dict:
    by_doc: dict = {}
    for v in views:
        by_doc.setdefault(v.info.doc_id, []).append(v)
    return by_doc


def _metric(question: str, rd, metric, views, encode, kind: Optional[str]) -> tuple[Optional[MetricProgram], str]:
    """The metric over one filing's statements: at the period asked, or over several years (``kind``)."""
    by_doc = _by_doc(views)
    if kind:
        return plan_series(question, metric, kind, by_doc, periods_in(rd.question), rd.statements, encode)
    return plan_metric(question, metric, by_doc, periods_in(rd.question), rd.statements, encode)


def _single_table_formula(metric) -> bool:
    """A defined ratio of two line items: the single-table planner may still read it (one table)."""
    from app.agent.bi.formula import Bin, Term
    t = metric.formulas[0]
    return isinstance(t, Bin) and t.op == "/" and isinstance(t.left, Term) and isinstance(t.right, Term) \
        and t.left.agg == t.right.agg == "value"


def hard_doubt(prog: Program) -> bool:
    """Doubts under which a BI answer was (nearly) never right on the dev set: hand over to the text route."""
    period = any("among the columns used" in d or "no column for" in d for d in prog.doubts)
    return period or len(prog.doubts) >= 2


def _best_program(views, pq: ParsedQuestion, statements: list[str], vcache, encode) -> tuple[Optional[Program], list]:
    """The best program over the catalogue's candidates: grounded before not, then by confidence; a table of
    the statement the question names as its source ("primarily in the balance sheet") first."""
    cands = rank_tables(views, entity_text(pq.phrase) or pq.phrase, vcache, top=8 if statements else 6,
                        statements=statements)
    cands += _primary_statements(views, cands)
    asked = content_words(pq.phrase)
    best: Optional[Program] = None
    tried = []
    for cand in cands:
        named = bool(statements) and getattr(cand.view.info, "statement", "") in statements
        prog = build_program(cand.view, pq, encode, STATEMENT_BOOST if named else 0.0)
        if prog is None:
            continue
        prog.confidence += 0.1 * cand.score
        if named:
            prog.confidence += 0.05
        tried.append(f"{cand.view.info.sql_name}: {prog.op} {prog.confidence:.2f}{'' if prog.grounded else ' ?'}")
        prog.from_statement = named
        prog.of_whole = _of_the_whole(prog, asked)
        if best is None or _rank(prog) > _rank(best):
            best = prog
    return best, tried


def _rank(prog: Program) -> tuple:
    """Confident first, then from the statement the question names as its source, then what the question asks
    the whole of (``_of_the_whole``), rows named whole ("Revenue" over "Deferred revenue" for "revenue", even
    where the whole name's table leaves a doubt), grounded, confidence."""
    ok = prog.confidence >= CONFIDENT
    return ok, ok and prog.from_statement, ok and prog.of_whole, ok and prog.whole, prog.grounded, prog.confidence


def _primary_statements(views, cands: list) -> list:
    """The primary statements (income, balance sheet, cash flow: tagged at ingest) of the filings the catalogue's
    tables come from, beside them: a company's line item is printed there whole, while a segment's table that
    prints the same label ("NORTH AMERICA": "TOTAL REVENUES") may rank higher in the catalogue."""
    docs = {c.view.info.doc_id for c in cands}
    seen = {id(c.view) for c in cands}
    return [Candidate(v, 0.0) for v in views if v.info.doc_id in docs and id(v) not in seen and _primary(v)]


def _primary(view) -> bool:
    return getattr(view.info, "statement", "") in STATEMENTS


def _of_the_whole(prog: Program, asked: set[str]) -> bool:
    """The program reads what the question asks of the company as a whole: its rows, named whole, from a primary
    statement; or the question names what the program's table is about beyond its rows ("North America" of a
    segment's table): a part asked for. A segment's "Total revenues" for "What was the total revenue?" is neither,
    and yields to the income statement's "Revenues"."""
    if _primary(prog.view):
        return prog.whole
    rows = set().union(*(content_words(o.row.label) for o in prog.operands))
    return bool((content_words(prog.view.info.title or "") - rows - TOTAL_WORDS) & asked)
