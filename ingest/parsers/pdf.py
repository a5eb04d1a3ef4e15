"""PDF: page text from pypdfium2 (fast), tables searched only on pages that may hold one, without pdfminer.

pypdf checks encryption; pypdfium2 gives each page's text and heading lines (set larger than the body);
a cheap pre-check (numbers aligned in columns, from pypdfium2's character boxes, or ruling paths) picks the
pages searched for tables: pages with numbers aligned but no rules from pypdfium2's characters alone, at
once; pages with rules ("ruled") later (``parse_pdf_text``'s second step), by pdfplumber's grid search on the
page's drawn paths and characters read with pypdfium2 (``ingest.tables.ruled``). pdfplumber (pdfminer) reads
only what pypdfium2 cannot place: /Rotate pages, pages whose text pdfium cannot map char by char, and every
page of a file pypdfium2 cannot open. Sideways pages are turned upright for both text and tables.
"""
from __future__ import annotations

import logging
import re
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from ingest.errors import IngestError
from ingest.ocr import OcrConfig
from ingest.parsers.document import Page, ParsedDocument, RawTable
from ingest.parsers.pdf_ocr import needs_ocr, ocr_pdf_pages
from ingest.tables.pdfium import count_paths, pdfium_chars
from ingest.tables.precheck import NUM_TOKEN, may_hold_table

logging.getLogger("pdfminer").setLevel(logging.ERROR)
log = logging.getLogger(__name__)

