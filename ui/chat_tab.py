"""Chat tab: streamed answers from ``service.ask_stream`` with clickable citations, a mode switch, threads.

The conversation is kept in a server-side ``gr.State`` as plain message dicts (a chart is stored as its
plotly dict and becomes a ``gr.Plot`` only when shown). Thread ids are remembered per tenant in the
browser (see ``ui.auth``), so a returning visitor can reopen a thread; its turns come back from
``service.thread_history``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import gradio as gr
import plotly.graph_objects as go

from app.schemas import MAX_QUESTION_CHARS
from ui.auth import ask_limit, require_tenant, too_long_message
from ui.charts import answer_figure
from ui.citations import answer_messages, history_messages

MODES = [("Auto", "auto"), ("RAG", "rag"), ("Long-context", "long"), ("BI", "bi")]
NEW_THREAD = "__new__"
NEW_THREAD_LABEL = "+ New thread"  # plain text: an emoji renders as a missing-glyph box without emoji fonts
MAX_THREADS_REMEMBERED = 30


@dataclass
class ChatTab:
    chatbot: gr.Chatbot
    messages: gr.State
    thread_id: gr.State
    threads: gr.Dropdown


def to_chatbot(messages: list[dict]) -> list[dict]:
    """Stored messages -> what the Chatbot shows (chart dicts become plots)."""
    shown = []
    for m in messages:
        if isinstance(m.get("content"), dict) and "plotly" in m["content"]:
            shown.append({"role": m["role"], "content": gr.Plot(go.Figure(m["content"]["plotly"]))})
        else:
            shown.append(m)
    return shown


def thread_choices(visit: dict, tenant: str) -> list[tuple[str, str]]:
    threads = (visit or {}).get("threads", {}).get(tenant, [])
    return [(NEW_THREAD_LABEL, NEW_THREAD)] + [(t["title"], t["id"]) for t in threads]


def remember_thread(visit: dict, tenant: str, thread_id: str, question: str) -> dict:
    """A copy of ``visit`` with ``thread_id`` first in the tenant's list and marked current."""
    visit = {**(visit or {})}
    threads = {**visit.get("threads", {})}
    mine = [t for t in threads.get(tenant, []) if t["id"] != thread_id]
    known = next((t for t in threads.get(tenant, []) if t["id"] == thread_id), None)
    title = known["title"] if known else (question[:60] + ("…" if len(question) > 60 else ""))
    threads[tenant] = ([{"id": thread_id, "title": title}] + mine)[:MAX_THREADS_REMEMBERED]
    visit["threads"] = threads
    visit["current"] = {**visit.get("current", {}), tenant: thread_id}
    return visit


def load_thread(service: Any, tenant: str, thread_id: str | None) -> list[dict]:
    if not thread_id or thread_id == NEW_THREAD:
        return []
    try:
        return history_messages(service.thread_history(tenant, thread_id) or [])
    except Exception as exc:  # a forgotten or foreign thread: say so instead of an empty chat
        return [{"role": "assistant", "content": f"Could not load this thread: {exc}"}]


def stream_answer(service: Any, tenant: str, question: str, mode: str, thread_id: str | None,
                  messages: list[dict]) -> Iterator[tuple[list[dict], dict | None]]:
    """Yield (messages, final_answer_or_None) while the answer streams in."""
    messages = [*messages, {"role": "user", "content": question}, {"role": "assistant", "content": "…"}]
    yield messages, None
    text, final = "", None
    events = service.ask_stream(tenant, question, mode=mode, thread_id=thread_id)
    try:
        for event in events:
            kind = event.get("type")
            if kind == "token":
                text += event.get("text", "")
                messages[-1] = {"role": "assistant", "content": text or "…"}
                yield messages, None
            elif kind == "final":
                final = event["answer"]
                if hasattr(final, "model_dump"):
                    final = final.model_dump()
            elif kind == "error":
                raise gr.Error(str(event.get("message") or event.get("error") or "the agent failed"))
    finally:  # the browser went away or failed: closing the stream cancels the engine request
        close = getattr(events, "close", None)
        if close is not None:
            close()
    if final is None:
        raise gr.Error("The answer stream ended without a final answer.")
    messages = messages[:-1] + answer_messages(final)
    figure = answer_figure(final, "auto")  # the agent's chart, else a bar chart of its SQL rows
    if figure is not None:
        messages.append({"role": "assistant", "content": {"plotly": figure.to_dict()}})
    yield messages, final


