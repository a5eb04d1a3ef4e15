"""The agent graph: route -> (bi | read_long | retrieve -> grade -> answer_rag) -> cite -> finish.

A question naming a company that no document in scope is about goes straight to finish with "the documents
do not contain" (``company_scope``), in every mode.

A route that cannot answer hands over to retrieval RAG (BI with no matching table, a dossier that does
not fit the context budget). Threads persist through a LangGraph checkpointer: SQLite at
``settings.resolved_checkpoint_url`` by default, Postgres when that is a postgres URL.
"""
from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Literal

from langgraph.graph import END, START, StateGraph

from app.agent.company_scope import company_scope, not_in_documents_text
from app.agent.nodes_bi import bi_confident, make_bi_node
from app.agent.nodes_long import make_long_node, wants_long
from app.agent.nodes_rag import make_rag_nodes
from app.agent.state import AgentDeps, AgentState, stream_final_text

log = logging.getLogger(__name__)


def make_checkpointer(url: str):
    """-> (checkpointer, closer)."""
    if url.startswith(("postgresql", "postgres://")):
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True,
                               prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)
        saver.setup()
        return saver, conn.close
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else url
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return saver, conn.close


def build_graph(deps: AgentDeps, checkpointer=None):
    retrieve, grade, answer_rag, no_support, cite = make_rag_nodes(deps)

    def route(state: AgentState) -> dict:
        mode = state.get("mode") or "auto"
        named = named_elsewhere(state)
        if named:  # a company no document in scope is about: never answered from another company's files
            return {"route": "none", "answer": named, "supported": False, "citations": []}
        if mode != "auto":
            return {"route": mode}
        q = state["question"]
        if bi_confident(deps, state):  # a table in scope answers it with a confident program
            return {"route": "bi"}
        previous = [m for m in (state.get("messages") or [])[:-1] if m["role"] == "assistant"]
        follow_up = bool(previous) and (previous[-1].get("answer") or {}).get("route") == "long"
        return {"route": "long" if wants_long(q) or follow_up else "rag"}

    def named_elsewhere(state: AgentState) -> str:
        try:
            cs = company_scope(deps.kb, state["tenant"], state["question"], state.get("doc_ids"))
        except Exception:  # the check never blocks a question
            log.exception("company scope failed")
            return ""
        return not_in_documents_text(cs) if cs.out_of_scope else ""

    def after_route(state: AgentState) -> Literal["bi", "read_long", "retrieve", "finish"]:
        return {"bi": "bi", "long": "read_long", "none": "finish"}.get(state["route"], "retrieve")

    def after_bi(state: AgentState) -> Literal["finish", "retrieve"]:
        return "finish" if state["route"] == "bi" else "retrieve"

    def after_long(state: AgentState) -> Literal["cite", "retrieve"]:
        return "cite" if state["route"] == "long" else "retrieve"

    def after_grade(state: AgentState) -> Literal["answer_rag", "no_support"]:
        return "answer_rag" if state.get("graded") else "no_support"

    def finish(state: AgentState) -> dict:
        answer = {"answer": state.get("answer") or "", "citations": state.get("citations") or [],
                  "route": state.get("route") or "rag", "sql": state.get("sql"), "columns": state.get("columns"),
                  "rows": state.get("rows"), "chart": state.get("chart"), "supported": bool(state.get("supported")),
                  "related": state.get("related") or []}
        stream_final_text(answer["answer"])  # the stream carries only the text that stands in the answer
        return {"messages": [{"role": "assistant", "content": answer["answer"], "answer": answer}]}

    g = StateGraph(AgentState)
    g.add_node("route", route)
    g.add_node("bi", make_bi_node(deps))
    g.add_node("read_long", make_long_node(deps))
    g.add_node("retrieve", retrieve)
    g.add_node("grade", grade)
    g.add_node("answer_rag", answer_rag)
    g.add_node("no_support", no_support)
    g.add_node("cite", cite)
    g.add_node("finish", finish)
    g.add_edge(START, "route")
    g.add_conditional_edges("route", after_route)
    g.add_conditional_edges("bi", after_bi)
    g.add_conditional_edges("read_long", after_long)
    g.add_edge("retrieve", "grade")
    g.add_conditional_edges("grade", after_grade)
    g.add_edge("answer_rag", "cite")
    g.add_edge("cite", "finish")
    g.add_edge("no_support", "finish")
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer)