TABLE_BUDGET_S = 120.0  # table search per document; past it the rest of the pages keep only their text
MAX_TABLE_CHARS = 40_000  # pages with more characters than this are not searched for tables


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
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError) as exc:
        raise IngestError(f"the PDF is damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    if n == 0:
        raise IngestError("the PDF has no pages")


def numbers_aligned(textpage, text: str) -> bool:
    """Numbers aligned in columns: two x-positions where numbers end on three or more lines each (or one
    on eight), read from pypdfium2's character boxes."""
    columns: dict[int, set[int]] = {}
    for m in NUM_TOKEN.finditer(text):
        token = m.group().strip()
        if len(token) < 1 or not any(ch.isdigit() for ch in token):
            continue
        left, bottom, right, top = textpage.get_charbox(m.end() - 1)
        columns.setdefault(round(right / 3), set()).add(round(bottom / 2))
    merged: dict[int, set[int]] = {}
    for key in sorted(columns):  # neighbouring 3-pt bins are the same column
        target = key - 1 if key - 1 in merged else key
        merged.setdefault(target, set()).update(columns[key])
    counts = sorted((len(v) for v in merged.values()), reverse=True)
    return (len(counts) >= 2 and counts[1] >= 3) or (bool(counts) and counts[0] >= 8)


def _sideways(textpage, text: str) -> bool:
    """Most sampled characters turned by about 90 degrees: a landscape table printed on a portrait page."""
    import math

    import pypdfium2.raw as raw

    idx = [i for i in range(0, len(text), max(1, len(text) // 24)) if not text[i].isspace()][:24]
    if len(idx) < 6:
        return False
    turned = 0
    for i in idx:
        angle = float(raw.FPDFText_GetCharAngle(textpage.raw, i))
        turned += abs(math.sin(angle)) > 0.9
    return turned > 0.6 * len(idx)


def _headings(lines: list[str], sizes: list[float]) -> tuple[str, list[tuple[int, int]]]:
    body = Counter(s for s in sizes if s).most_common(1)
    body_size = body[0][0] if body else 0.0
    parts, headings, pos = [], [], 0
    for text, size in zip(lines, sizes):
        if body_size and size >= body_size * 1.15 and len(text) <= 120:
            headings.append((pos, pos + len(text)))
        parts.append(text)
        pos += len(text) + 1
    return "\n".join(parts), headings


def _pdfium_page(page, number: int) -> tuple[Page, str, list | None]:
    """Text and headings of one page; where to search it for tables: "" (nowhere), "ruled" (pdfplumber: rules
    drawn) or "aligned" (text alignment alone, from the char dicts returned with it)."""
    import pypdfium2.raw as raw

    tp = page.get_textpage()
    try:
        n = tp.count_chars()
        text = tp.get_text_range(0, n) if n > 0 else ""
        lines, sizes, start = [], [], 0
        aligned = len(text) == n
        for piece in re.split(r"(\r\n|\n|\r)", text):
            if piece in ("\r\n", "\n", "\r"):
                start += len(piece)
                continue
            stripped = piece.replace("\x02", "-").replace("\ufffe", "-").replace("\x00", "").strip()
            if stripped:
                lead = len(piece) - len(piece.lstrip())
                size = raw.FPDFText_GetFontSize(tp.raw, start + lead) if aligned else 0.0
                lines.append(stripped)
                sizes.append(round(float(size), 1))
            start += len(piece)
        numeric = may_hold_table(text)
        hint = aligned and numbers_aligned(tp, text) if numeric else False
        hint = hint or (aligned and _sideways(tp, text))
        paths = count_paths(page, 12)
        mode = "ruled" if paths >= 12 or (hint and not aligned) else ("aligned" if hint else "")
        chars = pdfium_chars(tp, text, float(page.get_height())) if mode == "aligned" else None
    finally:
        tp.close()
    body, headings = _headings(lines, sizes)
    return Page(number, body, headings), mode, chars


def _plumber_page_text(page, number: int) -> Page:
    lines = [ln for ln in page.extract_text_lines(return_chars=True) if ln["text"].strip()]
    sizes = [round(float(ln["chars"][0].get("size", 0)), 1) if ln.get("chars") else 0.0 for ln in lines]
    text, headings = _headings([ln["text"].strip() for ln in lines], sizes)
    return Page(number, text, headings)


def pdf_page_texts(path: Path, tables: bool = True, ocr: OcrConfig | None = None
                   ) -> tuple[list[Page], list[str], list[RawTable]] | None:
    """(pages, per page "" | "ruled" | "aligned" | "ocr", the tables found by alignment alone) from pypdfium2,
    or None when it cannot read the file. "ruled" pages are left to pdfplumber; "ocr" pages (a thin text layer
    over a scanned image, see ``ingest.parsers.pdf_ocr``) to OCR, when ``ocr`` is given."""
    try:
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(path), password="")
    except Exception:  # noqa: BLE001 - pdfium raises PdfiumError and others on damaged files
        return None
    from ingest.tables.layout import layout_from_chars
    from ingest.tables.pdf import layout_tables

    pages, modes, found = [], [], []
    try:
        for i in range(len(doc)):
            page = doc[i]
            try:
                p, mode, chars = _pdfium_page(page, i + 1)
                width, height = float(page.get_width()), float(page.get_height())
                if page.get_rotation() != 0 and mode:
                    mode = "ruled"  # a /Rotate page: pdfplumber's coordinates
                if ocr is not None and needs_ocr(page, p.text, ocr):
                    mode = "ocr"
            finally:
                page.close()
            if mode == "aligned" and tables and len(chars) <= MAX_TABLE_CHARS:
                try:
                    got, upright = layout_tables(layout_from_chars(chars, width, height), i + 1, [])
                    found.extend(got)
                    p = Page(i + 1, upright) if upright is not None else p
                except Exception:  # noqa: BLE001 - this page only: pdfplumber reads it instead
                    log.warning("aligned table search failed on page %d of %s", i + 1, path.name, exc_info=True)
                    mode = "ruled"
            pages.append(p)
            modes.append(mode)
    except Exception:  # noqa: BLE001
        return None
    finally:
        doc.close()
    return pages, modes, found


def parse_pdf(path: Path, tables: bool = True, ocr: OcrConfig | None = None,
              on_ocr_page: Callable[[int], None] | None = None) -> ParsedDocument:
    parsed, finish = parse_pdf_text(path, tables, ocr, on_ocr_page)
    if finish is not None:
        finish()
    return parsed


def parse_pdf_text(path: Path, tables: bool = True, ocr: OcrConfig | None = None,
                   on_ocr_page: Callable[[int], None] | None = None
                   ) -> tuple[ParsedDocument, Callable[[], None] | None]:
    """The pages' text (pypdfium2) and the tables found from its characters, at once; and a function that
    searches the ruled pages with pdfplumber (the slow part) and adds their tables to the document, replacing
    a sideways page's text by its upright reading. Chunking and embedding can start before it runs; a text
    it changes shows as a different ``ParsedDocument.pages`` entry. None when nothing is left to do.
    Scanned pages are OCR'd here, in the first step (``ocr``: None = the default ``OcrConfig``, no cache)."""
    check_pdf_readable(path)
    ocr = ocr or OcrConfig()
    fast = pdf_page_texts(path, tables, ocr)
    if fast is None:  # pypdfium2 cannot read it: pdfplumber does text and tables in one go
        return _parse_with_pdfplumber(path, tables), None
    pages, modes, found = fast
    parsed = ParsedDocument("pdf", pages, list(found), [])
    scanned = [i + 1 for i, m in enumerate(modes) if m == "ocr"]
    if scanned:
        ocr_pdf_pages(path, parsed, scanned, ocr, on_ocr_page, tables)
    ruled = [i + 1 for i, m in enumerate(modes) if m == "ruled"] if tables else []
    _check_text(parsed)
    return parsed, (lambda: _ruled_tables(path, parsed, ruled)) if ruled else None


def _check_text(parsed: ParsedDocument) -> None:
    parsed.tables.sort(key=lambda t: (t.page, t.bbox[1] if t.bbox else 0))
    if not any(p.text.strip() for p in parsed.pages):
        if parsed.ocr_error:
            raise IngestError(f"the PDF has no text layer and its scanned pages could not be read: {parsed.ocr_error}")
        if parsed.ocr_pages:
            raise IngestError(f"the PDF has no text layer and OCR found no text on its {parsed.ocr_pages} scanned"
                              " page(s)")
        raise IngestError("the PDF has no extractable text and no scanned page images to read")


def _parse_with_pdfplumber(path: Path, tables: bool) -> ParsedDocument:
    import pdfplumber

    try:
        with pdfplumber.open(str(path), password="") as pdf:
            pages = [_plumber_page_text(pg, n) for n, pg in enumerate(pdf.pages, start=1)]
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types on damaged files
        raise IngestError(f"the PDF is damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    parsed = ParsedDocument("pdf", pages, [], [])
    if tables:
        _ruled_tables(path, parsed, [n for n, p in enumerate(pages, start=1) if may_hold_table(p.text)])
    _check_text(parsed)
    return parsed


def _ruled_tables(path: Path, parsed: ParsedDocument, numbers: list[int]) -> None:
    """The table search of the pages ``numbers`` (1-based), within ``TABLE_BUDGET_S``: pdfplumber's ruled-grid
    search on edges and characters read with pypdfium2 (``ingest.tables.ruled``), pdfplumber itself (pdfminer)
    only for the pages pypdfium2 cannot give it."""
    started = time.monotonic()
    left = _pdfium_ruled_tables(path, parsed, numbers, started)
    if left:
        _plumber_ruled_tables(path, parsed, left, started)
    parsed.tables.sort(key=lambda t: (t.page, t.bbox[1] if t.bbox else 0))


def _over_budget(parsed: ParsedDocument, number: int, started: float) -> bool:
    if time.monotonic() - started <= TABLE_BUDGET_S:
        return False
    parsed.warnings.append(f"table search stopped at page {number} (over {TABLE_BUDGET_S:.0f} s)")
    return True


def _add_page_tables(parsed: ParsedDocument, number: int, page_found, upright_text: str | None) -> None:
    parsed.tables.extend(page_found)
    if upright_text is not None:  # a sideways page: its text read upright
        parsed.pages[number - 1] = Page(number, upright_text)


def _pdfium_ruled_tables(path: Path, parsed: ParsedDocument, numbers: list[int], started: float) -> list[int]:
    """The pages of ``numbers`` searched with pypdfium2; returns those left to pdfplumber."""
    from ingest.tables.ruled import pdfium_page_tables

    try:
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(path), password="")
    except Exception:  # noqa: BLE001 - pdfium raises PdfiumError and others on damaged files
        return numbers
    left: list[int] = []
    try:
        for number in numbers:
            if _over_budget(parsed, number, started):
                return []
            try:
                page = doc[number - 1]
            except Exception:  # noqa: BLE001
                left.append(number)
                continue
            try:
                got = pdfium_page_tables(page, number, MAX_TABLE_CHARS)
            except ValueError:
                parsed.warnings.append(f"page {number}: too many characters to search for tables")
                continue
            except Exception:  # noqa: BLE001 - this page only: pdfplumber reads it instead
                log.warning("table search failed on page %d of %s", number, path.name, exc_info=True)
                got = None
            finally:
                page.close()
            if got is None:
                left.append(number)
            else:
                _add_page_tables(parsed, number, *got)
    finally:
        doc.close()
    return left


def _plumber_ruled_tables(path: Path, parsed: ParsedDocument, numbers: list[int], started: float) -> None:
    """pdfplumber's table search on the pages ``numbers`` (1-based)."""
    import pdfplumber

    from ingest.tables.pdf import page_tables

    try:
        with pdfplumber.open(str(path), password="") as pdf:
            for number in numbers:
                if _over_budget(parsed, number, started):
                    break
                page = pdf.pages[number - 1]
                if len(page.chars) > MAX_TABLE_CHARS:
                    parsed.warnings.append(f"page {number}: too many characters to search for tables")
                    continue
                try:
                    page_found, upright_text = page_tables(page, number)
                except Exception as exc:  # noqa: BLE001 - one odd page loses its tables, not the document's
                    log.warning("table search failed on page %d of %s", number, path.name, exc_info=True)
                    parsed.warnings.append(f"page {number}: table search failed ({type(exc).__name__})")
                    continue
                _add_page_tables(parsed, number, page_found, upright_text)
                page.flush_cache()
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types on damaged files
        parsed.warnings.append(f"tables skipped: the PDF is partly damaged ({type(exc).__name__})")
