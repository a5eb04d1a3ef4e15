"""BI node: a question answered by a typed program over one in-scope table (``bi.planner``), run as SQL.
The answer states the value with its unit, the formula in words, the rows used, the SQL and a citation of
the table's page; when no confident plan exists (or anything fails) the node hands over to RAG with the
reason, never raising to the caller and never using a table outside the scope.

With a model that ``supports_sql`` (a larger model behind LEXICON_LLM_BASE_URL) the model may write the SQL;
it runs only if it reads in-scope tables and passes the same read-only validator, else the planner's program.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Optional

from app import prompts
from app.agent.bi.catalog import tables_in_scope
from app.agent.bi.format import answer_text, column_title, lookup_text, yes_no  # noqa: F401 (re-exported)
from app.agent.bi.planner import PlanResult, plan_question
from app.agent.bi.units import asked_scale
from app.agent.bi.program import ARITHMETIC, Program, fmt
from app.agent.frame import plan_of
from app.agent.state import AgentDeps, AgentState

log = logging.getLogger(__name__)
_fmt = fmt  # used by app.service


def schema_text(tables: list) -> str:
    lines = []
    for t in tables:
        cols = ", ".join(f"{c.name} {c.sql_type}" + (f" ({c.label})" if c.label else "") for c in t.columns)
        lines.append(f"TABLE {t.sql_name} -- {t.title} ({t.filename}, page {t.page}, unit {t.unit or 'n/a'}): "
                     f"row_num INTEGER, {cols}")
    return "\n".join(lines)


def chart_spec(prog: Program, columns: list[str], rows: list[list], title: str) -> Optional[dict]:
    ops = prog.operands
    if not ops or any(not isinstance(o.cell.value, (int, float)) for o in ops):
        return None
    if prog.single_row or prog.op in ("lookup", "max", "min"):
        # one series per line item, named by its row label; period bars run oldest -> newest
        by_row: dict = {}
        for o in ops:
            by_row.setdefault(id(o.row), []).append(o)
        data = []
        for os_ in by_row.values():
            if all(o.col.period is not None for o in os_):
                os_ = sorted(os_, key=lambda o: (o.col.period.year, o.col.period.quarter or 0))
            data.append({"type": "bar", "name": os_[0].row.label,
                         "x": [o.col.period.label() if o.col.period else o.col.title for o in os_],
                         "y": [o.cell.value for o in os_]})
    else:
        data = [{"type": "bar", "name": ops[0].col.title, "x": [o.row.label for o in ops],
                 "y": [o.cell.value for o in ops]}]
    return {"data": data, "layout": {"title": {"text": title}, "barmode": "group"}}


def _figure(value) -> bool:
    """A cell that holds a number (SQL returns numbers for figures, text for "n/a" or a dash)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == value  # NaN is no figure
    return bool(re.search(r"\d", str(value or "")))


def _squash(text: str) -> str:
    return "".join(text.lower().split())


def table_citation(kb, tenant: str, table, needles: list[str]) -> list[dict]:
    """A verbatim line of the table's source page that names the cited rows (or the table title)."""
    passages = [p for p in kb.document_passages(tenant, table.doc_id)]
    on_page = [p for p in passages if p.page == table.page] or passages
    for needle in [*needles, table.title]:
        squashed = _squash(needle or "")
        for p in on_page:
            for line in p.text.splitlines():  # spaces aside: a row label is read with the spaces a PDF left out
                if squashed and squashed in _squash(line) and line.strip():
                    return [{"doc_id": p.doc_id, "filename": p.filename, "page": p.page, "section": p.section,
                             "quote": line.strip()}]
    if on_page and on_page[0].text.strip():
        p = on_page[0]
        return [{"doc_id": p.doc_id, "filename": p.filename, "page": p.page, "section": p.section,
                 "quote": p.text.strip().splitlines()[0].strip()}]
    return []


def in_scope_tables(deps: AgentDeps, state: AgentState) -> list:
    tables = deps.kb.list_tables(state["tenant"])
    return tables_in_scope(deps.kb, state["tenant"], tables, state["question"], state.get("doc_ids"))[0]


def plan_for(deps: AgentDeps, state: AgentState) -> PlanResult:
    tables = deps.kb.list_tables(state["tenant"])
    return plan_question(state["question"], tables, kb=deps.kb, tenant=state["tenant"], doc_ids=state.get("doc_ids"))


