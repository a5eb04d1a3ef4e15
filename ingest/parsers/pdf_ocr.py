"""PDF pages read by OCR: pages whose text layer is missing or thin while images cover much of the page.

A page is a candidate when its text layer has fewer than ``OcrConfig.min_chars`` non-space characters and
image objects cover ``min_image_share`` of it or more (a blank or a short typed page has no such images).
Candidates are rendered one at a time (pdfium is not thread-safe) at ``OcrConfig.dpi`` and recognised in
parallel; the OCR text replaces the thin layer (a scan's Bates stamp is in the image as well), keeps its page
number, and its tables are searched from the word boxes by the same borderless-table builder as text pages.
"""
from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Callable

from ingest.errors import IngestError
from ingest.ocr import OcrConfig, OcrJob, OcrStats, low_confidence_warning, ocr_layout, ocr_pages
from ingest.parsers.document import Page, ParsedDocument
from ingest.tables.precheck import may_hold_table

log = logging.getLogger(__name__)
MAX_PIXELS = 60_000_000  # a page rendered larger than this (a poster, a drawing) is rendered at a lower dpi


def thin_text(text: str, cfg: OcrConfig) -> bool:
    return sum(not c.isspace() for c in text) < cfg.min_chars


def image_share(page) -> float:
    """The share of the page's area covered by image objects (top level and one form level down), capped at 1."""
    import pypdfium2.raw as raw

    width, height = float(page.get_width()), float(page.get_height())
    area = max(1.0, width * height)
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    covered = 0.0

    def add(obj) -> None:
        nonlocal covered
        if raw.FPDFPageObj_GetBounds(obj, ctypes.byref(left), ctypes.byref(bottom), ctypes.byref(right),
                                     ctypes.byref(top)):
            w = min(right.value, width) - max(left.value, 0.0)
            h = min(top.value, height) - max(bottom.value, 0.0)
            covered += max(0.0, w) * max(0.0, h)

    for i in range(raw.FPDFPage_CountObjects(page.raw)):
        obj = raw.FPDFPage_GetObject(page.raw, i)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == raw.FPDF_PAGEOBJ_IMAGE:
            add(obj)
        elif kind == raw.FPDF_PAGEOBJ_FORM:
            for k in range(raw.FPDFFormObj_CountObjects(obj)):
                sub = raw.FPDFFormObj_GetObject(obj, k)
                if raw.FPDFPageObj_GetType(sub) == raw.FPDF_PAGEOBJ_IMAGE:
                    add(sub)
        if covered >= area:
            break
    return min(1.0, covered / area)


def needs_ocr(page, text: str, cfg: OcrConfig) -> bool:
    return thin_text(text, cfg) and image_share(page) >= cfg.min_image_share


def ocr_pdf_pages(path: Path, parsed: ParsedDocument, numbers: list[int], cfg: OcrConfig,
                  on_page: Callable[[int], None] | None = None, tables: bool = True) -> None:
    """OCR of the pages ``numbers`` (1-based) of ``path``, in place in ``parsed``: their text, headings and tables.
    A missing OCR engine or a page that fails becomes a warning while the document has other text, and the
    error of the document when it has none (``_check_text`` in ``ingest.parsers.pdf``)."""
    import pypdfium2 as pdfium

    from ingest.tables.pdf import layout_tables

    stats = OcrStats()
    doc = pdfium.PdfDocument(str(path), password="")
    try:
        def job(number: int) -> OcrJob:
            def render():
                page = doc[number - 1]
                try:
                    area = max(1.0, float(page.get_width()) * float(page.get_height()))
                    scale = min(cfg.dpi / 72, (MAX_PIXELS / area) ** 0.5)
                    bitmap = page.render(scale=scale, grayscale=True)
                    return bitmap.to_pil(), 1 / scale
                finally:
                    page.close()
            return OcrJob(number, render)

        try:
            done = ocr_pages([job(n) for n in numbers], cfg, on_page, stats)
        except IngestError as exc:  # the engine is missing
            parsed.warnings.append(f"{len(numbers)} scanned page(s) not read: {exc}")
            parsed.ocr_error = str(exc)
            return
    finally:
        doc.close()
    parsed.warnings.extend(stats.failed)
    parsed.ocr_pages += len(done)
    for number, page in sorted(done.items()):
        if not page.text.strip():
            continue
        if (warning := low_confidence_warning(number, page, cfg)) is not None:
            parsed.warnings.append(warning)
        parsed.pages[number - 1] = Page(number, page.text, list(page.headings))
        if tables and may_hold_table(page.text):
            try:
                got, _ = layout_tables(ocr_layout(page), number, [])
                parsed.tables.extend(got)
            except Exception:  # noqa: BLE001 - this page loses its tables, not its text
                log.warning("table search failed on OCR'd page %d of %s", number, path.name, exc_info=True)
