"""The UI's pure rendering helpers: charts from SQL results, citation messages, upload progress, tiles."""
from __future__ import annotations

import pytest

from ui.bi_tab import kpi_tiles_html, sources_markdown
from ui.charts import answer_figure, result_figure
from ui.chat_tab import NEW_THREAD, remember_thread, thread_choices
from ui.citations import answer_messages, citation_messages, history_messages
from ui.engine_tab import stats_html
from ui.library_tab import FileRow, apply_job, progress_html

# years come back from SQLite as REAL, as the ingested tables store them
REVENUE = (["year", "revenue", "cost"], [[2022.0, 900.0, 500.0], [2023.0, 1100.0, 620.0], [2024.0, 1250.0, 700.0]])


def test_bar_chart_puts_label_column_on_x_and_each_numeric_column_as_a_series():
    fig = result_figure(["segment", "revenue"], [["Retail", 10], ["Wholesale", 25]], "bar")
    assert [t.type for t in fig.data] == ["bar"]
    assert list(fig.data[0].x) == ["Retail", "Wholesale"] and list(fig.data[0].y) == [10, 25]


def test_line_chart_of_all_numeric_columns_uses_the_first_as_categorical_axis():
    fig = result_figure(*REVENUE, "line")
    assert [t.name for t in fig.data] == ["revenue", "cost"]
    assert all(t.type == "scatter" for t in fig.data)
    assert list(fig.data[0].x) == ["2022", "2023", "2024"]
    assert fig.layout.xaxis.type == "category"


def test_wide_statement_puts_periods_on_x_and_one_series_per_line_item():
    fig = result_figure(["line_item", "y2023", "y2024", "fy2024"],
                        [["Revenue", 1100.0, 1250.0, 1250.0], ["Net income", 120.0, 150.0, 150.0]], "line")
    assert [t.name for t in fig.data] == ["Revenue", "Net income"]
    assert list(fig.data[0].x) == ["2023", "2024", "FY 2024"] and list(fig.data[1].y) == [120.0, 150.0, 150.0]


def test_non_numeric_result_falls_back_to_a_table_and_bad_kind_is_refused():
    fig = result_figure(["party", "clause"], [["Acme", "12.1"]], "bar")
    assert fig.data[0].type == "table"
    assert list(fig.data[0].cells.values[0]) == ["Acme"]
    with pytest.raises(ValueError, match="unknown chart kind 'pie'"):
        result_figure(*REVENUE, "pie")


def test_answer_figure_prefers_the_agents_chart_only_for_auto():
    chart = {"data": [{"type": "scatter", "x": [1, 2], "y": [3, 4]}], "layout": {"title": {"text": "agent"}}}
    answer = {"columns": REVENUE[0], "rows": REVENUE[1], "chart": chart}
    assert answer_figure(answer, "auto").layout.title.text == "agent"
    assert answer_figure(answer, "bar").data[0].type == "bar"
    assert answer_figure({"columns": [], "rows": []}, "auto") is None


def test_citations_become_closed_boxes_titled_by_document_and_page_with_escaped_quote():
    msgs = citation_messages([{"doc_id": "d1", "filename": "msa.pdf", "page": 4, "section": "12. Termination",
                               "quote": "ninety (90) days <b>notice</b>"}])
    assert msgs[0]["metadata"]["title"] == "[1] msa.pdf · page 4"
    assert msgs[0]["metadata"]["status"] == "done"
    body = msgs[0]["content"]
    assert "> ninety (90) days &lt;b&gt;notice&lt;/b&gt;" in body
    assert "**Page:** 4" in body and "12. Termination" in body


def test_answer_messages_show_sql_and_warn_when_unsupported():
    msgs = answer_messages({"answer": "42", "citations": [], "route": "bi", "sql": "SELECT 42",
                            "supported": False})
    assert len(msgs) == 1
    assert "```sql\nSELECT 42\n```" in msgs[0]["content"]
    assert "do not clearly support" in msgs[0]["content"] and "BI route" in msgs[0]["content"]


def test_history_turns_keep_their_citations():
    history = [{"role": "user", "content": "Notice period?"},
               {"role": "assistant", "content": "90 days", "citations": [{"filename": "a.pdf", "page": 2,
                                                                           "quote": "90 days"}]}]
    msgs = history_messages(history)
    assert [m["role"] for m in msgs] == ["user", "assistant", "assistant"]
    assert msgs[2]["metadata"]["title"] == "[1] a.pdf · page 2"


