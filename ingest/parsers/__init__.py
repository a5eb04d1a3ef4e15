"""Parsers turn one file into pages of text (with known heading spans) and raw tables.

Every parser returns a ``ParsedDocument``; page numbers are 1-based. DOCX has no fixed pages, so a page
there is the text between explicit page breaks; a spreadsheet's page is one sheet. Here: picking the parser
of a file kind (``get_parser``, ``parse_file``, ``parse_file_staged``); the document types themselves live in
``ingest.parsers.document`` and are re-exported, so ``from ingest.parsers import Page`` keeps working.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ingest.parsers.document import Cell, OcrProgress, Page, PageBuilder, ParsedDocument, RawTable, rows_as_text

if TYPE_CHECKING:
    from ingest.ocr import OcrConfig

__all__ = ["Cell", "OcrProgress", "Page", "PageBuilder", "ParsedDocument", "RawTable", "rows_as_text",
           "get_parser", "parse_file", "parse_file_staged"]


def get_parser(kind: str) -> Callable[..., ParsedDocument]:
    if kind == "pdf":
        from ingest.parsers.pdf import parse_pdf
        return parse_pdf
    if kind == "docx":
        from ingest.parsers.docx import parse_docx
        return parse_docx
    if kind == "html":
        from ingest.parsers.html import parse_html
        return parse_html
    if kind == "text":
        from ingest.parsers.text import parse_text
        return parse_text
    if kind == "xlsx":
        from ingest.parsers.sheet import parse_xlsx
        return parse_xlsx
    if kind == "csv":
        from ingest.parsers.sheet import parse_csv
        return parse_csv
    if kind == "image":
        from ingest.parsers.image import parse_image
        return parse_image
    raise ValueError(f"no parser for {kind}")


def parse_file(path: Path, kind: str, ocr: OcrConfig | None = None, on_ocr_page: OcrProgress | None = None
               ) -> ParsedDocument:
    if kind in ("pdf", "image"):  # the formats that may need OCR (``ocr``: engine, cache, workers)
        return get_parser(kind)(path, ocr=ocr, on_ocr_page=on_ocr_page)
    return get_parser(kind)(path)


def parse_file_staged(path: Path, kind: str, ocr: OcrConfig | None = None, on_ocr_page: OcrProgress | None = None
                      ) -> tuple[ParsedDocument, Callable[[], None] | None]:
    """The document with its text (and the tables found cheaply), plus what is left to do, if anything: a
    function that adds the remaining tables in place (PDF: pdfplumber's ruled-table search) and may replace a
    page's text (a sideways page read upright). The pipeline chunks and embeds while it runs. Scanned pages
    are OCR'd in the first step (chunking needs their text)."""
    if kind == "pdf":
        from ingest.parsers.pdf import parse_pdf_text
        return parse_pdf_text(path, ocr=ocr, on_ocr_page=on_ocr_page)
    return parse_file(path, kind, ocr, on_ocr_page), None
