"""Parsers turn one file into pages of text (with known heading spans) and raw tables.

Every parser returns a ``ParsedDocument``; page numbers are 1-based. DOCX has no fixed pages, so a page
there is the text between explicit page breaks; a spreadsheet's page is one sheet.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ingest.ocr import OcrConfig

Cell = str | float | int | None


@dataclass
class Page:
    number: int
    text: str
    headings: list[tuple[int, int]] = field(default_factory=list)  # (start, end) of heading lines in text


@dataclass
class RawTable:
    page: int
    title: str
    rows: list[list[Cell]]
    context: str = ""  # nearby text (captions, "in thousands") used to find units
    bbox: tuple[float, float, float, float] | None = None  # PDF points (x0, top, x1, bottom), top-left origin
    header_rows: int | None = None  # the parser's count of header rows, when its layout tells it
    source: str = ""  # how it was found: "ruled" | "aligned" (PDF), "" elsewhere
    indents: list[float | None] | None = None  # x of each row's first cell when the layout gives it


@dataclass
class ParsedDocument:
    kind: str
    pages: list[Page]
    tables: list[RawTable] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ocr_pages: int = 0  # pages whose text came from OCR
    ocr_error: str = ""  # why scanned pages could not be read (no OCR engine), when they could not


class PageBuilder:
    """Accumulates blocks of text for one page, remembering which blocks are headings."""

    def __init__(self, number: int):
        self.number = number
        self.parts: list[str] = []
        self.headings: list[tuple[int, int]] = []
        self.length = 0

    def add(self, text: str, heading: bool = False) -> None:
        text = text.strip()
        if not text:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        if heading:
            self.headings.append((self.length, self.length + len(text)))
        self.parts.append(text)
        self.length += len(text)

    def build(self) -> Page:
        return Page(self.number, "".join(self.parts), self.headings)


def rows_as_text(rows: list[list[Cell]]) -> str:
    def fmt(v: Cell) -> str:
        if v is None:
            return ""
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v).strip()

    lines = ["\t".join(fmt(v) for v in row).rstrip() for row in rows]
    return "\n".join(line for line in lines if line.strip())


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


OcrProgress = Callable[[int], None]  # called with a page number as each OCR'd page is done


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