def test_threads_are_remembered_per_tenant_newest_first():
    visit = remember_thread({}, "acme", "t1", "first question")
    visit = remember_thread(visit, "acme", "t2", "second question")
    visit = remember_thread(visit, "acme", "t1", "ignored, keeps its title")
    assert [t["id"] for t in visit["threads"]["acme"]] == ["t1", "t2"]
    assert visit["threads"]["acme"][0]["title"] == "first question"
    assert visit["current"]["acme"] == "t1"
    assert thread_choices(visit, "other") == [("+ New thread", NEW_THREAD)]
    assert all(label.isascii() for label, _ in thread_choices(visit, "acme"))  # no emoji: no missing-glyph box


def test_upload_rows_follow_job_progress_and_failures():
    row = apply_job(FileRow("a.pdf"), {"job_id": "j", "status": "running", "progress": {"done": 1, "total": 4}})
    assert (row.status, row.progress, row.done) == ("running", 0.25, False)
    row = apply_job(row, {"status": "done", "documents": [{"status": "ingested", "pages": 3, "tables": 2}]})
    assert (row.status, row.progress, row.done, row.detail) == ("ingested", 1.0, True, "pages 3, tables 2")
    bad = apply_job(FileRow("b.pdf"), {"status": "done", "documents": [{"status": "failed",
                                                                        "error": "not a PDF"}]})
    assert bad.status == "failed" and bad.error == "not a PDF" and bad.done
    items = apply_job(FileRow("c.pdf"), {"status": "running", "items": [{"status": "ingested"}, {"status": "pending"}]})
    assert items.progress == 0.5 and not items.done
    page = progress_html([row, bad])
    assert "value='100'" in page and "not a PDF" in page and "data-status='failed'" in page


def test_tiles_format_numbers_and_usage():
    html = kpi_tiles_html([{"label": "Revenue", "value": 1250000.0, "unit": "USD", "source": "fs.xlsx p.1"}])
    assert "1,250,000" in html and "USD" in html and "fs.xlsx p.1" in html
    assert "No KPIs yet" in kpi_tiles_html([])
    stats = stats_html({"running": 2, "waiting": 1, "kv_blocks_used": 64, "kv_blocks_total": 256,
                        "mamba_slots_used": 1, "mamba_slots_total": 8, "snapshots": ["doc-a"], "tokens_per_s": 12.5})
    assert "64 / 256" in stats and "25% used" in stats and "12.5" in stats and "doc-a" in stats
    engine = stats_html({"kv_blocks_used": 3, "kv_blocks_total": 4, "block_size": 16, "kv_dtype": "bfloat16",
                         "snapshots": 2, "snapshot_names": ["a", "b"], "generated_tokens": 1200, "peak_batch": 3,
                         "max_num_seqs": 8})
    assert "(16 tok, bfloat16)" in engine and "2: a, b" in engine and "1,200" in engine and "3 of 8" in engine
    assert "page 3" in sources_markdown({"citations": [{"filename": "fs.pdf", "page": 3}]})


# what the BI agent returns for "How did net income grow from 2023 to 2024?" on the sample statement
GROWTH = {"columns": ["item", "y2024", "y2023", "growth_pct"], "rows": [["Net income (loss)", 5486.1, 1912.6, 186.84]],
          "chart": {"data": [{"type": "bar", "name": "Net income (loss) 186.84", "x": ["2024", "2023"],
                              "y": [5486.1, 1912.6]}]}}


def test_statement_chart_names_the_line_item_and_runs_oldest_year_first():
    fig = answer_figure(GROWTH, "auto")
    assert [t.name for t in fig.data] == ["Net income (loss)"]  # a series name, not "... 186.84"
    assert list(fig.data[0].x) == ["2023", "2024"] and list(fig.data[0].y) == [1912.6, 5486.1]
    years = result_figure(["item", "y2024", "y2023", "y2022"], [["Revenue", 3.0, 2.0, 1.0]], "bar")
    assert list(years.data[0].x) == ["2022", "2023", "2024"] and list(years.data[0].y) == [1.0, 2.0, 3.0]
    quarters = result_figure(["segment", "fy_2024", "q2_2024", "q1_2024"], [["Software", 9.0, 5.0, 4.0]], "bar")
    assert list(quarters.data[0].x) == ["Q1 2024", "Q2 2024", "FY 2024"]


