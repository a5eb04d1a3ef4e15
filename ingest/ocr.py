"""Text of page images: PDF pages without a text layer (or only a thin one) and image uploads.

``OcrConfig`` says which engine, at what resolution, how many pages at once and where results are cached.
``ocr_pages`` recognises a list of page images in parallel (a thread per page driving the engine, at most
``workers``), each reported to ``on_page`` as it finishes, and returns ``OcrPage``s: the text in the engine's
reading order (a blank line between paragraphs), heading lines (set clearly taller than the body), and the
words in PDF points as the char-dict-like word boxes the table layout reads (``ocr_layout``), so OCR'd tables
go through the same borderless-table builder as born-digital ones.

Cache: one JSON file per page under ``cache_dir``, named by the SHA-256 of the page image's pixels (plus
engine, version, resolution and language). ``cache_dir`` is per tenant (the pipeline passes
``DATA_DIR/ocr/<tenant>``): a cache hit is only ever another page of the same tenant, so the time an ingest
takes tells no tenant whether another one holds the same page, and deleting a tenant's folder deletes its
OCR text. File names are hashes only: no document name or tenant text is in them.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median
from typing import Callable

from ingest.errors import IngestError
from ingest.ocr_engines import Word, engine_version, recognise

log = logging.getLogger(__name__)
CACHE_FORMAT = 1
RENDER_LOCK = threading.Lock()


@dataclass(frozen=True)
class OcrConfig:
    engine: str = "tesseract"
    dpi: int = 200  # scanned PDF pages are rendered at this for the engine (300: ~25% slower, no more accurate)
    workers: int = 0  # pages at once; 0 = the CPU count
    cache_dir: Path | None = None  # None: no cache
    lang: str = "eng"
    min_chars: int = 40  # a page with fewer non-space characters in its text layer is "thin"
    min_image_share: float = 0.25  # ... and is OCR'd when images cover this share of it
    heading_ratio: float = 1.35  # a line this much taller than the body's median is a heading
    low_confidence: float = 60.0  # a page read with a lower mean word confidence (0-100) gets a warning

    def pool_size(self, pages: int) -> int:
        return max(1, min(pages, self.workers or os.cpu_count() or 1))


@dataclass
class OcrPage:
    text: str
    headings: list[tuple[int, int]]
    words: list[dict]  # text, x0, x1, top, bottom (PDF points, top-left origin), size
    width: float  # points
    height: float
    cached: bool = False
    confidence: float | None = None  # the engine's mean word confidence (0-100), weighted by word length


def low_confidence_warning(number: int, page: OcrPage, cfg: OcrConfig) -> str | None:
    """English text reads at 90-96 here; a script the installed model does not know (Chinese read by ``eng``)
    at ~30: its text is kept, and the document says so."""
    if page.confidence is None or page.confidence >= cfg.low_confidence or not page.text.strip():
        return None
    return (f"page {number}: OCR read it with low confidence ({page.confidence:.0f}%); its text may be wrong"
            f" (a script or language other than the OCR language '{cfg.lang}'?)")


@dataclass
class OcrJob:
    """One page to read: ``render()`` gives its image and the image's size in points per pixel. Called on the
    OCR thread under ``RENDER_LOCK`` (pdfium is not thread-safe), so at most ``workers`` page images are in
    memory at once, however long the document."""
    number: int
    render: Callable[[], tuple[object, float]]


@dataclass
class OcrStats:
    pages: int = 0
    cached: int = 0
    failed: list[str] = field(default_factory=list)


def tenant_cache(cfg: OcrConfig, tenant: str) -> OcrConfig:
    """``cfg`` with its cache in the tenant's own folder under ``cfg.cache_dir`` (named by a hash of the tenant,
    so no tenant name, however odd, makes a path)."""
    if cfg.cache_dir is None:
        return cfg
    folder = hashlib.sha256(f"lexicon-ocr-tenant\x00{tenant}".encode()).hexdigest()[:32]
    return replace(cfg, cache_dir=Path(cfg.cache_dir) / folder)


def _key(image, cfg: OcrConfig, version: str) -> str:
    h = hashlib.sha256()
    h.update(f"{CACHE_FORMAT}|{cfg.engine}|{version}|{cfg.lang}|{image.mode}|{image.size}|".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _store(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:  # a full disk loses the cache entry, not the page
        log.warning("could not write the OCR cache entry %s", path, exc_info=True)


def _page_from_words(words: list[Word], scale: float, width: float, height: float, cfg: OcrConfig) -> OcrPage:
    """Reading-order text (lines of a paragraph joined by newlines, paragraphs by a blank line), heading
    spans and word boxes in points (``scale``: points per pixel)."""
    lines: list[list[Word]] = []
    keys: list[tuple[int, int]] = []
    for w in words:
        key = (w.block, w.par, w.line)
        if not lines or key != keys[-1][0]:
            lines.append([])
            keys.append((key, len(lines) - 1))
        lines[-1].append(w)
    heights = [median(w.bottom - w.top for w in ln) for ln in lines]
    body = median(heights) if heights else 0.0
    parts, headings, pos, prev_par = [], [], 0, None
    for (key, _), ln, h in zip(keys, lines, heights):
        text = " ".join(w.text for w in ln)
        sep = "" if prev_par is None else ("\n" if key[:2] == prev_par else "\n\n")
        pos += len(sep)
        if body and h >= cfg.heading_ratio * body and len(text) <= 120 and any(c.isalpha() for c in text):
            headings.append((pos, pos + len(text)))
        parts.append(sep + text)
        pos += len(text)
        prev_par = key[:2]
    chars = sum(len(w.text) for w in words)
    confidence = sum(w.conf * len(w.text) for w in words) / chars if chars else None
    boxes = [{"text": w.text, "x0": w.x0 * scale, "x1": w.x1 * scale, "top": w.top * scale,
              "bottom": w.bottom * scale, "size": round((w.bottom - w.top) * scale, 1)} for w in words]
    return OcrPage("".join(parts), headings, boxes, width, height, confidence=confidence)


def _ocr_one(job: OcrJob, cfg: OcrConfig, version: str) -> OcrPage:
    with RENDER_LOCK:
        image, scale = job.render()
    image = image if image.mode == "L" else image.convert("L")
    image.info["dpi"] = (round(72 / scale),) * 2
    width, height = image.width * scale, image.height * scale
    path = None
    if cfg.cache_dir is not None:
        key = _key(image, cfg, version)
        path = Path(cfg.cache_dir) / key[:2] / f"{key}.json"
        hit = _load(path)
        if hit is not None:
            return OcrPage(hit["text"], [tuple(h) for h in hit["headings"]], hit["words"], width, height, cached=True,
                           confidence=hit.get("confidence"))
    page = _page_from_words(recognise(image, cfg.engine, cfg.lang), scale, width, height, cfg)
    if path is not None:
        _store(path, {"text": page.text, "headings": page.headings, "words": page.words,
                      "confidence": page.confidence})
    return page


def ocr_pages(jobs: list[OcrJob], cfg: OcrConfig, on_page: Callable[[int], None] | None = None,
              stats: OcrStats | None = None) -> dict[int, OcrPage]:
    """OCR of each job's image, by page number; a page whose OCR fails is left out (its error in ``stats``).
    Raises IngestError when the engine is not installed."""
    if not jobs:
        return {}
    version = engine_version(cfg.engine)
    out: dict[int, OcrPage] = {}
    stats = stats if stats is not None else OcrStats()
    with ThreadPoolExecutor(cfg.pool_size(len(jobs)), thread_name_prefix="lexicon-ocr") as pool:
        futures = [(job.number, pool.submit(_ocr_one, job, cfg, version)) for job in jobs]
        for number, fut in futures:
            try:
                page = fut.result()
            except IngestError as exc:
                stats.failed.append(f"page {number}: OCR failed ({exc})")
                continue
            out[number] = page
            stats.pages += 1
            stats.cached += page.cached
            if on_page is not None:
                on_page(number)
    return out


def ocr_layout(page: OcrPage):
    """The table layout (``ingest.tables.layout.Layout``) of an OCR'd page, built from its word boxes. OCR boxes
    hug the glyphs ("Segment" reaches lower than "2024" on the same line), where a PDF's character boxes share
    their line's font box; so words are first put on lines by vertical overlap and given their line's top and
    bottom, as the PDF path has them, then the same line grouping and column segmentation run."""
    from ingest.tables.layout import Layout, Line, group_lines, segment_line

    rows: list[list[dict]] = []
    for w in sorted((dict(w) for w in page.words), key=lambda w: (w["top"] + w["bottom"]) / 2):
        if rows:
            top, bottom = min(x["top"] for x in rows[-1]), max(x["bottom"] for x in rows[-1])
            height = median(x["bottom"] - x["top"] for x in rows[-1])
            overlap = min(bottom, w["bottom"]) - max(top, w["top"])
            if overlap >= 0.5 * min(height, w["bottom"] - w["top"]):
                rows[-1].append(w)
                continue
        rows.append([w])
    words = []
    for row in rows:
        top, bottom = min(x["top"] for x in row), max(x["bottom"] for x in row)
        words.extend(dict(x, top=top, bottom=bottom) for x in row)
    lines = []
    for ws in group_lines(words):
        segs = segment_line(ws)
        if segs:
            lines.append(Line(min(s.top for s in segs), max(s.bottom for s in segs), segs))
    return Layout(lines, page.width, page.height, 0)
