"""Every file of the messy-PDF dev set (password-protected, malformed, rotated, scanned, huge tables) is parsed
or refused with a clear IngestError: never another exception. Scanned pages go through OCR. Skips when
../shared/eval is absent (bench/bench_ocr.py messy runs the same in one process per file, to catch hangs
and crashes)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[3] / "shared" / "eval" / "messy-pdfs"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not FOLDER.exists(), reason=f"{FOLDER} is absent (the messy-PDF dev set)"),
              pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed")]


def test_every_messy_pdf_is_parsed_or_refused_clearly():
    from ingest.chunker import ChunkConfig
    from ingest.detect import ZipLimits
    from ingest.errors import IngestError
    from ingest.ocr import OcrConfig
    from ingest.pipeline import PipelineLimits, read_and_parse

    limits = PipelineLimits(200 * 2**20, ZipLimits(500 * 2**20), ChunkConfig(), OcrConfig())
    parsed, refused, ocr_pages = 0, {}, 0
    for path in sorted(FOLDER.glob("*.pdf")):
        try:
            _, doc = read_and_parse(path, limits)
        except IngestError as exc:
            refused[path.name] = str(exc)
            continue
        parsed += 1
        ocr_pages += doc.ocr_pages
        assert any(p.text.strip() for p in doc.pages), path.name
    assert all(len(msg) > 15 for msg in refused.values()), refused
    assert ocr_pages >= 1, "no scanned page was OCR'd"
    assert parsed >= 0.8 * (parsed + len(refused)), refused