def test_an_answer_without_sql_rows_hides_the_result_table():
    from ui.bi_tab import answer_outputs

    _, sql, table, figure, _ = answer_outputs({"answer": "Not found in the documents.", "supported": False}, "auto")
    assert table.visible is False and figure is None  # hidden: an empty Dataframe shows a "1 2 3" header
    _, _, table, _, _ = answer_outputs(GROWTH, "auto")
    assert table.visible is True and table.value["headers"] == GROWTH["columns"]


def test_kpis_lead_with_headline_line_items():
    from app.service import key_rows

    statement = [["Revenue", 63918.7], ["Cost of revenue", -34402.3], ["Gross profit", 29516.4],
                 ["Operating expenses", -22118.9], ["Operating income (loss)", 7397.5], ["Net income (loss)", 5486.1]]
    assert [r[0] for r in key_rows(statement, 4)] == ["Revenue", "Gross profit", "Operating income (loss)",
                                                      "Net income (loss)"]
    assert [r[0] for r in key_rows([["A", 1], ["B", "n/a"], ["C", 3]], 4)] == ["A", "C"]


def test_too_long_question_gets_a_friendly_message():
    from app.schemas import MAX_QUESTION_CHARS
    from ui.auth import too_long_message

    text = too_long_message("x" * 100_000)
    assert "100,000 characters" in text and f"{MAX_QUESTION_CHARS:,}" in text and "Error" not in text


def test_an_agent_chart_over_years_runs_oldest_first():
    chart = {"data": [{"type": "bar", "name": "revenue", "x": ["2024", "2023", "2022"], "y": [3, 2, 1]}]}
    fig = answer_figure({"columns": ["year", "revenue"], "rows": [[2024, 3], [2023, 2], [2022, 1]], "chart": chart})
    assert list(fig.data[0].x) == ["2022", "2023", "2024"] and list(fig.data[0].y) == [1, 2, 3]
    fig = result_figure(["year", "revenue"], [[2024.0, 3.0], [2022.0, 1.0]], "line")
    assert list(fig.data[0].x) == ["2022", "2024"]


def test_long_and_unicode_file_names_fit_the_library_tables():
    """A 5,000-character name shows its start and end (the extension) in the table, the full name on hover, and
    does not widen the table: the status and error cells stay on screen. Names in any script show as given."""
    import html as html_mod
    import re

    from ui.library_tab import SHOWN_NAME_CHARS, delete_choices, documents_html

    long_name = "Master services agreement " * 192 + "xxxx.pdf"
    rows = [[long_name, "failed", 0, 0, 0, "the file is empty (0 bytes)", "d1"],
            ["合同.pdf", "ingested", 2, 3, 0, "", "d2"]]
    page = documents_html(rows)
    cell = re.search(r"<td class='doc-name' title='([^']*)'([^>]*)>([^<]*)</td>", page)
    assert html_mod.unescape(cell.group(1)) == long_name  # the full name on hover
    assert "overflow-wrap:anywhere" in cell.group(2) and "max-width" in cell.group(2)
    shown = html_mod.unescape(cell.group(3))
    assert len(shown) <= SHOWN_NAME_CHARS and shown.startswith("Master services") and shown.endswith("xxxx.pdf")
    assert "<td class='doc-name' title='合同.pdf'" in page and ">合同.pdf</td>" in page
    assert "the file is empty" in page
    assert all(len(label) < SHOWN_NAME_CHARS + 10 for label, _ in delete_choices(rows))
    progress = progress_html([FileRow(long_name, status="failed", error="over the 1 MB limit", done=True)])
    assert len(html_mod.unescape(re.search(r"class='upload-name'[^>]*>([^<]*)<", progress).group(1))) <= SHOWN_NAME_CHARS


def test_the_file_input_passes_the_name_the_browser_gave(tmp_path):
    """Gradio keeps its copy under a name cut to 200 bytes; the Library's input hands over the original name."""
    from gradio.data_classes import FileData, ListFiles

    import gradio as gr

    from ui.library_tab import keep_original_names, original_name

    copy = tmp_path / "cut.pdf"
    copy.write_bytes(b"%PDF-1.4\n")
    name = "協議" * 150 + ".pdf"  # 900 bytes of UTF-8
    component = keep_original_names(gr.File(file_count="multiple", type="filepath"))
    [path] = component.preprocess(ListFiles(root=[FileData(path=str(copy), orig_name=name)]))
    assert str(path) == str(copy) and original_name(path) == name
    assert original_name(str(copy)) == "cut.pdf"  # a plain path: its own name
