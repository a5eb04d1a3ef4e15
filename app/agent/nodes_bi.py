"""BI node: numeric questions answered by SQL over the extracted tables, with the SQL, the result table,
a plotly chart spec and a citation of the table's source page.

With the small embedded model the deterministic planner (``bi_planner``) writes the SQL; with a model that
``supports_sql`` (a larger model behind an OpenAI-compatible server) the model writes it, and the SQL is
validated read-only by ``KnowledgeBase.run_sql`` before it runs (falling back to the planner if rejected).
"""
from __future__ import annotations

import re
from typing import Any, Optional

from app import prompts
from app.agent.bi_planner import BiPlan, column_period, plan_question
from app.agent.state import AgentDeps, AgentState


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and 1900 <= v <= 2100:  # a year read as REAL
        return str(int(v))
    if isinstance(v, float):
        return f"{v:,.2f}".rstrip("0").rstrip(".") if abs(v) < 1e15 else str(v)
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def column_title(table, name: str) -> str:
    col = next((c for c in table.columns if c.name == name), None)
    p = column_period(name, col.label if col else "")
    return p.label() if p else ((col.label if col and col.label else name))


def schema_text(tables: list) -> str:
    lines = []
    for t in tables:
        cols = ", ".join(f"{c.name} {c.sql_type}" + (f" ({c.label})" if c.label else "") for c in t.columns)
        lines.append(f"TABLE {t.sql_name} -- {t.title} ({t.filename}, page {t.page}, unit {t.unit or 'n/a'}): "
                     f"row_num INTEGER, {cols}")
    return "\n".join(lines)


def answer_text(plan: Optional[BiPlan], columns: list[str], rows: list[list], unit: str) -> str:
    if not rows:
        return "The query returned no rows."
    unit_s = f" ({unit})" if unit else ""
    table = plan.table if plan else None
    if plan and plan.kind == "growth":
        parts = []
        for r in rows:
            label, new, old, pct = (r[0], r[1], r[2], r[3]) if len(r) >= 4 else (None, *r[:3])
            a, b = plan.value_columns[:2] if len(plan.value_columns) >= 2 else ("current", "previous")
            a_t, b_t = (column_title(table, a), column_title(table, b)) if plan.label_column != a else (a, b)
            metric = column_title(table, plan.value_columns[0]) if table else plan.value_columns[0]
            name = f"{label}: " if plan.row_labels else f"{metric} in {_fmt(label)}: "
            if plan.row_labels:
                parts.append(f"{name}{a_t} {_fmt(new)} vs {b_t} {_fmt(old)}, growth {_fmt(pct)}%")
            else:
                parts.append(f"{name}{_fmt(new)} vs {_fmt(old)} the year before, growth {_fmt(pct)}%")
        return "; ".join(parts) + unit_s + "."
    if plan and plan.kind in ("sum", "average"):
        what = ", ".join(plan.row_labels) or column_title(table, plan.value_columns[0])
        cols = ", ".join(column_title(table, c) for c in plan.value_columns) if plan.row_labels else ""
        word = "Total" if plan.kind == "sum" else "Average"
        return f"{word} of {what}{' in ' + cols if cols else ''}: {_fmt(rows[0][0])}{unit_s}."
    parts = []
    titles = [column_title(table, c) if table else c for c in columns]
    for r in rows:
        if len(r) > 1:
            parts.append(f"{_fmt(r[0])}: " + ", ".join(f"{titles[i]} {_fmt(v)}" for i, v in enumerate(r[1:], 1)))
        else:
            parts.append(_fmt(r[0]))
    return "; ".join(parts) + unit_s + "."


