"""The web UI in a real headless Chromium against the real app (SmolLM2 engine, real KnowledgeBase).

One server and one browser for the whole module; the tests run in file order over one logged-in page
(login -> upload -> ask -> revisit -> BI), plus fresh browser contexts for the wrong key and the second
tenant. A failed test leaves a screenshot in tests/artifacts/.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_harness import LiveServer, free_port  # tests/ui/browser_harness.py
from text_pdf import write_lines_pdf  # tests/text_pdf.py

pytestmark = [pytest.mark.browser, pytest.mark.slow]

KEY_ACME, KEY_GLOBEX = "ui-test-key-acme", "ui-test-key-globex"
CLAUSE = "Either party may terminate this Agreement upon ninety (90) days prior written notice."
PDF_NAME, XLSX_NAME = "acme_services_agreement.pdf", "acme_income_statement.xlsx"
# a wide income statement: line items by year (the shape KPI tiles and the BI planner read)
INCOME = [("Line item", "2022", "2023", "2024"), ("Revenue", 900000, 1100000, 1250000),
          ("Net income", 90000, 120000, 150000)]
STEP_MS = 30_000
ANSWER_MS = 240_000  # a CPU-only 135M model answering, while other tests share the 2 cores


def write_agreement_pdf(path: Path) -> Path:
    """A two-page services agreement; the termination clause is on page 2."""
    return write_lines_pdf(path, [
        ["MASTER SERVICES AGREEMENT", "between Acme Corporation and Globex Supplies Ltd.",
         "1. Services. Globex shall provide logistics services to Acme as set out in Schedule A.",
         "2. Fees. Acme shall pay the fees in Schedule B within thirty (30) days of invoice."],
        ["12. Termination.", CLAUSE, "13. Governing law. This Agreement is governed by the laws of Delaware."],
    ])


def write_income_xlsx(path: Path) -> Path:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Income statement"
    for row in INCOME:
        ws.append(list(row))
    wb.save(path)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from app.server import create_app
    from app.settings import Settings

    settings = Settings(
        data_dir=tmp_path_factory.mktemp("ui-data"),
        api_keys={KEY_ACME: "acme", KEY_GLOBEX: "globex"},
        max_new_tokens=32, engine_max_model_len=4096, engine_memory_gib=1.0, engine_max_num_seqs=4,
    )
    settings.ensure_dirs()
    app = create_app(settings)
    live = LiveServer(app, free_port()).start(timeout=300)
    live.service = app.state.service  # for what a test sets up without the browser
    yield live
    live.stop()


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("ui-docs")
    return [write_agreement_pdf(folder / PDF_NAME), write_income_xlsx(folder / XLSX_NAME)]


@pytest.fixture(scope="module")
def acme_page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(STEP_MS)
    yield page
    context.close()


def open_ui(page, server) -> None:
    page.goto(f"{server.url}/ui/")
    page.wait_for_selector("#login-key input, #main-panel", state="visible")


def log_in(page, key: str) -> None:
    page.fill("#login-key input", key)
    page.click("#login-button")


def globex_page(browser, server, screenshot_on_failure, **context_args):
    """A fresh browser context logged in as the second tenant (globex)."""
    page = browser.new_context(**context_args).new_page()
    page.set_default_timeout(STEP_MS)
    screenshot_on_failure(page)
    open_ui(page, server)
    log_in(page, KEY_GLOBEX)
    page.wait_for_selector("#whoami :text('globex')")
    return page


def doc_row(page, filename: str):
    return page.locator(f"#lib-docs tr.doc-row[data-filename='{filename}']")


def test_wrong_key_is_refused(browser, server, screenshot_on_failure):
    context = browser.new_context()
    page = context.new_page()
    screenshot_on_failure(page)
    open_ui(page, server)
    log_in(page, "not-a-key")
    page.wait_for_selector("#login-message :text('access refused')")
    assert not page.locator("#main-panel").is_visible()
    assert page.locator("#login-panel").is_visible()
    context.close()


def test_login_and_upload_shows_documents_with_pages_and_tables(acme_page, server, docs, screenshot_on_failure):
    page = acme_page
    screenshot_on_failure(page)
    open_ui(page, server)
    log_in(page, KEY_ACME)
    page.wait_for_selector("#main-panel", state="visible")
    assert "acme" in page.inner_text("#whoami")

    page.click("button[role=tab]:has-text('Library')")
    page.set_input_files("#lib-files input[type=file]", [str(p) for p in docs])
    page.wait_for_selector("#lib-files :text('acme_income_statement')")
    page.click("#lib-upload")
    # one progress row per file, each reaching a finished state
    rows = page.locator("#upload-table tr.upload-row")
    page.wait_for_function("document.querySelectorAll('#upload-table tr.upload-row').length === 2")
    page.wait_for_function(
        "[...document.querySelectorAll('#upload-table tr.upload-row')].every(r => r.dataset.done === 'true')",
        timeout=ANSWER_MS)
    assert rows.count() == 2
    for i in range(2):
        status = rows.nth(i).get_attribute("data-status")
        assert status in ("ingested", "unchanged"), rows.nth(i).inner_text()

    pdf_row = doc_row(page, PDF_NAME)
    pdf_row.wait_for()
    assert pdf_row.locator("td.doc-status").inner_text() == "ingested"
    assert pdf_row.locator("td.doc-pages").inner_text() == "2"
    assert int(doc_row(page, XLSX_NAME).locator("td.doc-tables").inner_text() or 0) >= 1  # tables found


# Records every distinct text of the newest answer bubble, so the test can see it grow token by token.
RECORD_ANSWER_JS = """() => {
  window.__answerTexts = [];
  const root = document.querySelector('#chat-bot');
  const read = () => {
    const answers = root.querySelectorAll('.message:not(.thought) > [data-testid="bot"]');
    const text = answers.length ? answers[answers.length - 1].innerText.trim() : '';
    const seen = window.__answerTexts;
    if (text && seen[seen.length - 1] !== text) seen.push(text);
  };
  new MutationObserver(read).observe(root, {subtree: true, childList: true, characterData: true});
}"""


def test_streamed_answer_has_a_citation_that_opens_the_quoted_passage(acme_page, screenshot_on_failure):
    page = acme_page
    screenshot_on_failure(page)
    page.click("button[role=tab]:has-text('Chat')")
    page.click("#chat-mode label:has-text('RAG')")
    page.evaluate(RECORD_ANSWER_JS)
    page.fill("#chat-question textarea", "How many days of notice are needed to terminate the agreement?")
    page.click("#chat-send")

    title = page.locator("#chat-bot .thought .title", has_text=PDF_NAME).first
    title.wait_for(timeout=ANSWER_MS)
    assert re.search(r"\[1\] .+ · page \d+", title.inner_text())
    texts = page.evaluate("window.__answerTexts")
    partial = [t for t in texts[:-1] if t != "…"]  # drop the placeholder and the final (footer added)
    assert len(partial) >= 2, f"answer did not stream: {texts}"
    assert len(partial[-1]) > len(partial[0]), f"answer did not grow: {texts}"

    title.click()
    passage = page.locator("#chat-bot .thought", has_text="Document:").first
    passage.wait_for()
    body = passage.inner_text()
    assert PDF_NAME in body and re.search(r"Page:\s*\d", body), body
    assert "terminate" in body.lower() or "notice" in body.lower(), body


def test_too_long_question_gets_a_short_note_not_error_badges(acme_page, screenshot_on_failure):
    page = acme_page
    screenshot_on_failure(page)
    page.click("button[role=tab]:has-text('Chat')")
    page.fill("#chat-question textarea", "why " * 2500)  # 10,000 characters
    page.click("#chat-send")
    page.wait_for_selector("#chat-bot :text('limited to 4,000 characters')")
    badges = [e for e in page.get_by_text("Error", exact=True).all() if e.is_visible()]
    assert not badges  # no red "Error" badge on every box
    page.click("#chat-thread input")
    options = page.locator("[role=option]").all_inner_texts()
    assert any(o.strip() == "+ New thread" for o in options) and all(o.isascii() or "…" in o for o in options), options
    page.keyboard.press("Escape")


def test_thread_is_kept_between_visits(acme_page, server, screenshot_on_failure):
    page = acme_page
    screenshot_on_failure(page)
    page.reload()
    page.wait_for_selector("#main-panel", state="visible")  # logged in again from the browser's memory
    page.wait_for_selector("#chat-bot [data-testid='user'] :text('How many days of notice')")
    assert page.locator("#chat-thread input").input_value().startswith("How many days of notice")


def test_bi_question_shows_answer_sql_table_and_chart(acme_page, screenshot_on_failure):
    page = acme_page
    screenshot_on_failure(page)
    page.click("button[role=tab]:has-text('BI dashboard')")
    page.click("#bi-kpi-refresh")  # tiles computed from the uploaded statement
    page.wait_for_selector("#kpi-tiles .kpi-tile:has-text('Revenue')")
    page.wait_for_selector("#kpi-tiles .kpi-tile:has-text('Net income')")
    assert not page.locator("#bi-table").is_visible()  # no empty table with a "1 2 3" header before an answer
    page.fill("#bi-question textarea", "What was the revenue in each year?")
    page.click("#bi-ask")
    page.wait_for_selector("#bi-chart .js-plotly-plot", timeout=ANSWER_MS)
    trace = page.evaluate("(() => { const d = document.querySelector('#bi-chart .js-plotly-plot').data[0];"
                          " return {x: d.x.map(String), name: d.name || ''}; })()")
    assert trace["x"] == sorted(trace["x"]) and not re.search(r"\d", trace["name"]), trace  # years in order
    assert "SELECT" in page.inner_text("#bi-sql").upper()
    table = page.inner_text("#bi-table")
    assert "1250000" in table.replace(",", "").replace(".0", ""), table
    page.click("#bi-kind label:has-text('line')")
    page.wait_for_selector("#bi-chart .js-plotly-plot .scatterlayer .trace")


def test_engine_panel_shows_pool_use_and_planner(acme_page, server, screenshot_on_failure):
    # clause and BI answers are extractive, so nothing in the earlier flow needed the model: load the
    # engine as the first generating answer would, then its pools are what the panel shows
    server.service.chat_model()
    page = acme_page
    screenshot_on_failure(page)
    page.click("button[role=tab]:has-text('Engine')")
    page.click("#engine-refresh")
    page.wait_for_function(
        "/KV pool blocks[^\\n]*\\s+[\\d,]+ \\/ [\\d,]+/.test(document.querySelector('#engine-tiles')?.innerText ?? '')")
    tiles = page.inner_text("#engine-tiles")
    assert re.search(r"KV pool blocks[^\n]*\s+[\d,]+ / [\d,]+", tiles), tiles
    assert "Tokens / s" in tiles and "Mamba state slots" in tiles
    page.wait_for_function("(document.querySelector('#engine-plan')?.innerText ?? '').trim().length > 20")


def test_second_tenant_sees_nothing_of_the_first_in_any_tab(browser, server, screenshot_on_failure):
    """acme has documents, a table, threads and (a long-mode answer) an engine snapshot; globex, logged in
    with its own key, finds none of it in the Engine, Library, BI and Chat tabs."""
    acme = server.service
    pdf_id = next(d["id"] for d in acme.documents("acme") if d["filename"] == PDF_NAME)
    assert acme.ask("acme", "Summarize the whole agreement.", mode="long", doc_ids=[pdf_id]).route == "long"
    snapshots = acme.engine_stats("acme")["snapshot_names"]
    assert snapshots  # what globex must not see (checked in the browser below)
    acme_things = [PDF_NAME, XLSX_NAME, "acme_", pdf_id, "ninety (90)", "1,250,000", "1250000", "Delaware",
                   *snapshots, *(s.split("-", 1)[-1] for s in snapshots)]

    def assert_nothing_of_acme(text: str, where: str) -> None:
        for thing in acme_things:
            assert thing.lower() not in text.lower(), f"{where}: globex sees {thing!r}:\n{text[:1500]}"

    page = globex_page(browser, server, screenshot_on_failure, viewport={"width": 1280, "height": 1000})

    page.click("button[role=tab]:has-text('Engine')")
    page.wait_for_selector("#engine-tiles :text('Snapshots held')")
    page.click("#engine-refresh")
    page.wait_for_selector("#engine-tiles :text('Snapshots held')")
    page.click("text=All engine counters")  # the raw counters too
    page.wait_for_selector("#engine-raw", state="visible")
    tiles = page.inner_text("#engine-tiles")
    assert re.search(r"Snapshots held\s+0\b", tiles), tiles  # not acme's count either
    assert_nothing_of_acme(page.inner_text("#main-panel") + tiles, "Engine tab")

    page.click("button[role=tab]:has-text('Library')")
    page.click("#lib-refresh")
    page.wait_for_selector("#lib-docs-empty")
    page.click("#lib-delete-pick input")
    assert_nothing_of_acme(page.inner_text("#main-panel"), "Library tab")
    page.keyboard.press("Escape")

    page.click("button[role=tab]:has-text('BI dashboard')")
    page.click("#bi-kpi-refresh")
    page.wait_for_selector("#bi-kpis :text('No KPIs yet')")
    page.fill("#bi-question textarea", "What was the revenue in each year?")
    page.click("#bi-ask")
    page.wait_for_function("(document.querySelector('#bi-answer')?.innerText ?? '').trim().length > 0",
                           timeout=ANSWER_MS)
    assert_nothing_of_acme(page.inner_text("#main-panel"), "BI tab")

    page.click("button[role=tab]:has-text('Chat')")
    page.click("#chat-thread input")
    options = page.locator("[role=option]").all_inner_texts()
    assert [o.replace("✓", "").strip() for o in options] == ["+ New thread"], options  # none of acme's threads
    page.keyboard.press("Escape")
    page.click("#chat-mode label:has-text('RAG')")
    page.fill("#chat-question textarea", "How many days of notice are needed to terminate the agreement?")
    page.click("#chat-send")
    page.wait_for_selector("#chat-bot [data-testid='bot'] :text('Answered by the')", timeout=ANSWER_MS)
    assert_nothing_of_acme(page.inner_text("#main-panel"), "Chat tab")
    page.context.close()


def test_delete_removes_a_document(acme_page, screenshot_on_failure):
    page = acme_page
    screenshot_on_failure(page)
    page.click("button[role=tab]:has-text('Library')")
    page.click("#lib-delete-pick input")
    page.click(f"[role=option]:has-text('{XLSX_NAME}')")
    page.click("#lib-delete")
    page.wait_for_selector("#lib-status :text('Deleted')")
    assert doc_row(page, XLSX_NAME).count() == 0
    assert doc_row(page, PDF_NAME).count() == 1


UNICODE_NAME = "合同 é…é.pdf"
LONG_NAME = "Master services agreement between Acme Corporation and Globex Supplies " * 9 + "final.pdf"


def test_unicode_and_long_file_names_are_kept_and_fit_the_screen(acme_page, tmp_path, screenshot_on_failure):
    """Files named in Chinese with accents, and with a 650-character name, keep their names in the Library;
    the long name wraps or is cut (full on hover) and the status column stays on screen."""
    page = acme_page
    screenshot_on_failure(page)
    page.click("button[role=tab]:has-text('Library')")
    pdf = write_agreement_pdf(tmp_path / "agreement.pdf").read_bytes()
    page.set_input_files("#lib-files input[type=file]", [
        {"name": UNICODE_NAME, "mimeType": "application/pdf", "buffer": pdf},
        {"name": LONG_NAME, "mimeType": "application/pdf", "buffer": pdf.replace(b"Delaware", b"Delawarf")}])
    page.wait_for_selector("#lib-files :text('é…é')")
    page.click("#lib-upload")
    page.wait_for_function(
        "[...document.querySelectorAll('#upload-table tr.upload-row')].length === 2 && "
        "[...document.querySelectorAll('#upload-table tr.upload-row')].every(r => r.dataset.done === 'true')",
        timeout=ANSWER_MS)
    unicode_row, long_row = doc_row(page, UNICODE_NAME), doc_row(page, LONG_NAME)
    unicode_row.wait_for()
    assert unicode_row.locator("td.doc-name").inner_text() == UNICODE_NAME
    assert unicode_row.locator("td.doc-status").inner_text() == "ingested"
    assert long_row.locator("td.doc-name").get_attribute("title") == LONG_NAME  # the full name on hover
    assert long_row.locator("td.doc-status").inner_text() == "ingested"
    width = page.viewport_size["width"]
    for cell in ("td.doc-status", "td.doc-error", "td.doc-id"):
        box = long_row.locator(cell).bounding_box()
        assert box and box["x"] + box["width"] <= width, (cell, box, width)  # not pushed off screen


def test_another_tenant_sees_only_its_own_documents(browser, server, screenshot_on_failure):
    page = globex_page(browser, server, screenshot_on_failure)
    page.click("button[role=tab]:has-text('Library')")
    page.click("#lib-refresh")
    page.wait_for_selector("#lib-docs-empty")  # globex has no documents; acme's are not listed
    assert doc_row(page, PDF_NAME).count() == 0
    assert doc_row(page, XLSX_NAME).count() == 0
    page.context.close()
