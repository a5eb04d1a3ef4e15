"""The agent graph: frame -> (bi | read_long | retrieve -> grade -> answer_rag) -> verify -> finish.

``frame`` reads the question once (``app.agent.frame.read_question``): scope, answer kind, clause kind,
instructions and the BI plan, built once and kept for the bi node. Routing is a pure function of the frame.
Each route produces candidates; ``verify`` (the one calibrated verifier) decides which stands and whether it
is supported. A question naming a company that no document in scope is about goes from ``frame`` straight to
finish with "the documents do not contain" it, in every mode. A route that cannot answer hands over to
retrieval RAG (BI with no matching table, a dossier that does not fit the context budget). Threads persist through a LangGraph checkpointer: SQLite at
``settings.resolved_checkpoint_url`` by default, Postgres when that is a postgres URL.
"""
from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from typing import Literal

from langgraph.graph import END, START, StateGraph

from langchain_core.runnables import RunnableConfig

from app.agent.frame import QuestionFrame, read_question
from app.agent.nodes_bi import make_bi_node
from app.agent.nodes_long import make_long_node
from app.agent.nodes_rag import make_rag_nodes
from app.agent.nodes_verify import as_candidate, make_verify_node
from app.agent.state import AgentDeps, AgentState, scratch_of, stream_final_text

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
    retrieve, grade, answer_rag = make_rag_nodes(deps)
    bi_node, long_node, verify = make_bi_node(deps), make_long_node(deps), make_verify_node(deps)

    def frame(state: AgentState, config: RunnableConfig) -> dict:
        """The one reading of the question (``read_question``); a company no document in scope is about is
        answered here, in every mode: never from another company's files."""
        scratch = scratch_of(config)
        if scratch is not None and "deadline" not in scratch:
            scratch["started"] = time.monotonic()
            scratch["deadline"] = scratch["started"] + float(getattr(deps.settings, "ask_budget_s", 60.0))
        fr = read_question(deps.kb.for_tenant(state["tenant"]), state["question"], state.get("doc_ids"),
                           state.get("mode") or "auto", scratch)
        out: dict = {"frame": fr.to_state(), "clause_type": fr.clause_kind, "search_query": fr.query}
        if fr.not_in_documents:
            out.update(route="none", answer=fr.not_in_documents, supported=False, citations=[])
        return out

    def route(state: AgentState) -> Literal["bi", "read_long", "retrieve", "finish"]:
        """A pure function of the frame and the mode."""
        if state.get("route") == "none":
            return "finish"
        fr = QuestionFrame.from_state(state["frame"])
        mode = state.get("mode") or "auto"
        if mode != "auto":
            return {"bi": "bi", "long": "read_long"}.get(mode, "retrieve")
        if fr.bi_planned:
            return "bi"
        previous = [m for m in (state.get("messages") or [])[:-1] if m["role"] == "assistant"]
        follow_up = bool(previous) and (previous[-1].get("answer") or {}).get("route") == "long"
        return "read_long" if fr.wants_long or follow_up else "retrieve"

    def bi(state: AgentState, config: RunnableConfig) -> dict:
        out = bi_node(state, config)
        if out.get("route") != "bi":
            return out  # handed over to RAG, with the reason
        # a formula metric (DPO, margins, turnover) is its own kind of candidate: calibrated apart from table programs
        source = "metric" if out.get("op") == "metric" else "bi"
        return {"route": "bi", "candidates": [as_candidate(out, "bi", source)]}

    def read_long(state: AgentState, config: RunnableConfig) -> dict:
        out = long_node(state, config)
        if out.get("route") == "rag":
            return out
        keep = {k: v for k, v in out.items() if k in ("dossier_docs", "passages", "clause_type")}
        return {**keep, "route": "long", "candidates": [as_candidate(out, "long", "long")]}

    def after_bi(state: AgentState) -> Literal["verify", "retrieve"]:
        return "verify" if state["route"] == "bi" else "retrieve"

    def after_long(state: AgentState) -> Literal["verify", "retrieve"]:
        return "verify" if state["route"] == "long" else "retrieve"

    def finish(state: AgentState) -> dict:
        answer = {"answer": state.get("answer") or "", "citations": state.get("citations") or [],
                  "route": state.get("route") or "rag", "sql": state.get("sql"), "columns": state.get("columns"),
                  "rows": state.get("rows"), "chart": state.get("chart"), "supported": bool(state.get("supported")),
                  "related": state.get("related") or [], "verdict": state.get("verdict")}
        stream_final_text(answer["answer"])  # the stream carries only the text that stands in the answer
        return {"messages": [{"role": "assistant", "content": answer["answer"], "answer": answer}]}

    g = StateGraph(AgentState)
    g.add_node("frame", frame)
    g.add_node("bi", bi)
    g.add_node("read_long", read_long)
    g.add_node("retrieve", retrieve)
    g.add_node("grade", grade)
    g.add_node("answer_rag", answer_rag)
    g.add_node("verify", verify)
    g.add_node("finish", finish)
    g.add_edge(START, "frame")
    g.add_conditional_edges("frame", route)
    g.add_conditional_edges("bi", after_bi)
    g.add_conditional_edges("read_long", after_long)
    g.add_edge("retrieve", "grade")
    g.add_edge("grade", "answer_rag")
    g.add_edge("answer_rag", "verify")
    g.add_edge("verify", "finish")
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer)
