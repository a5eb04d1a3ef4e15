"""Long-context reading: when the relevant documents fit the engine's context budget, read them whole.

The documents go into the system message and that message becomes an engine snapshot named after the
dossier (tenant + the documents' text), so a follow-up question on the same dossier reuses the prefilled
context instead of paying for it again.
"""
from __future__ import annotations

import hashlib

from langchain_core.runnables import RunnableConfig

from app import prompts
from app.agent.state import AgentDeps, AgentState, cancel_event, passage_dict, stream_tokens
from engine.snapshot import owned_name

MAX_DOSSIER_DOCS = 3
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
        ids: list[str] = []
        for p in deps.kb.search(state["tenant"], state["question"], k=deps.settings.retrieval_k):
            if p.doc_id not in ids:
                ids.append(p.doc_id)
        return ids[:MAX_DOSSIER_DOCS]

    def read_long(state: AgentState, config: RunnableConfig) -> dict:
        tenant, model = state["tenant"], deps.chat_model()
        doc_ids = pick_documents(state)
        passages = [p for d in doc_ids for p in deps.kb.document_passages(tenant, d)]
        if not passages:
            return {"route": "rag", "fallback": "no documents to read"}
        docs: dict[str, list[str]] = {}
        for p in passages:
            docs.setdefault(p.filename, []).append(p.text)
        system = prompts.long_system([(name, "\n\n".join(texts)) for name, texts in docs.items()])
        history = [{"role": m["role"], "content": m["content"]} for m in (state.get("messages") or [])[:-1]][-2:]
        messages = [system, *history, {"role": "user", "content": state["question"]}]
        budget = model.max_model_len - deps.settings.max_new_tokens
        if model.count_tokens(messages) > budget:
            return {"route": "rag", "fallback": f"dossier exceeds the context budget of {budget} tokens"}
        deltas = model.stream(messages, deps.settings.max_new_tokens, snapshot_key=dossier_name(tenant, system["content"]),
                              cancel=cancel_event(config))
        return {"answer": stream_tokens(config, deltas), "route": "long", "dossier_docs": doc_ids,
                "passages": [passage_dict(p) for p in passages]}

    return read_long
