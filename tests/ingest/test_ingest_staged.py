"""The pipeline embeds a file's chunks while its ruled tables are still being searched (``prepare(staged=True)``
+ ``complete`` on the read-ahead thread). What is stored must equal the one-step parse: the same chunks, tables
and points, also when the table search turns a sideways page upright and so changes its text. Real PDF
(reportlab), real SQLite, real Qdrant Edge, real embeddings."""
from __future__ import annotations

from pathlib import Path

import pytest
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas
from sqlmodel import Session, select

from ingest.chunker import chunk_pages
from ingest.models import Chunk
from ingest.parsers.pdf import parse_pdf, parse_pdf_text

W, H = letter
ROTATED = Path(__file__).resolve().parents[3] / "shared" / "eval" / "messy-pdfs" / "nics-background-checks-2015-11-rotated.pdf"
ROWS = [("Segment", "2023", "2022"), ("Industrial coatings", "4,210", "3,980"), ("Marine paints", "1,105", "990"),
        ("Aerospace sealants", "877", "802"), ("Packaging films", "640", "611"), ("Other", "113", "97"),
        ("Total revenue", "6,945", "6,480")]


def write_sideways_ruled_pdf(path):
    """Page 1: prose; page 2: a ruled table printed sideways (turned 90 degrees on a portrait page)."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 10)
    for i, line in enumerate(["Segment revenue grew in every business line during the year.",
                              "Industrial coatings remained the largest segment by revenue.",
                              "The table on the next page gives revenue by segment in USD thousands."]):
        c.drawString(72, 720 - 14 * i, line)
    c.showPage()
    c.saveState()
    c.translate(W, 0)
    c.rotate(90)  # x runs up the page from here
    x_cols, top, step = [100, 320, 440, 560], 450, 24
    c.setFont("Helvetica-Bold", 11)
    c.drawString(100, top + 20, "REVENUE BY SEGMENT (in USD thousands)")
    c.setFont("Helvetica", 10)
    for r, row in enumerate(ROWS):
        y = top - r * step
        c.drawString(x_cols[0] + 4, y - 16, row[0])
        for j, cell in enumerate(row[1:], start=1):
            c.drawRightString(x_cols[j + 1] - 6, y - 16, cell)
    for r in range(len(ROWS) + 1):
        c.line(x_cols[0], top - r * step, x_cols[-1], top - r * step)
    c.line(x_cols[0], top - len(ROWS) * step - 3, x_cols[-1], top - len(ROWS) * step - 3)  # double rule
    for x in x_cols:
        c.line(x, top, x, top - len(ROWS) * step)
    c.restoreState()
    c.showPage()
    c.save()
    return path


def _stored_equals_one_step_parse(kb, path, tenant: str):
    whole = parse_pdf(path)
    summary = kb.ingest_paths([path], tenant)  # the job path: staged, tables searched while embedding
    result = summary.results[0]
    assert result.status == "ingested", result.error
    expected = chunk_pages(whole.pages, kb.pipeline.limits.chunk)
    with Session(kb.engine) as s:
        stored = s.exec(select(Chunk).where(Chunk.doc_id == result.doc_id).order_by(Chunk.ord)).all()
    assert [(c.page, c.text) for c in stored] == [(c.page, c.text) for c in expected]
    assert kb.vectors.count(tenant) == len(expected)  # no point of an earlier reading is left
    assert result.tables == len(kb.list_tables(tenant)) >= 1
    return whole


def test_staged_ingest_stores_what_the_one_step_parse_gives(kb, tmp_path):
    path = write_sideways_ruled_pdf(tmp_path / "segments.pdf")
    first, rest = parse_pdf_text(path)
    assert rest is not None and not any(t.page == 2 for t in first.tables)  # the ruled page is left for later
    whole = _stored_equals_one_step_parse(kb, path, "acme")
    assert "Industrial coatings" in whole.pages[1].text and any(t.page == 2 for t in whole.tables)
    hits = kb.search("acme", "Marine paints revenue", k=2)
    assert hits and hits[0].page == 2 and "Marine paints" in hits[0].text


@pytest.mark.skipif(not ROTATED.exists(), reason=f"{ROTATED} is absent (the messy-PDF dev set)")
def test_a_page_read_upright_late_is_rechunked_and_reembedded(kb):
    first, rest = parse_pdf_text(ROTATED)
    before = first.pages[0].text
    rest()
    assert first.pages[0].text != before  # the table search changes this page's text after chunking began
    whole = _stored_equals_one_step_parse(kb, ROTATED, "acme")
    assert whole.pages[0].text.startswith("NICS Firearm Background Checks")
