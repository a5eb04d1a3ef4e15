"""Each format parses from a real generated file, with page provenance and headings."""
from __future__ import annotations

import openpyxl
import pytest

from ingest.detect import detect_kind
from ingest.parsers import parse_file
from ingest.samples import SAMPLE_FACTS


def parse(path):
    return parse_file(path, detect_kind(path))


def test_msa_pdf_has_pages_and_clause_text(corpus):
    doc = parse(next(p for p in corpus if p.name == SAMPLE_FACTS["msa"]["filename"]))
    assert doc.kind == "pdf" and len(doc.pages) == SAMPLE_FACTS["msa"]["pages"]
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert "9.2 Liability Cap" in doc.pages[1].text and "USD 2,000,000" in doc.pages[1].text
    assert "14.1 Governing Law" in doc.pages[2].text and "9.2" not in doc.pages[2].text


def test_annual_report_pdf_table_is_found_on_its_page(corpus):
    doc = parse(next(p for p in corpus if p.name == SAMPLE_FACTS["annual_report"]["filename"]))
    assert len(doc.tables) == 1
    table = doc.tables[0]
    assert table.page == SAMPLE_FACTS["annual_report"]["income_statement_page"]
    assert table.title == "Consolidated Statements of Operations"
    assert ["", "2024", "2023", "2022"] == [c or "" for c in table.rows[0]]
    assert any("(1,580.2)" in str(c) for row in table.rows for c in row)
    # headings come from the font size of the PDF lines
    page2 = doc.pages[1]
    assert any(page2.text[s:e] == "Consolidated Statements of Operations" for s, e in page2.headings)


def test_docx_headings_table_and_page_break(corpus):
    doc = parse(next(p for p in corpus if p.name == SAMPLE_FACTS["nda"]["filename"]))
    assert doc.kind == "docx" and len(doc.pages) == 2
    assert "three (3) years" in doc.pages[0].text
    assert "State of Delaware" in doc.pages[1].text
    headings = [doc.pages[0].text[s:e] for s, e in doc.pages[0].headings]
    assert "3. Term" in headings
    assert doc.tables[0].page == 2
    assert doc.tables[0].rows[1] == ["Jane Park", "General Counsel"]


def test_xlsx_every_sheet_with_computed_values_not_formulas(corpus):
    path = next(p for p in corpus if p.name == SAMPLE_FACTS["segments"]["filename"])
    raw = openpyxl.load_workbook(path)  # the file really holds formulas...
    assert str(raw.active["F2"].value).startswith("=SUM(")
    doc = parse(path)
    assert [p.number for p in doc.pages] == [1, 2] and "Sheet: Notes" in doc.pages[1].text
    rows = doc.tables[0].rows
    software = next(r for r in rows if r[0] == "Software")
    assert software[-1] == pytest.approx(SAMPLE_FACTS["segments"]["fy_total"]["Software"])
    assert all(isinstance(v, float) for v in software[1:])  # ...but we store numbers
    total = next(r for r in rows if r[0] == "Total")
    assert total[1:5] == pytest.approx(SAMPLE_FACTS["segments"]["quarter_total"])


def test_xlsx_formulas_without_cached_values_are_computed(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["Item", "A", "B", "Total"])
    ws.append(["x", 1.5, 2.5, "=SUM(B2:C2)"])
    ws.append(["y", 4, 6, "=(B3+C3)*2-D2/4"])
    path = tmp_path / "nocache.xlsx"
    wb.save(path)  # openpyxl never stores computed values
    doc = parse(path)
    rows = doc.tables[0].rows
    assert rows[1][3] == pytest.approx(4.0)
    assert rows[2][3] == pytest.approx(19.0)
    assert not doc.warnings


def test_html_headings_and_table(tmp_path):
    path = tmp_path / "policy.html"
    path.write_text("<html><head><style>p{}</style></head><body><h1>Data Policy</h1><p>Keep data safe.</p>"
                    "<h2>3.1 Retention</h2><p>Records are kept for seven years.</p>"
                    "<table><caption>Fees</caption><tr><th>Tier</th><th>Fee</th></tr>"
                    "<tr><td>Gold</td><td>$1,200</td></tr></table><script>var x=1;</script></body></html>")
    doc = parse(path)
    assert doc.kind == "html" and len(doc.pages) == 1
    text = doc.pages[0].text
    assert "seven years" in text and "var x" not in text and "p{}" not in text
    assert [text[s:e] for s, e in doc.pages[0].headings] == ["Data Policy", "3.1 Retention"]
    assert doc.tables[0].title == "Fees" and doc.tables[0].rows[1] == ["Gold", "$1,200"]


def test_text_form_feeds_are_pages_and_markdown_tables_are_tables(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Overview\nFirst page.\f# Figures\n\n| Year | Revenue |\n|---|---|\n| 2024 | $1,000 |\n")
    doc = parse(path)
    assert [p.number for p in doc.pages] == [1, 2]
    assert doc.pages[1].text.startswith("# Figures")
    assert doc.tables[0].page == 2 and doc.tables[0].rows == [["Year", "Revenue"], ["2024", "$1,000"]]


def test_csv_is_one_table(tmp_path):
    path = tmp_path / "kpis.csv"
    path.write_text("quarter;revenue\nQ1;1234.5\nQ2;900\n")
    doc = parse(path)
    assert doc.kind == "csv" and doc.tables[0].rows == [["quarter", "revenue"], ["Q1", "1234.5"], ["Q2", "900"]]


def test_docx_auto_numbering_is_rendered_into_the_text(tmp_path):
    """Word-numbered clauses have no number in their text runs; the parser renders "14.1", "14.2", "(a)"."""
    import docx
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    d = docx.Document()
    numbering = d.part.numbering_part.element
    numbering.insert(0, parse_xml(
        f'<w:abstractNum {w} w:abstractNumId="90">'
        '<w:lvl w:ilvl="0"><w:start w:val="14"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/></w:lvl>'
        '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%3)"/></w:lvl>'
        '</w:abstractNum>'))
    numbering.append(parse_xml(f'<w:num {w} w:numId="90"><w:abstractNumId w:val="90"/></w:num>'))

    def numbered(text, level):
        p = d.add_paragraph(text)
        p._p.get_or_add_pPr().append(parse_xml(
            f'<w:numPr {w}><w:ilvl w:val="{level}"/><w:numId w:val="90"/></w:numPr>'))

    numbered("Governing Law and Disputes", 0)
    numbered("Governing Law. New York law governs.", 1)
    numbered("Jurisdiction. Courts of New York County.", 1)
    numbered("first limb", 2)
    numbered("second limb", 2)
    numbered("Notices. In writing.", 1)
    d.add_paragraph("Plain steps:", style="List Number")  # the template's own single-level list
    path = tmp_path / "numbered.docx"
    d.save(path)
    lines = parse(path).pages[0].text.split("\n\n")
    assert lines[:6] == ["14. Governing Law and Disputes", "14.1 Governing Law. New York law governs.",
                         "14.2 Jurisdiction. Courts of New York County.", "(a) first limb", "(b) second limb",
                         "14.3 Notices. In writing."]
    assert lines[6] == "1. Plain steps:"


def test_unstorable_characters_are_replaced_without_moving_offsets():
    from ingest.pipeline import clean_text

    text = "Fee\x00 is \ud800USD 10"
    cleaned = clean_text(text)
    assert len(cleaned) == len(text) and "\x00" not in cleaned and cleaned.encode("utf-8")
    assert cleaned.endswith("USD 10") and clean_text("plain") == "plain"
