"""Retrieval RAG nodes: retrieve (the frame's documents in scope + clause search), grade, and answer_rag, which
hands its candidates to the verify node (``nodes_verify``): the clause's quotes, the extracted span, a
model-written draft, the best sentences of the top passages.

With the embedded model a clause question is answered by the clause itself: the whole sentence(s) that state
what is asked, with document, page and section, and a one-line lead-in only where a value (a jurisdiction, a
date) is read off the quote. Any other question over the text (a figure for a year, a date, a reason, the
listed items) is answered by extraction (``text_answer``): the sentence that states it, the span read off it,
the sentence and page as its citation. Only when that finds nothing may a model-written answer stand, kept when
``verify_generated`` finds its words in the cited sentences. ``supported`` is the verifier's verdict;
when nothing verifies, the answer says the documents do not state it and lists the nearest passages as related.
"""
from __future__ import annotations

import re

from langchain_core.runnables import RunnableConfig

from app import prompts
from app.agent import scope as scope_mod
from app.agent.clause_search import find_passages
from app.agent.clauses.definitions import defining_sentence
from app.agent.clauses.restated import asked_phrases, contradiction, statements
from app.agent.clauses.finder import OPENING_CHARS
from app.agent.clauses.units import section_number
from app.agent.clauses.playbook import taxonomy_for
from app.agent.filing_scope import without_filing_date
from app.agent.filing_subject import asks_subject, subject_answer
from app.agent.grounding import clean_answer
from app.agent.quotes import candidate_quotes
from app.agent.repetition import guarded
from app.agent.frame import QuestionFrame, read_question
from app.agent.nodes_verify import as_candidate
from app.agent.state import AgentDeps, AgentState, cancel_event, citation, passage_dict, past_budget
from app.agent.text import content_words, heading_like
from app.agent.text_answer import FIGURE_ASKS, text_answer
from app.agent.text_spans import ask_of
from app.agent.text_terms import key_words
from app.agent.calibration import can_support
from app.agent.verify import JURISDICTION, start_date, verify, verify_generated

MAX_CONTEXT_PASSAGES = 3
ANSWER_PASSAGES = 5  # passages the extractive answer may quote from, best first
RELATED = 3


def make_rag_nodes(deps: AgentDeps):
    def retrieve(state: AgentState) -> dict:
        frame = QuestionFrame.from_state(state.get("frame")) or read_question(
            deps.kb.for_tenant(state["tenant"]), state["question"], state.get("doc_ids"), "rag")  # run alone
        agreements = frozenset(frame.agreements) if frame.agreements is not None else None
        scope = scope_mod.Scope(frame.doc_ids, frame.query, "", {}, agreements=agreements)
        k = max(deps.settings.retrieval_k, ANSWER_PASSAGES)
        hits = find_passages(deps.kb, state["tenant"], frame.query, k=k, scope=scope, kind=frame.clause_kind)
        return {"passages": [passage_dict(p) for p in hits], "route": "rag", "search_query": frame.query,
                "clause_type": frame.clause_kind}

    def grade(state: AgentState) -> dict:
        passages = state.get("passages") or []
        if state.get("clause_type"):
            return {"graded": passages}  # ranked for the clause type; the verifier judges each quote
        return {"graded": grade_passages(state.get("search_query") or state["question"], passages)}

    def answer_rag(state: AgentState, config: RunnableConfig) -> dict:
        """Candidates, best first by the route's own ranking; the verify node decides which stands."""
        question, ctype = state.get("search_query") or state["question"], state.get("clause_type")
        kind = taxonomy_for(deps.kb, state["tenant"]).get(ctype) if ctype else None
        graded, passages = state.get("graded") or [], state.get("passages") or []
        cands: list[dict] = []
        if asks_subject(state["question"]):  # "the key agenda of the 8-K": its first reporting item
            found = subject_answer(_whole_document(deps, state, passages))
            if found:
                cands.append(as_candidate(found, "rag", "text", read="document"))  # not a search's ranking
        if kind is not None:  # a contract clause: the clause's own sentence(s)
            stated = _stated_elsewhere(deps, state, kind, graded[:ANSWER_PASSAGES])
            cands += clause_candidates(kind, question, graded[:ANSWER_PASSAGES], stated=stated)
        # the sentence that states it and the span read off it; a question of a clause type gets a figure at most
        ranked = graded + [p for p in passages if p not in graded]
        docs = list(dict.fromkeys(p["doc_id"] for p in ranked[:ANSWER_PASSAGES]))
        asked = without_filing_date(deps.kb, state["tenant"], question, docs)  # "as of <the 8-K's date>"
        full = without_filing_date(deps.kb, state["tenant"], state["question"], docs)
        clause_held = any(c["check"] for c in cands if c["source"] == "clause")
        # a clause that held keeps the text route to figures; a kind read off a word the question merely shares
        # with it ("acquisitions" in a filing question) leaves every kind of answer to the extraction
        found = text_answer(asked, ranked, full, kinds=FIGURE_ASKS if clause_held else None)
        if found:
            cands.append(as_candidate(found, "rag", "text", rank=len(cands)))
        if (kind is None and graded and not any(c["check"] for c in cands) and not past_budget(config, 0.5)
                and (deps.settings.draft_unverifiable or can_support("rag:model"))):
            drafted = _model_answer(deps, state, config, graded[:MAX_CONTEXT_PASSAGES])
            if drafted:
                cands.append(as_candidate(drafted, "rag", "model", rank=len(cands)))
        # a question of no known kind: the best sentence of each unit the finder read for its own words, as many
        # as a kind's clause candidates come from, each weighed by the verifier
        cands += passage_candidates(question, kind, passages[:RELATED if kind else ANSWER_PASSAGES], start=len(cands))
        return {"candidates": cands}

    return retrieve, grade, answer_rag


