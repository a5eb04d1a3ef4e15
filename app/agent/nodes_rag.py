"""Retrieval RAG nodes: retrieve (hybrid search), grade, answer only from the graded passages, cite."""
from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from app import prompts
from app.agent.grounding import grounded
from app.agent.state import AgentDeps, AgentState, cancel_event, passage_dict, stream_tokens
from app.agent.text import best_sentence, content_words

MAX_CONTEXT_PASSAGES = 3
MAX_CITATIONS = 3


def make_rag_nodes(deps: AgentDeps):
    def retrieve(state: AgentState) -> dict:
        hits = deps.kb.search(state["tenant"], state["question"], k=deps.settings.retrieval_k,
                              doc_ids=state.get("doc_ids"))
        return {"passages": [passage_dict(p) for p in hits], "route": "rag"}

    def grade(state: AgentState) -> dict:
        return {"graded": grade_passages(state["question"], state.get("passages") or [])}

    def answer_rag(state: AgentState, config: RunnableConfig) -> dict:
        graded = state["graded"][:MAX_CONTEXT_PASSAGES]
        history = [{"role": m["role"], "content": m["content"]} for m in (state.get("messages") or [])[:-1]][-2:]
        messages = prompts.rag_messages(state["question"], graded, history)
        deltas = deps.chat_model().stream(messages, deps.settings.max_new_tokens, cancel=cancel_event(config))
        return {"answer": stream_tokens(config, deltas)}

    def no_support(state: AgentState) -> dict:
        return {"answer": prompts.NO_SUPPORT, "supported": False, "citations": [], "route": state.get("route") or "rag"}

    def cite(state: AgentState) -> dict:
        pool = state.get("graded") if state.get("route") == "rag" else \
            grade_passages(state["question"], state.get("passages") or [])
        citations = citations_for(state["question"], state.get("answer", ""), pool or [])
        answer, _kept = grounded(state.get("answer", ""), citations)
        return {"answer": answer, "citations": citations, "supported": bool(citations)}

    return retrieve, grade, answer_rag, no_support, cite


def grade_passages(question: str, passages: list[dict]) -> list[dict]:
    """Passages that share enough content words with the question, best first."""
    words = content_words(question)
    if not words:
        return []
    need = min(2, (len(words) + 1) // 2)  # one word for a one- or two-word question, else two
    scored = []
    for i, p in enumerate(passages):
        overlap = len(words & content_words(f"{p.get('section') or ''} {p['text']}"))
        if overlap >= need:
            scored.append((-overlap, i, p))
    return [p for _, _, p in sorted(scored, key=lambda x: (x[0], x[1]))]


def citations_for(question: str, answer: str, passages: list[dict]) -> list[dict]:
    """One citation per supporting passage: its sentence that best matches the question (and answer).

    The quote is a verbatim span of the passage text, so it always really occurs in the source.
    """
    qwords, awords = content_words(question), content_words(answer)
    out, seen = [], set()
    for p in passages:
        quote, score = best_sentence(p["text"], qwords)
        if score == 0:
            continue
        if awords:  # prefer the sentence the answer draws on when it also matches the question
            alt, alt_score = best_sentence(p["text"], qwords | awords)
            if alt and len(content_words(alt) & qwords) >= score:
                quote = alt
        key = (p["doc_id"], quote)
        if key in seen or quote not in p["text"]:
            continue
        seen.add(key)
        out.append({"doc_id": p["doc_id"], "filename": p["filename"], "page": p.get("page"),
                    "section": p.get("section"), "quote": quote})
        if len(out) >= MAX_CITATIONS:
            break
    return out