def make_bi_node(deps: AgentDeps):
    def model_sql(question: str, tables: list) -> Optional[str]:
        if not deps.settings.llm_base_url:  # the small embedded model: the planner writes the SQL
            return None
        model = deps.chat_model()
        if not getattr(model, "supports_sql", False):
            return None
        text = model.complete(prompts.sql_messages(question, schema_text(tables)), 256)
        m = re.search(r"```(?:sql)?\s*(.*?)```", text, re.S)
        return (m.group(1) if m else text).strip() or None

    def from_model(state: AgentState, tables: list) -> Optional[dict]:
        try:
            sql = model_sql(state["question"], tables)
            names = {t.sql_name.lower() for t in tables}
            used = {n.lower() for n in re.findall(r'"?(t_[A-Za-z0-9_]+)"?', sql or "")}
            if not sql or not used or not used <= names:  # only the in-scope tables
                return None
            result = deps.kb.run_sql(state["tenant"], sql)  # the same read-only validator
        except Exception:
            return None
        if not result.rows:
            return None
        table = next(t for t in tables if t.sql_name.lower() in used)
        rows = [list(r) for r in result.rows]
        return {"route": "bi", "sql": sql, "columns": list(result.columns), "rows": rows,
                "answer": lookup_text(list(result.columns), rows, table.unit) + f"\nSQL: {sql}"
                + "\nNot verified: the query was written by the model; its rows are not grounded in the question.",
                "chart": None, "citations": table_citation(deps.kb, state["tenant"], table, []),
                "supported": False}

    def run_metric(state: AgentState, prog) -> Optional[dict]:
        sql = prog.sql()
        result = deps.kb.run_sql(state["tenant"], sql)
        rows = [list(r) for r in result.rows]
        columns = list(result.columns)
        expected = prog.evaluate()
        if not rows or expected is None or rows[0][0] is None or abs(rows[0][0] - expected) > 1e-6 * max(1.0, abs(expected)):
            return None  # the SQL did not compute what the program says
        text = prog.answer(rows[0][0], sql, asked_scale(state["question"]))
        citations = []
        for t in prog.tables:
            needles = list(dict.fromkeys(leaf.row.label for leaf in prog.all_leaves if leaf.table is t))
            citations += table_citation(deps.kb, state["tenant"], t, needles)
        return {"route": "bi", "sql": sql, "columns": columns, "rows": rows, "answer": text, "chart": None,
                "citations": citations, "supported": prog.grounded, "op": "metric",
                "cover": 1.0}  # a formula is grounded term by term (bi.metric_program), not by item-word share

    def run_unreported(state: AgentState, prog) -> dict:
        citations = []
        for t in prog.tables:
            citations += table_citation(deps.kb, state["tenant"], t, [])
        text = prog.answer() + "\nNot verified: " + "; ".join(prog.doubts) + "."
        return {"route": "bi", "sql": None, "columns": [], "rows": [], "answer": text, "chart": None,
                "citations": citations, "supported": False, "op": prog.op, "cover": 1.0}

    def run_program(state: AgentState, prog: Program) -> Optional[dict]:
        if getattr(prog, "kind", "") == "metric":
            return run_metric(state, prog)
        if getattr(prog, "kind", "") == "unreported":
            return run_unreported(state, prog)
        sql = prog.sql()
        result = deps.kb.run_sql(state["tenant"], sql)
        rows = [list(r) for r in result.rows]
        columns = list(result.columns)
        value = None
        if prog.op in ARITHMETIC:
            if not rows or prog.op not in columns:
                return None
            value = rows[0][columns.index(prog.op)]
            expected = prog.evaluate()
            tol = 0.006 if prog.op == "pct_change" else 1e-6 * max(1.0, abs(expected or 0.0))  # SQL rounds %
            if value is None or expected is None or abs(value - expected) > tol:
                return None  # the SQL did not compute what the program says
        elif not rows:
            return None
        elif not any(_figure(v) for r in rows for v in r[1:]):  # "n/a", "—": the cells read hold no figure
            prog.doubts.append("the cells read hold no figure")
        table = prog.table
        needles = list(dict.fromkeys(o.row.label for o in prog.operands))
        text = yes_no(state["question"], prog, value) + answer_text(prog, value, sql, asked_scale(state["question"]),
                                                                    state["question"])
        if not prog.grounded:  # stated as found, not supported
            text += "\nNot verified: " + "; ".join(prog.doubts) + "."
        return {"route": "bi", "sql": sql, "columns": columns, "rows": rows, "answer": text,
                "chart": chart_spec(prog, columns, rows, table.title),
                "citations": table_citation(deps.kb, state["tenant"], table, needles), "supported": prog.grounded,
                "op": prog.computes, "op_label": prog.op_label, "cover": prog.cover}

    def bi(state: AgentState, config=None) -> dict:
        try:
            if deps.settings.llm_base_url:  # a larger model may write the SQL over the in-scope tables
                tables = in_scope_tables(deps, state)
                out = from_model(state, tables) if tables else None
                if out:
                    return out
            plan = plan_of(config)  # built once, by the frame
            if plan is None:  # the frame did not plan (e.g. mode bi forced on a clause question)
                plan = plan_for(deps, state)
            if plan.program is None:
                return {"route": "rag", "fallback": plan.reason}
            out = run_program(state, plan.program)
            return out or {"route": "rag", "fallback": "the planned query did not return the cells it grounded"}
        except Exception as exc:  # never to the caller: RAG answers instead
            log.exception("BI route failed")
            return {"route": "rag", "fallback": f"BI failed: {type(exc).__name__}"}

    return bi