def build_chat_tab(service: Any, session: gr.State, visit: gr.BrowserState) -> ChatTab:
    messages = gr.State([])
    thread_id = gr.State(None)
    with gr.Row():
        with gr.Column(scale=1, min_width=220):
            threads = gr.Dropdown(choices=[(NEW_THREAD_LABEL, NEW_THREAD)], value=NEW_THREAD, label="Thread",
                                  elem_id="chat-thread", interactive=True)
            mode = gr.Radio(choices=MODES, value="auto", label="Mode", elem_id="chat-mode",
                            info="Auto picks RAG, whole-document reading or SQL over tables.")
            gr.Markdown("Citations appear under each answer; click one to read the quoted passage "
                        "with its document and page.")
        with gr.Column(scale=4):
            chatbot = gr.Chatbot(label="Lexicon", elem_id="chat-bot", height=520, feedback_options=None,
                                 placeholder="Ask about your contracts and financial statements.")
            with gr.Row():
                question = gr.Textbox(placeholder="e.g. What is the termination notice period?",
                                      show_label=False, scale=5, elem_id="chat-question", submit_btn=False)
                send = gr.Button("Ask", variant="primary", scale=1, elem_id="chat-send")

    def ask(q: str, mode_value: str, msgs: list[dict], tid: str | None, sess: dict | None, vis: dict):
        tenant = require_tenant(sess)
        q = (q or "").strip()
        if not q:
            raise gr.Error("Type a question first.")
        if len(q) > MAX_QUESTION_CHARS:  # a note in the chat; the question stays in the box to shorten
            gr.Warning(too_long_message(q))
            notice = [*msgs, {"role": "assistant", "content": too_long_message(q)}]
            yield to_chatbot(notice), msgs, gr.skip(), tid, gr.skip(), gr.skip()
            return
        final = None
        for msgs_now, final in stream_answer(service, tenant, q, mode_value, tid, msgs):
            yield to_chatbot(msgs_now), msgs_now, "", tid, gr.skip(), gr.skip()
        new_tid = final.get("thread_id") or tid
        vis = remember_thread(vis, tenant, new_tid, q) if new_tid else vis
        yield (to_chatbot(msgs_now), msgs_now, "", new_tid,
               gr.Dropdown(choices=thread_choices(vis, tenant), value=new_tid or NEW_THREAD), vis)

    outputs = [chatbot, messages, question, thread_id, threads, visit]
    inputs = [question, mode, messages, thread_id, session, visit]
    send.click(ask, inputs, outputs, concurrency_limit=ask_limit(service), concurrency_id="lexicon-ask")
    question.submit(ask, inputs, outputs, concurrency_limit=ask_limit(service), concurrency_id="lexicon-ask")

    def pick_thread(choice: str, sess: dict | None, vis: dict):
        tenant = require_tenant(sess)
        tid = None if choice == NEW_THREAD else choice
        msgs = load_thread(service, tenant, tid)
        vis = {**(vis or {}), "current": {**(vis or {}).get("current", {}), tenant: tid}}
        return to_chatbot(msgs), msgs, tid, vis

    threads.input(pick_thread, [threads, session, visit], [chatbot, messages, thread_id, visit])
    return ChatTab(chatbot=chatbot, messages=messages, thread_id=thread_id, threads=threads)


def restore_chat(service: Any, tenant: str, visit: dict) -> tuple:
    """Values for (chatbot, messages, thread_id, threads) right after login: reopen the last thread."""
    tid = (visit or {}).get("current", {}).get(tenant)
    msgs = load_thread(service, tenant, tid)
    return (to_chatbot(msgs), msgs, tid,
            gr.Dropdown(choices=thread_choices(visit, tenant), value=tid or NEW_THREAD))