def chart_spec(plan: Optional[BiPlan], columns: list[str], rows: list[list], title: str) -> Optional[dict]:
    axis = {plan.label_column, "period"} if plan else set()  # a year column is the x axis, not a series
    numeric = [i for i, c in enumerate(columns)
               if c not in axis and rows and all(isinstance(r[i], (int, float)) for r in rows)]
    if not rows or not numeric:
        return None
    table = plan.table if plan else None
    if plan and plan.kind == "growth":
        numeric = numeric[:2] if plan.row_labels else [1, 2][: len(columns) - 1]
    labels = [i for i in range(len(columns)) if i not in numeric]
    names = [" ".join(_fmt(r[i]) for i in labels) or str(n + 1) for n, r in enumerate(rows)]
    titles = [column_title(table, columns[i]) if table else columns[i] for i in numeric]
    if len(rows) == 1 or (len(numeric) > 1 and len(rows) <= 6):
        data = [{"type": "bar", "name": names[n], "x": titles, "y": [r[i] for i in numeric]} for n, r in enumerate(rows)]
    else:
        data = [{"type": "bar", "name": titles[j], "x": names, "y": [r[i] for r in rows]} for j, i in enumerate(numeric)]
    return {"data": data, "layout": {"title": {"text": title}, "barmode": "group"}}


def table_citation(kb, tenant: str, table, needles: list[str]) -> list[dict]:
    """A verbatim line of the table's source page that names the cited rows (or the table title)."""
    passages = [p for p in kb.document_passages(tenant, table.doc_id)]
    on_page = [p for p in passages if p.page == table.page] or passages
    for needle in [*needles, table.title]:
        for p in on_page:
            for line in p.text.splitlines():
                if needle and needle.lower() in line.lower() and line.strip():
                    return [{"doc_id": p.doc_id, "filename": p.filename, "page": p.page, "section": p.section,
                             "quote": line.strip()}]
    if on_page and on_page[0].text.strip():
        p = on_page[0]
        return [{"doc_id": p.doc_id, "filename": p.filename, "page": p.page, "section": p.section,
                 "quote": p.text.strip().splitlines()[0].strip()}]
    return []


def make_bi_node(deps: AgentDeps):
    def labels_of(tenant):
        cache: dict = {}

        def read(table, column):
            key = (table.sql_name, column)
            if key not in cache:
                res = deps.kb.run_sql(tenant, f'SELECT "{column}" FROM "{table.sql_name}" ORDER BY row_num')
                cache[key] = [str(r[0]).strip() for r in res.rows if r[0] is not None]
            return cache[key]
        return read

    def model_sql(question: str, tables: list) -> Optional[str]:
        if not deps.settings.llm_base_url:  # the small embedded model: the planner writes the SQL
            return None
        model = deps.chat_model()
        if not getattr(model, "supports_sql", False):
            return None
        text = model.complete(prompts.sql_messages(question, schema_text(tables)), 256)
        m = re.search(r"```(?:sql)?\s*(.*?)```", text, re.S)
        return (m.group(1) if m else text).strip() or None

    def bi(state: AgentState) -> dict:
        tenant, question = state["tenant"], state["question"]
        tables = deps.kb.list_tables(tenant)
        if state.get("doc_ids"):
            tables = [t for t in tables if t.doc_id in state["doc_ids"]]
        if not tables:
            return {"route": "rag", "fallback": "no tables"}
        plan = plan_question(question, tables, labels_of(tenant))
        sql, result = None, None
        try:
            sql = model_sql(question, tables)
            if sql:
                result = deps.kb.run_sql(tenant, sql)  # read-only, this tenant's tables only
        except Exception:  # rejected or failing model SQL: the planner's SQL instead
            sql, result = None, None
        if result is None:
            if plan is None:
                return {"route": "rag", "fallback": "no table matches the question"}
            sql, result = plan.sql, deps.kb.run_sql(tenant, plan.sql)
        else:
            plan = plan if plan and plan.sql == sql else None
        table = plan.table if plan else next((t for t in tables if t.sql_name in sql), tables[0])
        rows = [list(r) for r in result.rows]
        needles = (plan.row_labels or [column_title(table, c) for c in plan.value_columns]) if plan else []
        citations = table_citation(deps.kb, tenant, table, needles)
        return {"route": "bi", "sql": sql, "columns": list(result.columns), "rows": rows,
                "answer": answer_text(plan, list(result.columns), rows, table.unit),
                "chart": chart_spec(plan, list(result.columns), rows, table.title),
                "citations": citations, "supported": bool(rows)}

    return bi