def _stated_elsewhere(deps, state, kind, passages: list[dict]) -> list[tuple[str, str]]:
    """Where the question speaks of the kind's ``stated_by`` phrases ("become effective"): every sentence of the
    passages' documents that states the value asked, with the date it gives ("" for an event)."""
    phrases = asked_phrases(kind, state["question"])
    if not phrases:
        return []
    return statements(phrases, [p.text for p in _documents_of(deps, state, passages)])


def _documents_of(deps, state, passages: list[dict]) -> list:
    """Every passage (in order) of the documents ``passages`` come from, the tenant's own only."""
    docs = list(dict.fromkeys(p["doc_id"] for p in passages))
    return [p for d in docs for p in deps.kb.document_passages(state["tenant"], d)]


def _whole_document(deps, state, passages: list[dict]) -> list[dict]:
    """Every passage of the one document the retrieved passages come from (in order), else the passages."""
    top = passages[:ANSWER_PASSAGES]
    if len({p["doc_id"] for p in top}) != 1:
        return passages
    return [passage_dict(p) for p in _documents_of(deps, state, top)] or passages


def _model_answer(deps, state, config, passages: list[dict]) -> dict | None:
    """A model-written answer to a question of no known clause type, kept only if it verifies."""
    history = [{"role": m["role"], "content": m["content"]} for m in (state.get("messages") or [])[:-1]][-2:]
    messages = prompts.rag_messages(state["question"], passages, history)
    deltas = deps.chat_model().stream(messages, deps.settings.max_new_tokens, cancel=cancel_event(config))
    draft = clean_answer("".join(guarded(deltas)))
    if not draft:
        return None
    question = state.get("search_query") or state["question"]
    cites = citations_for(question, draft, passages)
    ok, _why = verify_generated(question, draft, [c["quote"] for c in cites])
    return {"answer": draft, "citations": cites, "supported": ok, "related": []}


def clause_candidates(kind, question: str, passages: list[dict], per_passage: int = 2,
                      stated: list[tuple[str, str]] | None = None) -> list[dict]:
    """Every quote of the passages (best first) as a candidate, the clause check's verdict on each a feature.
    ``kind``: the taxonomy's ``ClauseKind`` asked about (None: none); what its answer states (``answer``) is
    read off the quote as a lead-in. ``stated``: the contract's statements of the value asked
    (``_stated_elsewhere``): a date one of them
    contradicts is marked ``contradicted`` (a hard gate of the verifier)."""
    slot = kind.slot if kind is not None else ""
    qwords, out = content_words(question), []
    for p in passages:
        quotes = candidate_quotes(p["text"], kind, qwords, top=per_passage)
        # a value the contract defines (its "Effective Date"): the definition of the term asked about; a clause
        # ("what happens on a change of control?") is the operative clause, not the term's definition
        defining = defining_sentence(question, p["text"]) if slot not in ("", "clause") else ""
        if defining and not any(defining in q for q in quotes):
            quotes = [defining] + quotes
        for quote in quotes:
            when = start_date(quote) if slot == "date" else ""  # read once: the lead-in and the gate
            lead = lead_in(slot, quote, when)
            cite = citation(p, quote)
            ok, _why = verify(kind, question, lead, [quote], heading=headings_of(p, cite))
            ok = ok or quote == defining  # the contract's own definition of the term asked about
            more = {}
            if stated and when:
                more["contradicted"] = contradiction(when, quote, stated)
            out.append(as_candidate({"answer": format_answer(lead, cite), "citations": [cite], "supported": ok},
                                    "rag", "clause", rank=len(out), opening=in_opening(p), **more))
    return out


def in_opening(p: dict) -> bool:
    """Unit ``p`` is the document's opening (title, parties, recitals): it starts within ``OPENING_CHARS`` of the
    text and is no numbered section (a short contract's "11.1 Obligations" may start within them too)."""
    return p.get("char_start") is not None and p["char_start"] < OPENING_CHARS and not section_number(p.get("section"))


