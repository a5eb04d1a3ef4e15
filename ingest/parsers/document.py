"""The parsed-document types every parser returns and the table finders fill: ``ParsedDocument`` with its
``Page``s and ``RawTable``s, a table ``Cell``, ``PageBuilder`` (a page assembled block by block),
``rows_as_text`` and the ``OcrProgress`` callback type.

Page numbers are 1-based. This module imports nothing of ``ingest.parsers`` or ``ingest.tables``, so both
can take the types from here without a circle; ``ingest.parsers`` re-exports them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

Cell = str | float | int | None
OcrProgress = Callable[[int], None]  # called with a page number as each OCR'd page is done


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
