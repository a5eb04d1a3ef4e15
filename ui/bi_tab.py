"""BI dashboard: KPI tiles from the extracted tables, and numeric questions answered by SQL.

A question goes to ``service.ask(..., mode="bi")``; the answer shows with its SQL, the result table, a
plotly chart (the agent's own, or bar / line / table built from the rows) and the pages the numbers came
from. Switching the chart kind redraws from the last answer without asking again.
"""
from __future__ import annotations

import html
from typing import Any

import gradio as gr
import pandas as pd

from app.schemas import MAX_QUESTION_CHARS
from ui.auth import ask_limit, require_tenant, too_long_message
from ui.charts import CHART_KINDS, answer_figure
from ui.citations import citation_title


def as_dict(answer: Any) -> dict:
    return answer.model_dump() if hasattr(answer, "model_dump") else dict(answer)


def kpi_tiles_html(kpis: list[dict]) -> str:
    if not kpis:
        return ("<p class='lx-muted'>No KPIs yet — upload financial statements with tables (XLSX, CSV, "
                "or PDFs with tables) to see them here.</p>")
    tiles = []
    for k in kpis:
        value = k.get("value")
        if isinstance(value, float):
            value = f"{value:,.2f}".rstrip("0").rstrip(".")
        elif isinstance(value, int):
            value = f"{value:,}"
        unit = html.escape(str(k.get("unit") or ""))
        tiles.append(
            "<div class='kpi-tile' style='border:1px solid #d0d7de;border-radius:10px;padding:12px 16px;"
            "min-width:180px;flex:1'>"
            f"<div style='font-size:0.85em;opacity:0.75'>{html.escape(str(k.get('label') or ''))}</div>"
            f"<div class='kpi-value' style='font-size:1.6em;font-weight:700'>{html.escape(str(value))}</div>"
            f"<div style='font-size:0.8em'>{unit}</div>"
            f"<div style='font-size:0.75em;opacity:0.65'>{html.escape(str(k.get('source') or ''))}</div></div>")
    return "<div id='kpi-tiles' style='display:flex;gap:12px;flex-wrap:wrap'>" + "".join(tiles) + "</div>"


def sources_markdown(answer: dict) -> str:
    citations = answer.get("citations") or []
    if not citations:
        return "*No source pages were cited.*"
    return "**Source pages:**\n\n" + "\n".join(f"- {citation_title(i, c)}" for i, c in enumerate(citations, 1))


def result_frame(answer: dict) -> pd.DataFrame | None:
    """The SQL result as a frame; None when there is none (an empty Dataframe shows a "1 2 3" header)."""
    columns = answer.get("columns") or []
    return pd.DataFrame(answer.get("rows") or [], columns=columns) if columns else None


def result_table(answer: dict):
    """The result table update: shown with the rows, hidden when the answer has no SQL result."""
    frame = result_frame(answer)
    return gr.Dataframe(value=frame, visible=frame is not None)


def answer_outputs(answer: dict, kind: str) -> tuple:
    """(answer markdown, sql, result table, figure, sources markdown) for one BI answer."""
    text = (answer.get("answer") or "").strip() or "(no answer)"
    if answer.get("supported") is False:
        text = "⚠️ *The extracted tables do not clearly support this answer.*\n\n" + text
    return (text, answer.get("sql") or "-- no SQL was run", result_table(answer), answer_figure(answer, kind),
            sources_markdown(answer))


def build_bi_tab(service: Any, session: gr.State) -> gr.HTML:
    """Builds the tab; returns the KPI tiles component for the login hook to fill."""
    with gr.Row():
        gr.Markdown("### Key figures")
        refresh_kpis = gr.Button("Refresh KPIs", size="sm", elem_id="bi-kpi-refresh", scale=0)
    tiles = gr.HTML(kpi_tiles_html([]), elem_id="bi-kpis")
    with gr.Row():
        question = gr.Textbox(placeholder="e.g. What was total revenue by year?", show_label=False, scale=5,
                              elem_id="bi-question")
        kind = gr.Radio(choices=list(CHART_KINDS), value="auto", label="Chart", scale=2, elem_id="bi-kind")
        ask = gr.Button("Ask", variant="primary", scale=1, elem_id="bi-ask")
    last_answer = gr.State(None)
    answer_md = gr.Markdown(elem_id="bi-answer")
    with gr.Row():
        with gr.Column(scale=3):
            chart = gr.Plot(label="Chart", elem_id="bi-chart")
        with gr.Column(scale=2):
            sql = gr.Code(label="SQL", language="sql", elem_id="bi-sql", interactive=False, wrap_lines=True)
            table = gr.Dataframe(label="Result", interactive=False, elem_id="bi-table", visible=False)
            sources = gr.Markdown(elem_id="bi-sources")

    def run(q: str, kind_value: str, sess: dict | None):
        tenant = require_tenant(sess)
        q = (q or "").strip()
        if not q:
            raise gr.Error("Type a numeric question first.")
        if len(q) > MAX_QUESTION_CHARS:
            gr.Warning(too_long_message(q))
            return (too_long_message(q), *[gr.skip()] * 5)
        answer = as_dict(service.ask(tenant, q, mode="bi"))
        return (*answer_outputs(answer, kind_value), answer)

    def redraw(kind_value: str, answer: dict | None):
        if not answer:
            return gr.skip()
        return answer_figure(answer, kind_value)

    outputs = [answer_md, sql, table, chart, sources, last_answer]
    ask.click(run, [question, kind, session], outputs, concurrency_limit=ask_limit(service), concurrency_id="lexicon-ask")
    question.submit(run, [question, kind, session], outputs, concurrency_limit=ask_limit(service), concurrency_id="lexicon-ask")
    kind.input(redraw, [kind, last_answer], [chart])
    refresh_kpis.click(lambda sess: kpi_tiles_html(service.kpis(require_tenant(sess))), [session], [tiles])
    return tiles
