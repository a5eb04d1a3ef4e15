"""Turn an agent answer into chat messages: the answer text, then one collapsed box per citation.

Each citation is a Gradio "thought" message (``metadata.title``): its title names the document and page,
and clicking it opens the quoted passage. ``status: "done"`` makes the box start closed.
"""
from __future__ import annotations

import html
from typing import Any

ROUTE_LABELS = {"rag": "RAG", "long": "long-context", "bi": "BI", "auto": "auto"}


def citation_title(index: int, citation: dict) -> str:
    page = citation.get("page")
    where = f"page {page}" if page not in (None, "", 0) else "no page"
    return f"[{index}] {citation.get('filename') or citation.get('doc_id') or 'document'} · {where}"


def citation_body(citation: dict) -> str:
    quote = (citation.get("quote") or "").strip() or "(no passage text)"
    quoted = "\n".join("> " + html.escape(line, quote=False) if line.strip() else ">"
                        for line in quote.splitlines())
    section = citation.get("section")
    where = [f"**Document:** {html.escape(str(citation.get('filename') or citation.get('doc_id')))}"]
    if citation.get("page") not in (None, ""):
        where.append(f"**Page:** {citation['page']}")
    if section:
        where.append(f"**Section:** {html.escape(str(section))}")
    return quoted + "\n\n" + " · ".join(where)


def citation_messages(citations: list[dict]) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": citation_body(c),
            "metadata": {"title": citation_title(i, c), "status": "done", "id": f"cite-{i}"},
        }
        for i, c in enumerate(citations, start=1)
    ]


def answer_footer(answer: dict) -> str:
    """A one-line note under the answer: which route answered and whether the sources support it."""
    route = answer.get("route")
    parts = [f"Answered by the {ROUTE_LABELS.get(route, route)} route"] if route else []
    if answer.get("citations"):
        parts.append(f"{len(answer['citations'])} source(s) below — click one to read the passage")
    note = f"*{' · '.join(parts)}.*" if parts else ""
    if answer.get("supported") is False:
        note = "⚠️ *The retrieved sources do not clearly support this answer.* " + note
    return note


def answer_text(answer: dict) -> str:
    text = (answer.get("answer") or "").strip() or "(no answer)"
    if answer.get("sql"):
        text += f"\n\n```sql\n{answer['sql']}\n```"
    footer = answer_footer(answer)
    return text + ("\n\n" + footer if footer else "")


def answer_messages(answer: dict) -> list[dict]:
    """The assistant messages for a final answer (the text, then the citations)."""
    return [{"role": "assistant", "content": answer_text(answer)}, *citation_messages(answer.get("citations") or [])]


def history_messages(history: list[dict[str, Any]]) -> list[dict]:
    """Chat messages for a stored thread: user turns as they are, assistant turns with their citations.

    Accepts entries shaped like ``{"role", "content"}`` with optional ``citations`` (a list of Citation
    dicts) or an ``answer`` dict (a stored AgentAnswer).
    """
    messages: list[dict] = []
    for turn in history:
        role = turn.get("role")
        if role == "user":
            messages.append({"role": "user", "content": str(turn.get("content") or "")})
        elif role == "assistant":
            answer = turn.get("answer")
            if not isinstance(answer, dict):
                answer = {"answer": turn.get("content"), "citations": turn.get("citations") or [],
                          "route": turn.get("route"), "supported": turn.get("supported"), "sql": turn.get("sql")}
            messages.extend(answer_messages(answer))
    return messages
