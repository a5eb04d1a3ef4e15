"""``read_question``: the one place a question is read. The graph's first node builds a ``QuestionFrame`` and
every later node reads it; nothing re-parses the question.

The frame records what the question asks (the answer kind, the clause kind the taxonomy knows, the years and
the analyst's instructions), which documents it is about (the tenant's documents in scope, the company it
names, a company no document is about) and whether a table answers it: the BI plan is built here, once, and
kept for the BI node in the run's scratch (a plan holds table objects a checkpointer cannot store; the frame
keeps its summary).
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from app.agent.text import content_words
from app.agent.vocabulary import asks_yes_no, phrase_pattern, word_lists

log = logging.getLogger(__name__)

ANSWER_KINDS = ("clause", "figure", "comparison", "list", "yes_no", "summary", "text")
FIGURE_ASKS = ("amount", "percent", "count")
MAX_AGREEMENTS = 64  # agreements the frame keeps for later nodes (every checkpoint holds it; past it the finder reads)


@dataclass
class QuestionFrame:
    question: str  # as asked (stripped)
    query: str  # the asking part: the question with the names of the documents it is about taken out
    answer_kind: str  # one of ANSWER_KINDS
    clause_kind: Optional[str] = None  # a taxonomy entry's name (the tenant's playbook included)
    ask: str = "text"  # what the answering span must state: amount|percent|count|date|duration|reason|list|text
    years: list[str] = field(default_factory=list)
    multi: bool = False  # several values asked one by one ("... respectively", "each of")
    words: list[str] = field(default_factory=list)  # content-word stems of the asking part
    instructions: dict = field(default_factory=dict)  # {"definition", "statements", "fallback"} as read
    doc_ids: Optional[list[str]] = None  # documents in scope (None: every document of the tenant)
    not_in_documents: str = ""  # a company named that no document in scope is about: the answer, as is
    companies: list[str] = field(default_factory=list)  # companies named that documents in scope are about
    agreements: Optional[list[str]] = None  # documents in scope whose opening names parties (None: not kept)
    bi_planned: bool = False  # a table in scope answers it with a confident program (kept in the scratch)
    bi_reason: str = ""  # why not, when not
    wants_long: bool = False  # a summary / whole-document reading
    read_s: float = 0.0  # time spent reading it

    def to_state(self) -> dict:
        return asdict(self)

    @classmethod
    def from_state(cls, d: dict | None) -> "QuestionFrame | None":
        return cls(**d) if d else None


def _long_patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    w = word_lists("long_reading", ("summary", "whole", "documents", "not_summarized", "parts"))  # vocabulary.yaml
    whole = re.compile(rf"{phrase_pattern(w['whole'])}\s+(?:[\w'’-]+\s+){{0,2}}?"
                       rf"{phrase_pattern(w['documents'], plural=True)}(?!\s+{phrase_pattern(w['parts'], plural=True)})",
                       re.I)
    # "what does the table summarize": the table's content is asked, not a summary
    of_table = re.compile(rf"{phrase_pattern(w['not_summarized'])}\s+(?:\w+\s+)?$", re.I)
    return re.compile(phrase_pattern(w["summary"]), re.I), whole, of_table


_SUMMARY, _WHOLE, _OF_TABLE = _long_patterns()


def wants_long(question: str) -> bool:
    """A summary or a reading of whole documents ("summarize the memo", "the whole agreement"); not "overall
    growth", "all of the derivative instruments" or what a table summarizes."""
    if _WHOLE.search(question):
        return True
    return any(not _OF_TABLE.search(question[:m.start()]) for m in _SUMMARY.finditer(question))


def _answer_kind(question: str, ask: str, clause_kind: str | None, long: bool, comparison: bool) -> str:
    if long:
        return "summary"
    if clause_kind:
        return "clause"
    if comparison:
        return "comparison"
    if ask in FIGURE_ASKS:
        return "figure"
    if ask == "list":
        return "list"
    if asks_yes_no(question):
        return "yes_no"
    return "text"


