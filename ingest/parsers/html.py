"""HTML: headings h1-h6, block text in document order, <table> elements as tables."""
from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

from ingest.errors import IngestError
from ingest.parsers.document import PageBuilder, ParsedDocument, RawTable, rows_as_text
from ingest.parsers.text import read_text

HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
BLOCKS = {"p", "li", "pre", "blockquote", "dt", "dd", "caption", "figcaption", "address"}
SKIP = {"script", "style", "noscript", "template", "head", "svg"}


def parse_html(path: Path) -> ParsedDocument:
    soup = BeautifulSoup(read_text(path), "html.parser")
    page = PageBuilder(1)
    tables: list[RawTable] = []
    state = {"last": ""}

    def emit(text: str, heading: bool = False) -> None:
        text = " ".join(text.split())
        if text:
            page.add(text, heading=heading)
            state["last"] = text

    def walk(node: Tag) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if child.strip() and node.name not in SKIP:
                    emit(str(child))
                continue
            if not isinstance(child, Tag) or child.name in SKIP:
                continue
            if child.name in HEADINGS:
                emit(child.get_text(" ", strip=True), heading=True)
            elif child.name == "table":
                rows = [[c.get_text(" ", strip=True) for c in tr.find_all(["td", "th"])] for tr in child.find_all("tr")]
                rows = [r for r in rows if any(r)]
                if rows:
                    cap = child.find("caption")
                    title = cap.get_text(" ", strip=True) if cap else state["last"]
                    page.add(rows_as_text(rows))
                    tables.append(RawTable(1, title, rows, context=title))
            elif child.name in BLOCKS:
                emit(child.get_text(" ", strip=True))
            else:
                walk(child)

    walk(soup.body or soup)
    built = page.build()
    if not built.text:
        raise IngestError("the HTML page contains no text")
    return ParsedDocument("html", [built], tables)
