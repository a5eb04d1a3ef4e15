"""Image uploads (PNG, JPEG, TIFF; a multi-page TIFF is one page per frame) read by OCR.

Each frame is one page, numbered from 1, read through ``ingest.ocr`` exactly as a scanned PDF page is:
reading-order text, headings from line heights, tables from the word boxes. Sizes in points follow the
image's dpi (150 when it states none). An image over ``MAX_PIXELS`` is refused before it is decoded.
"""
from __future__ import annotations

import logging
from pathlib import Path

from ingest.errors import IngestError
from ingest.ocr import OcrConfig, OcrJob, OcrStats, low_confidence_warning, ocr_layout, ocr_pages
from ingest.parsers.document import OcrProgress, Page, ParsedDocument
from ingest.tables.precheck import may_hold_table

log = logging.getLogger(__name__)
MAX_PIXELS = 80_000_000  # per frame: an A4 page at 1,200 dpi is 140 MP; 80 MP is ~1,000 dpi
MAX_FRAMES = 2_000
DEFAULT_DPI = 150.0


def _open(path: Path):
    from PIL import Image, UnidentifiedImageError

    try:
        img = Image.open(path)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise IngestError(f"the image cannot be read ({type(exc).__name__}: {exc})") from exc
    except Image.DecompressionBombError as exc:
        raise IngestError(f"the image is too large to read: {exc}") from exc
    if img.width * img.height > MAX_PIXELS:
        raise IngestError(f"the image is {img.width}x{img.height} pixels, over the {MAX_PIXELS // 1_000_000} MP limit")
    return img


def parse_image(path: Path, ocr: OcrConfig | None = None, on_ocr_page: OcrProgress | None = None) -> ParsedDocument:
    from PIL import ImageOps

    ocr = ocr or OcrConfig()
    img = _open(path)
    try:
        frames = min(getattr(img, "n_frames", 1), MAX_FRAMES)

        def job(number: int) -> OcrJob:
            def render():
                try:
                    img.seek(number - 1)
                    frame = ImageOps.exif_transpose(img).convert("L")  # a phone photo's orientation tag
                except (OSError, ValueError) as exc:
                    raise IngestError(f"frame {number} cannot be decoded ({exc})") from exc
                dpi = img.info.get("dpi") or (DEFAULT_DPI, DEFAULT_DPI)
                x_dpi = float(dpi[0]) if dpi and float(dpi[0]) >= 50 else DEFAULT_DPI
                return frame, 72.0 / x_dpi
            return OcrJob(number, render)

        stats = OcrStats()
        done = ocr_pages([job(n) for n in range(1, frames + 1)], ocr, on_ocr_page, stats)
    finally:
        img.close()
    parsed = ParsedDocument("image", [], [], list(stats.failed), ocr_pages=len(done))
    from ingest.tables.pdf import layout_tables

    for number in range(1, frames + 1):
        page = done.get(number)
        if page is not None and (warning := low_confidence_warning(number, page, ocr)) is not None:
            parsed.warnings.append(warning)
        parsed.pages.append(Page(number, page.text if page else "", list(page.headings) if page else []))
        if page is not None and may_hold_table(page.text):
            try:
                parsed.tables.extend(layout_tables(ocr_layout(page), number, [])[0])
            except Exception:  # noqa: BLE001 - this page loses its tables, not its text
                log.warning("table search failed on page %d of %s", number, path.name, exc_info=True)
    if not any(p.text.strip() for p in parsed.pages):
        detail = f" ({'; '.join(stats.failed[:3])})" if stats.failed else ""
        raise IngestError(f"OCR found no text in the image{detail}")
    return parsed