def read_question(kbt, question: str, doc_ids: Optional[list[str]] = None, mode: str = "auto",
                  scratch: Optional[dict] = None, taxonomy=None) -> QuestionFrame:
    """Read ``question`` once for tenant-bound ``kbt`` (``kb.for_tenant(t)``). ``scratch`` (a per-run dict)
    receives the BI plan when one exists, so the BI node runs it without planning again."""
    from app.agent.bi.instructions import read as read_instructions
    from app.agent.bi.question import parse_question
    from app.agent.scope import documents_for
    from app.agent.text_spans import ask_of

    t0 = time.perf_counter()
    question = question.strip()
    sc = documents_for(kbt, question, doc_ids)  # documents, company and filing named: read once
    if sc.out_of_scope:
        return QuestionFrame(question, question, "text", doc_ids=doc_ids, not_in_documents=sc.not_in_documents,
                             read_s=time.perf_counter() - t0)
    missing = "" if sc.doc_ids else _missing_documents(kbt, question, doc_ids)
    if missing:
        return QuestionFrame(question, question, "text", doc_ids=doc_ids, not_in_documents=missing,
                             read_s=time.perf_counter() - t0)
    scope, cs = sc, sc.company
    query = scope.query or question
    asked = ask_of(query)
    kind, strong = _clause_kind(kbt, query, taxonomy)
    rd = read_instructions(question)
    pq = parse_question(rd.question)
    long = wants_long(question)
    planned, why_not = False, ""
    if mode in ("auto", "bi") and (not kind or not strong) and not long:
        in_view = scope.doc_ids if scope.doc_ids is not None else doc_ids  # the documents named, as RAG reads them
        planned, why_not = _plan_once(kbt, question, in_view, cs, scratch)
        if planned:  # a kind named by one word ("audit fees") is a line item the tables hold, not a clause
            kind = None
    agreements = sc.agreements or frozenset()
    in_scope = agreements & set(scope.doc_ids) if scope.doc_ids is not None else agreements
    if kind is not None and not strong and not _about_contracts(query, in_scope):
        kind = None  # one word ("What do the audit fees comprise?") and no contract in view: the question's own words
    comparison = pq.op in ("difference", "pct_change", "ratio", "max", "min") and not kind
    frame = QuestionFrame(
        question=question, query=query,
        answer_kind=_answer_kind(query, asked.kind, kind.name if kind else None, long, comparison),
        clause_kind=kind.name if kind else None, ask=asked.kind, years=list(asked.years), multi=asked.multi,
        words=sorted(content_words(query)),
        instructions={"definition": rd.definition, "statements": rd.statements, "fallback": rd.fallback},
        doc_ids=scope.doc_ids if scope.doc_ids is not None else doc_ids,
        companies=list(cs.matched), wants_long=long,
        agreements=sorted(in_scope) if len(in_scope) <= MAX_AGREEMENTS else None)
    if not kind:
        frame.bi_planned, frame.bi_reason = planned, why_not
    frame.read_s = round(time.perf_counter() - t0, 4)
    return frame


def _plan_once(kbt, question: str, doc_ids, cs, scratch: Optional[dict]) -> tuple[bool, str]:
    from app.agent.bi.planner import plan_question

    try:
        tables = kbt.list_tables()
        if not tables:
            return False, "no tables"
        plan = plan_question(question, tables, kb=kbt.kb, tenant=kbt.tenant, doc_ids=doc_ids, cs=cs)
    except Exception as exc:  # a planner failure never blocks the question: RAG answers it
        log.exception("BI planner failed")
        return False, f"BI planner failed: {type(exc).__name__}"
    if scratch is not None:
        scratch["bi_plan"] = plan
    return plan.program is not None, "ok" if plan.program is not None else plan.reason


def _missing_documents(kbt, question: str, doc_ids) -> str:
    """The answer when the question names a document no document in scope carries (``named_documents``)."""
    from app.agent.named_documents import missing_named_documents

    try:
        names = missing_named_documents(kbt, question, doc_ids)
    except Exception:  # the check never blocks a question
        log.exception("named-document check failed")
        return ""
    if not names:
        return ""
    said = ", ".join(f"\u201c{n}\u201d" for n in names)
    return (f"No document in scope mentions {said}: the documents do not contain information about it, so this "
            "question is not answered from other documents.")


def _about_contracts(query: str, agreements: frozenset[str]) -> bool:
    """The question speaks of a contract ("this agreement", "either party") or a document in scope is one
    (``agreements``: those in scope whose opening names parties, as the scope read them)."""
    from app.agent.clauses.taxonomy import TOKEN
    from app.agent.vocabulary import contract_words

    return bool(set(TOKEN.findall(query.lower())) & contract_words()) or bool(agreements)  # vocabulary.yaml


def _clause_kind(kbt, query: str, taxonomy=None):
    """(the taxonomy's kind the asking part names, or None; whether the reading is strong). The tenant's
    playbook is merged over the built-in kinds; the embedder confirms a kind named by one word only."""
    from app.agent.clauses.playbook import taxonomy_for

    return (taxonomy or taxonomy_for(kbt.kb, kbt.tenant)).reading(query, getattr(kbt.kb, "embedder", None))


def plan_of(config: Any):
    """The BI plan ``read_question`` kept for this run, or None."""
    return (((config or {}).get("configurable") or {}).get("scratch") or {}).get("bi_plan")
