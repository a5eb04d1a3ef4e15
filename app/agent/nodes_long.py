"""Long-context reading: when the relevant documents fit the engine's context budget, read them whole.

The documents go into the system message and that message becomes an engine snapshot named after the
dossier (tenant + the documents' text), so a follow-up question on the same dossier reuses the prefilled
context instead of paying for it again.

What the user reads rests on the text: a clause question about the dossier is answered extractively
(``nodes_rag.extractive_answer`` over the dossier's documents, verified); a summary is generated under a loop
guard (``repetition.guarded`` stops the model once it repeats itself) and then each of its sentences is kept
only where a sentence of the documents supports it (shared content words, every figure and name in that
sentence), each kept point cited. When no point survives, the summary is the documents' own opening sentence
of each section, each cited.
"""
from __future__ import annotations

import hashlib

from langchain_core.runnables import RunnableConfig

from app import prompts
from app.agent import clause_types, scope as scope_mod
from app.agent.clause_search import find_passages
from app.agent.grounding import clean_answer
from app.agent.nodes_rag import citation, extractive_answer, not_found
from app.agent.quotes import quote_spans
from app.agent.repetition import dedupe_sentences, guarded
from app.agent.state import AgentDeps, AgentState, cancel_event, passage_dict
from app.agent.text import content_words
from app.agent.verify import answer_in_span
from ingest.sentences import sentence_spans
from engine.snapshot import owned_name

MAX_DOSSIER_DOCS = 3
MAX_POINTS = 8
LONG_CUES = ("summar", "whole", "entire", "overall", "read the", "full text", "all of the", "dossier", "throughout")


def wants_long(question: str) -> bool:
    q = question.lower()
    return any(c in q for c in LONG_CUES)


def dossier_name(tenant: str, system_text: str) -> str:
    """The engine snapshot key: in the tenant's namespace (``/v1`` callers see ``dossier-<hash>``)."""
    return owned_name(tenant, f"dossier-{hashlib.sha1(system_text.encode()).hexdigest()[:16]}")


def make_long_node(deps: AgentDeps):
    def pick_documents(state: AgentState) -> list[str]:
        if state.get("doc_ids"):
            return list(state["doc_ids"])[:MAX_DOSSIER_DOCS]
        previous = [m for m in (state.get("messages") or [])[:-1] if m["role"] == "assistant"]
        if previous and (previous[-1].get("answer") or {}).get("route") == "long" and state.get("dossier_docs"):
            return list(state["dossier_docs"])  # a follow-up on the same dossier
        scope = scope_mod.resolve(deps.kb, state["tenant"], state["question"])
        if scope.doc_ids:
            return scope.doc_ids[:MAX_DOSSIER_DOCS]
        ids: list[str] = []
        for p in deps.kb.search(state["tenant"], state["question"], k=deps.settings.retrieval_k):
            if p.doc_id not in ids:
                ids.append(p.doc_id)
        return ids[:MAX_DOSSIER_DOCS]

    def clause_in_dossier(state: AgentState, doc_ids: list[str], passages: list[dict]) -> dict | None:
        scope = scope_mod.resolve(deps.kb, state["tenant"], state["question"], doc_ids)
        ctype = clause_types.detect(scope.query)
        if ctype is None or wants_long(state["question"]):
            return None
        hits = [passage_dict(p) for p in find_passages(deps.kb, state["tenant"], state["question"], k=5,
                                                         doc_ids=doc_ids, scope=scope)]
        out = extractive_answer(ctype.name, scope.query, hits) or not_found(scope.query, ctype.name, hits)
        return {**out, "route": "long", "dossier_docs": doc_ids, "passages": passages, "clause_type": ctype.name}

    def read_long(state: AgentState, config: RunnableConfig) -> dict:
        tenant, model = state["tenant"], deps.chat_model()
        doc_ids = pick_documents(state)
        found = [p for d in doc_ids for p in deps.kb.document_passages(tenant, d)]
        if not found:
            return {"route": "rag", "fallback": "no documents to read"}
        passages = [passage_dict(p) for p in found]
        answered = clause_in_dossier(state, doc_ids, passages)
        if answered is not None:
            return answered
        docs: dict[str, list[str]] = {}
        for p in found:
            docs.setdefault(p.filename, []).append(p.text)
        system = prompts.long_system([(name, "\n\n".join(texts)) for name, texts in docs.items()])
        history = [{"role": m["role"], "content": m["content"]} for m in (state.get("messages") or [])[:-1]][-2:]
        messages = [system, *history, {"role": "user", "content": state["question"]}]
        budget = model.max_model_len - deps.settings.max_new_tokens
        if model.count_tokens(messages) > budget:
            return {"route": "rag", "fallback": f"dossier exceeds the context budget of {budget} tokens"}
        deltas = model.stream(messages, deps.settings.max_new_tokens, snapshot_key=dossier_name(tenant, system["content"]),
                              cancel=cancel_event(config))
        draft = dedupe_sentences(clean_answer("".join(guarded(deltas))))
        points = cited_points(draft, passages) or outline(passages)
        answer = "\n".join(f"- {text} [{i}]" for i, (text, _c) in enumerate(points, 1))
        return {"answer": answer, "citations": [c for _t, c in points], "supported": bool(points), "related": [],
                "route": "long", "dossier_docs": doc_ids, "passages": passages}

    return read_long


def _sentences(passages: list[dict]):
    for p in passages:
        for a, b in quote_spans(p["text"]):
            yield p, p["text"][a:b].strip()


def cited_points(draft: str, passages: list[dict]) -> list[tuple[str, dict]]:
    """Sentences of a generated summary that a document sentence supports: (sentence, its citation)."""
    source = list(_sentences(passages))
    points: list[tuple[str, dict]] = []
    for a, b in sentence_spans(draft):
        sentence = draft[a:b].strip()
        words = content_words(sentence)
        if len(words) < 3:
            continue
        best, best_overlap = None, 0
        for p, quote in source:
            overlap = len(words & content_words(quote))
            if overlap > best_overlap:
                best, best_overlap = (p, quote), overlap
        if best is None or best_overlap < max(3, len(words) // 2):
            continue
        ok, _missing = answer_in_span(sentence, [best[1]])
        if ok:
            points.append((sentence, citation(best[0], best[1])))
        if len(points) >= MAX_POINTS:
            break
    return points


def outline(passages: list[dict]) -> list[tuple[str, dict]]:
    """The documents' own opening sentence of each section (each a verbatim quote, cited)."""
    points, seen = [], set()
    for p in passages:
        key = (p["doc_id"], p.get("section") or "")
        if key in seen:
            continue
        seen.add(key)
        spans = quote_spans(p["text"])
        if spans:
            quote = p["text"][spans[0][0]:spans[0][1]].strip()
            points.append((quote, citation(p, quote)))
        if len(points) >= MAX_POINTS:
            break
    return points