def headings_of(p: dict, cite: dict) -> str:
    """The headings a quote of unit ``p`` stands under: the unit's first line where it is a heading ("11.
    Confidentiality" above "11.1 Obligations"), the unit's section and the quote's own."""
    first = (p.get("text") or "").lstrip().split("\n", 1)[0]
    heads = [first if heading_like(first) else "", p.get("section") or "", cite.get("section") or ""]
    return " / ".join(dict.fromkeys(h for h in heads if h))


def passage_candidates(question: str, kind, passages: list[dict], start: int = 0) -> list[dict]:
    """The best sentence(s) of each of the top passages: what was found when nothing else was. For a question
    of no known kind, an agreement's unit carries the clause finder's pick (``quote``: the sentence that best
    states the question's own words, weighed over the units read); every other passage is read here."""
    qwords, out = content_words(question), []
    for p in passages:
        picked = p.get("quote") or ""
        picked = picked if picked and picked in p["text"] else ""
        quotes = [picked] if picked else candidate_quotes(p["text"], kind, qwords, top=1, min_score=-1.0)
        if quotes:
            cite = citation(p, quotes[0])
            out.append(as_candidate({"answer": format_answer("", cite), "citations": [cite], "supported": False},
                                    "rag", "passage", rank=start + len(out), picked=bool(picked)))
    return out


def extractive_answer(kind, question: str, passages: list[dict]) -> dict | None:
    """The first quote (passages best first) that the verifier accepts, as the answer; None if none does.
    ``kind``: the taxonomy's ``ClauseKind`` asked about, or None."""
    qwords = content_words(question)
    for p in passages:
        for quote in candidate_quotes(p["text"], kind, qwords):
            lead = lead_in(kind.slot if kind is not None else "", quote)
            ok, _why = verify(kind, question, lead, [quote])
            if ok:
                cite = citation(p, quote)
                return {"answer": format_answer(lead, cite), "citations": [cite], "supported": True, "related": []}
    return None


def lead_in(slot: str, quote: str, when: str | None = None) -> str:
    """A one-line lead-in read off the quote (a jurisdiction or a date), or "" (verified like any answer);
    ``when``: the quote's ``start_date`` where the caller has read it already."""
    if slot == "jurisdiction":
        m = JURISDICTION.search(quote)
        if m:
            place = re.sub(r"^laws?\s+(?:in\s+force\s+)?(?:of|in)\s+(?:the\s+)?", "", m.group(0)).strip()
            return f"Governing law: {place}."
    if slot == "date":  # when it was made or took effect, not a date it runs until
        when = start_date(quote) if when is None else when
        if when:
            return f"Date: {when.strip()}."
    return ""


def where(c: dict) -> str:
    parts = [c["filename"]]
    if c.get("page") not in (None, ""):
        parts.append(f"page {c['page']}")
    if c.get("section"):
        parts.append(f"section {c['section']}")
    return ", ".join(parts)


def format_answer(lead: str, cite: dict) -> str:
    head = f"{lead} " if lead else ""
    return f"{head}{where(cite)}:\n\u201c{cite['quote']}\u201d"


def not_found(question: str, kind, passages: list[dict], route: str = "rag") -> dict:
    """The documents do not state it: no citations; the nearest passages listed as related, not as support."""
    qwords, related = content_words(question), []
    for p in passages[:RELATED]:
        quotes = candidate_quotes(p["text"], kind, qwords, top=1, min_score=-1.0)
        if quotes:
            related.append(citation(p, quotes[0]))
    answer = prompts.NO_SUPPORT
    if related:
        answer += " Related passages (not an answer):\n" + "\n".join(
            f"- {where(c)}: \u201c{_short(c['quote'])}\u201d" for c in related)
    return {"answer": answer, "supported": False, "citations": [], "related": related, "route": route}


def _short(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + " \u2026"


def grade_passages(question: str, passages: list[dict]) -> list[dict]:
    """Passages that share enough of the question's terms with it, best first (its key terms: periods, cue
    and filler words out, spellings and synonyms folded, ``text_terms.key_words``)."""
    words = ask_of(question).key or content_words(question)
    if not words:
        return []
    need = min(2, (len(words) + 1) // 2)  # one word for a one- or two-word question, else two
    scored = []
    for i, p in enumerate(passages):
        overlap = len(words & key_words(f"{p.get('section') or ''} {p['text']}"))
        if overlap >= need:
            scored.append((-overlap, i, p))
    return [p for _, _, p in sorted(scored, key=lambda x: (x[0], x[1]))]


def citations_for(question: str, answer: str, passages: list[dict], limit: int = 3) -> list[dict]:
    """One citation per passage: its whole sentence(s) that best match the question and the answer."""
    qwords = content_words(question) | content_words(answer)
    out, seen = [], set()
    for p in passages:
        quotes = candidate_quotes(p["text"], None, qwords, top=1)
        if not quotes or (p["doc_id"], quotes[0]) in seen:
            continue
        seen.add((p["doc_id"], quotes[0]))
        out.append(citation(p, quotes[0]))
        if len(out) >= limit:
            break
    return out
