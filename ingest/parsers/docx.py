"""DOCX: paragraphs in body order, headings from paragraph styles, tables, explicit page breaks."""
from __future__ import annotations

from pathlib import Path

from ingest.errors import IngestError
from ingest.parsers.docx_numbering import NumberingRenderer
from ingest.parsers.document import PageBuilder, ParsedDocument, RawTable, rows_as_text

W_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _has_page_break(paragraph) -> bool:
    for br in paragraph._p.iter(W_NS + "br"):
        if br.get(W_NS + "type") == "page":
            return True
    return False


def _is_heading(paragraph) -> bool:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    return name.startswith("Heading") or name == "Title"


def parse_docx(path: Path) -> ParsedDocument:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # noqa: BLE001 - python-docx raises KeyError, BadZipFile, lxml errors...
        raise IngestError(f"the DOCX is damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    numbering = NumberingRenderer(document)
    pages = []
    tables: list[RawTable] = []
    page = PageBuilder(1)
    last_text = ""
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = block.text
            number = numbering.label(block) if text.strip() else ""
            if number and not text.lstrip().startswith(number):
                text = f"{number} {text.strip()}"
            page.add(text, heading=_is_heading(block))
            if text.strip():
                last_text = text.strip()
            if _has_page_break(block):
                pages.append(page.build())
                page = PageBuilder(page.number + 1)
        elif isinstance(block, Table):
            rows = []
            for row in block.rows:
                cells = []
                for cell in row.cells:
                    cells.append(cell.text.strip())
                rows.append(cells)
            if rows:
                page.add(rows_as_text(rows))
                tables.append(RawTable(page.number, last_text, rows, context=last_text))
    pages.append(page.build())
    pages = [p for p in pages if p.text] or pages[:1]
    if not any(p.text for p in pages):
        raise IngestError("the DOCX contains no text")
    return ParsedDocument("docx", pages, tables)
