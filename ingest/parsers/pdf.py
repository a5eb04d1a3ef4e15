"""PDF: text per page and ruled tables, via pypdf (encryption check) and pdfplumber (text, tables)."""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from ingest.errors import IngestError
from ingest.parsers import Page, ParsedDocument, RawTable

logging.getLogger("pdfminer").setLevel(logging.ERROR)


def check_pdf_readable(path: Path) -> None:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(str(path))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:  # noqa: BLE001 - unsupported algorithms raise various errors
                ok = 0
            if not ok:
                raise IngestError("the PDF is encrypted (password-protected); remove the password and upload it again")
        n = len(reader.pages)
    except IngestError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise IngestError(f"the PDF is damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    if n == 0:
        raise IngestError("the PDF has no pages")


def _page_with_headings(page, number: int) -> Page:
    """Page text line by line; lines set in a larger font than the page's body text are headings."""
    lines = [ln for ln in page.extract_text_lines(return_chars=True) if ln["text"].strip()]
    if not lines:
        return Page(number, "")
    sizes = [round(float(ln["chars"][0].get("size", 0)), 1) if ln.get("chars") else 0.0 for ln in lines]
    body = Counter(sizes).most_common(1)[0][0]
    parts, headings, pos = [], [], 0
    for ln, size in zip(lines, sizes):
        text = ln["text"].strip()
        if body and size >= body * 1.15 and len(text) <= 120:
            headings.append((pos, pos + len(text)))
        parts.append(text)
        pos += len(text) + 1
    return Page(number, "\n".join(parts), headings)


def parse_pdf(path: Path) -> ParsedDocument:
    check_pdf_readable(path)
    import pdfplumber

    pages: list[Page] = []
    tables: list[RawTable] = []
    try:
        with pdfplumber.open(str(path), password="") as pdf:
            for number, page in enumerate(pdf.pages, start=1):
                pages.append(_page_with_headings(page, number))
                # pdfplumber's default strategy finds ruled tables only: skip pages without rules
                ruled = page.rects or page.lines
                for table in (page.find_tables() if ruled else []):
                    rows = table.extract()
                    if len(rows) < 2 or max(len(r) for r in rows) < 2:
                        continue
                    top = table.bbox[1]
                    above = page.crop((0, max(0, top - 60), page.width, top)).extract_text() or "" if top > 1 else ""
                    lines = [ln.strip() for ln in above.splitlines() if ln.strip()]
                    captions = [ln for ln in lines if not (ln.startswith("(") and ln.endswith(")"))]
                    title = (captions or lines or [""])[-1]
                    tables.append(RawTable(number, title, rows, context=" ".join(lines[-3:])))
                page.flush_cache()
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types on damaged files
        raise IngestError(f"the PDF is damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    if not any(p.text for p in pages):
        raise IngestError("the PDF has no extractable text (a scanned image? OCR is not supported)")
    return ParsedDocument("pdf", pages, tables)
