"""Plain text and Markdown: form feeds split pages; Markdown pipe tables become tables."""
from __future__ import annotations

import re
from pathlib import Path

from ingest.errors import IngestError
from ingest.parsers.document import Page, ParsedDocument, RawTable

PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
PIPE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def read_text(path: Path) -> str:
    data = path.read_bytes()
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def markdown_tables(text: str, page: int) -> list[RawTable]:
    tables, block, title, prev = [], [], "", ""
    for line in text.splitlines() + [""]:
        if PIPE_ROW.match(line):
            if not block:
                title = prev
            if not PIPE_RULE.match(line):
                block.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if len(block) >= 2:
            tables.append(RawTable(page, title.lstrip("# ").strip(), block, context=title))
        block = []
        if line.strip():
            prev = line.strip()
    return tables


def parse_text(path: Path) -> ParsedDocument:
    text = read_text(path).replace("\r\n", "\n").replace("\r", "\n")
    pages = [Page(i, part.strip()) for i, part in enumerate(text.split("\f"), start=1)]
    if not any(p.text for p in pages):
        raise IngestError("the file contains only whitespace")
    tables = [t for p in pages for t in markdown_tables(p.text, p.number)]
    return ParsedDocument("text", pages, tables)
