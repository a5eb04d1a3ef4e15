"""The agent's typed state. Passages are plain dicts so every checkpointer can store them."""
from __future__ import annotations

import operator
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
    supported: bool
    sql: Optional[str]
    columns: Optional[list[str]]
    rows: Optional[list[list[Any]]]
    chart: Optional[dict]
    dossier_docs: list[str]  # documents of the last long-context read (follow-ups reuse them)
    messages: Annotated[list[dict], operator.add]  # the conversation: {"role", "content", "answer"?}


def turn_input(tenant: str, question: str, mode: str, doc_ids: Optional[list[str]]) -> dict:
    """A new turn: resets every per-turn field, appends the user's message."""
    return {"tenant": tenant, "question": question, "mode": mode, "doc_ids": doc_ids, "route": "",
            "fallback": None, "passages": [], "graded": [], "answer": "", "citations": [], "supported": False,
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
    return {"chunk_id": p.chunk_id, "doc_id": p.doc_id, "filename": p.filename, "page": p.page,
            "section": p.section, "text": p.text, "score": float(p.score)}


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


def cancel_event(config):
    return ((config or {}).get("configurable") or {}).get("cancel")
