"""The agent's typed state. Passages are plain dicts so every checkpointer can store them."""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Optional, TypedDict


class AgentState(TypedDict, total=False):
    tenant: str
    question: str
    mode: str  # auto | rag | long | bi
    doc_ids: Optional[list[str]]
    route: str  # rag | long | bi | none
    fallback: Optional[str]  # why a route handed over to RAG
    passages: list[dict]  # retrieved (rag) or whole-document (long) passages
    graded: list[dict]
    answer: str
    citations: list[dict]
    related: list[dict]  # nearest passages when nothing verified (shown as related, never as support)
    search_query: str  # the question with the document names taken out (app.agent.scope)
    clause_type: Optional[str]  # the taxonomy's clause kind (its name) the question asks about, if any
    supported: bool
    sql: Optional[str]
    columns: Optional[list[str]]
    rows: Optional[list[list[Any]]]
    chart: Optional[dict]
    dossier_docs: list[str]  # documents of the last long-context read (follow-ups reuse them)
    frame: Optional[dict]  # app.agent.frame.QuestionFrame, read once by the first node
    candidates: list[dict]  # what the routes found, for the verify node (app.agent.verifier)
    verdict: Optional[dict]  # the verifier's verdict on the answer: score, threshold, reasons, features
    messages: Annotated[list[dict], operator.add]  # the conversation: {"role", "content", "answer"?}


def turn_input(tenant: str, question: str, mode: str, doc_ids: Optional[list[str]]) -> dict:
    """A new turn: resets every per-turn field, appends the user's message."""
    return {"tenant": tenant, "question": question, "mode": mode, "doc_ids": doc_ids, "route": "",
            "fallback": None, "passages": [], "graded": [], "answer": "", "citations": [], "related": [],
            "search_query": "", "clause_type": None, "supported": False, "frame": None, "candidates": [],
            "verdict": None,
            "sql": None, "columns": None, "rows": None, "chart": None,
            "messages": [{"role": "user", "content": question}]}


@dataclass
class AgentDeps:
    kb: Any  # ingest KnowledgeBase
    settings: Any
    model_factory: Callable[[], Any]  # -> app.llm_client.ChatModel, built lazily by the service

    def chat_model(self):
        return self.model_factory()


def passage_dict(p) -> dict:
    """An ``ingest.types.Passage`` as the state carries it."""
    return {"chunk_id": p.chunk_id, "doc_id": p.doc_id, "filename": p.filename, "page": p.page,
            "section": p.section, "text": p.text, "score": float(p.score), "char_start": p.char_start,
            "quote": p.quote, "marks": [list(m) for m in getattr(p, "marks", ())]}


def citation(p: dict, quote: str) -> dict:
    """A quote of passage ``p`` cited where it lies: a passage joined from several chunks (a clause unit) is cited
    with the page and section of the chunk the quote starts in, not its first chunk's."""
    page, section = p.get("page"), p.get("section")
    at = _position(p.get("text") or "", quote) if p.get("marks") else -1
    for offset, m_page, m_section in p.get("marks") or ():
        if at < offset:
            break
        page, section = m_page, m_section
    return {"doc_id": p["doc_id"], "filename": p["filename"], "page": page, "section": section, "quote": quote}


def _position(text: str, quote: str) -> int:
    """Where ``quote`` starts in ``text`` (its first words, spacing aside), or -1."""
    at = text.find(quote)
    if at >= 0 or not quote.strip():
        return at
    words = quote.split()[:8]
    m = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return m.start() if m else -1


def stream_tokens(config, deltas, cancel_key: str = "cancel") -> str:
    """Forward each delta to the graph's custom stream (the service turns them into token events)."""
    from langgraph.config import get_stream_writer
    try:
        writer = get_stream_writer()
    except Exception:  # not running inside a streaming graph
        writer = None
    parts = []
    for delta in deltas:
        parts.append(delta)
        if writer is not None:
            writer({"type": "token", "text": delta})
    return "".join(parts).strip()


def stream_final_text(text: str) -> None:
    """Send the final answer's text to the graph's custom stream as token events, word by word. Drafts are
    never streamed: what a client receives as tokens is exactly the answer that stands (verified)."""
    import re

    from langgraph.config import get_stream_writer
    try:
        writer = get_stream_writer()
    except Exception:  # not running inside a streaming graph
        return
    for piece in re.findall(r"\s*\S+", text.strip()):
        writer({"type": "token", "text": piece})


def scratch_of(config) -> dict:
    """The run's scratch (not checkpointed): the BI plan the frame built, the time budget's deadline. The
    run's own dict, empty or not (an empty one is where the frame writes; a fresh ``{}`` would lose it)."""
    scratch = ((config or {}).get("configurable") or {}).get("scratch")
    return scratch if scratch is not None else {}


def past_budget(config, share: float = 1.0) -> bool:
    """True once ``share`` of the question's time budget is spent (no deadline set: never)."""
    import time

    s = scratch_of(config)
    if "deadline" not in s:
        return False
    start, end = s["started"], s["deadline"]
    return time.monotonic() >= start + share * (end - start)


def cancel_event(config):
    return ((config or {}).get("configurable") or {}).get("cancel")
