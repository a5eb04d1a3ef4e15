"""Scanned documents end to end: image-only PDFs and image uploads read by the real tesseract, chunked with
their page numbers, searchable, tables from the word boxes, and the per-tenant OCR cache."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ingest.ocr import OcrConfig, tenant_cache
from tests.scanned import write_scanned_pdf, write_scanned_png, write_scanned_tiff

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None,
                                reason="tesseract-ocr is not installed (make setup installs it)")

COVER = ["# MASTER SUPPLY AGREEMENT", "This agreement is made between Northwind Traders and Contoso Freight."]
TERMS = ["# 7. Governing Law", "This Agreement is governed by the laws of the State of Delaware.",
         "", "8. Termination", "Either party may terminate on ninety days written notice."]
FIGURES = ["# Revenue by segment", "", "Segment\t2023\t2024", "Hardware\t1,200\t1,450", "Software\t300\t410",
           "Services\t95\t120", "Total\t1,595\t1,980"]


def test_image_only_pdf_is_read_with_pages_headings_and_tables(tmp_path):
    from ingest.parsers.pdf import parse_pdf

    pdf = write_scanned_pdf(tmp_path / "scan.pdf", [COVER, TERMS, FIGURES])
    seen: list[int] = []
    parsed = parse_pdf(pdf, ocr=OcrConfig(workers=2), on_ocr_page=seen.append)
    assert parsed.ocr_pages == 3 and sorted(seen) == [1, 2, 3] and parsed.warnings == []  # read confidently
    assert [p.number for p in parsed.pages] == [1, 2, 3]
    terms = parsed.pages[1]
    assert "governed by the laws of the State of Delaware" in terms.text
    # reading order kept, and the taller line is a heading span
    assert terms.text.index("Governing Law") < terms.text.index("Delaware") < terms.text.index("ninety days")
    assert terms.text[slice(*terms.headings[0])] == "7. Governing Law"
    table = [t for t in parsed.tables if t.page == 3]
    assert table, "the OCR'd figures page has no table"
    rows = {str(r[0]): r[1:] for r in table[0].rows}
    assert rows["Software"] == ["300", "410"] and rows["Total"] == ["1,595", "1,980"]


def test_born_digital_pages_are_not_ocrd(tmp_path):
    from ingest.parsers.pdf import parse_pdf
    from tests.text_pdf import write_lines_pdf

    pdf = write_lines_pdf(tmp_path / "typed.pdf", [["This page has a real text layer."], ["Short."]])
    parsed = parse_pdf(pdf, ocr=OcrConfig())
    assert parsed.ocr_pages == 0 and parsed.pages[1].text == "Short."  # thin, but no image: nothing to read


def test_blank_scan_is_a_clear_error(tmp_path):
    from PIL import Image

    from ingest.errors import IngestError
    from ingest.parsers.pdf import parse_pdf

    pdf = tmp_path / "blank.pdf"
    Image.new("L", (1700, 2200), 255).save(pdf, "PDF", resolution=200)
    with pytest.raises(IngestError, match="OCR found no text on its 1 scanned page"):
        parse_pdf(pdf, ocr=OcrConfig())


def test_detect_images_by_content(tmp_path):
    from ingest.detect import detect_kind
    from ingest.errors import IngestError

    png = write_scanned_png(tmp_path / "a.png", ["x"])
    tif = write_scanned_tiff(tmp_path / "a.tiff", [["x"]])
    jpg = tmp_path / "a.jpg"
    from PIL import Image
    Image.open(png).convert("RGB").save(jpg, "JPEG")
    assert [detect_kind(p) for p in (png, tif, jpg)] == ["image"] * 3
    fake = tmp_path / "fake.png"
    fake.write_text("not an image at all")
    with pytest.raises(IngestError, match="content is plain text"):
        detect_kind(fake)
    noext = tmp_path / "scan"
    shutil.copy(png, noext)
    assert detect_kind(noext) == "image"


@pytest.mark.slow
def test_scanned_pdf_and_png_are_searchable_and_cached_per_tenant(kb, settings, tmp_path):
    pdf = write_scanned_pdf(tmp_path / "supply.pdf", [COVER, TERMS])
    png = write_scanned_png(tmp_path / "figures.png", FIGURES)
    events = []
    summary = kb.ingest_paths([pdf, png], "acme", progress=events.append)
    assert [r.status for r in summary.results] == ["ingested", "ingested"], [r.error for r in summary.results]
    assert sorted((e.filename, e.pages) for e in events if e.stage == "ocr_page") == [
        ("figures.png", 1), ("supply.pdf", 1), ("supply.pdf", 2)]
    hits = kb.search("acme", "Which state's laws govern the agreement?", k=3)
    assert hits[0].filename == "supply.pdf" and hits[0].page == 2 and "Delaware" in hits[0].text
    assert hits[0].section == "7 Governing Law"
    tables = kb.list_tables("acme")
    assert [t.filename for t in tables] == ["figures.png"] and tables[0].page == 1
    r = kb.run_sql("acme", f"SELECT * FROM {tables[0].sql_name}")
    assert [1595.0, 1980.0] in [[c for c in row if isinstance(c, float)] for row in r.rows]

    # the cache: one entry per page, in the tenant's own folder; a second ingest of the same page reads it
    root = settings.data_dir / "ocr"
    acme = tenant_cache(OcrConfig(cache_dir=root), "acme").cache_dir
    entries = sorted(acme.rglob("*.json"))
    assert len(entries) == 3 and [p for p in root.iterdir()] == [acme]
    page2 = next(p for p in entries if "Delaware" in json.loads(p.read_text())["text"])
    data = json.loads(page2.read_text())
    data["text"] = data["text"].replace("Delaware", "Nevada")  # marks what the cache serves
    page2.write_text(json.dumps(data))
    copy = tmp_path / "supply-copy.pdf"
    write_scanned_pdf(copy, [TERMS])  # another file holding the same page image
    assert kb.ingest_paths([copy], "acme").results[0].status == "ingested"
    text = " ".join(p.text for p in kb.document_passages("acme", _doc_id(kb, "acme", "supply-copy.pdf")))
    assert "Nevada" in text and "Delaware" not in text
    # another tenant never reads acme's cache: the same page is OCR'd afresh
    assert kb.ingest_paths([copy], "globex").results[0].status == "ingested"
    text = " ".join(p.text for p in kb.document_passages("globex", _doc_id(kb, "globex", "supply-copy.pdf")))
    assert "Delaware" in text and "Nevada" not in text
    assert len(list(root.iterdir())) == 2


def _doc_id(kb, tenant: str, name: str) -> str:
    return next(d.id for d in kb.list_documents(tenant) if d.filename == name)
