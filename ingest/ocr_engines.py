"""OCR engines: one page image (PIL, grayscale) in, words with pixel boxes in reading order out.

``tesseract`` (the default) runs Debian's ``tesseract`` binary as a child process, one per page, with
``OMP_THREAD_LIMIT=1``: its threads never meet torch's OpenMP pool, pages run in parallel as processes, and
its layout analysis gives the reading order (blocks, paragraphs, lines; columns read one after the other).
``rapidocr`` (PP-OCRv4 through onnxruntime, ``pip install rapidocr-onnxruntime``) is kept as the
alternative measured in bench/bench_ocr.py; it runs in-process with onnxruntime's intra-op threads pinned
to one per page so its pool stays beside torch's instead of competing with it.
"""
from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass

from ingest.errors import IngestError

TESSERACT_TIMEOUT_S = 120.0  # one page; past it the page gets no OCR text and a warning


@dataclass
class Word:
    """A recognised word: pixel box, and where it sits in the engine's reading order."""
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    block: int  # paragraphs: a change of (block, par) starts a new paragraph
    par: int
    line: int
    conf: float


@functools.lru_cache(maxsize=1)
def tesseract_version() -> str | None:
    exe = shutil.which("tesseract")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = (out.stdout or out.stderr).splitlines()
    return first[0].strip() if first else "tesseract"


def engine_version(engine: str) -> str:
    """What cached results depend on; raises IngestError when the engine is not installed."""
    if engine == "tesseract":
        version = tesseract_version()
        if version is None:
            raise IngestError("OCR needs the tesseract-ocr package (apt-get install tesseract-ocr; make setup does it)")
        return version
    if engine == "rapidocr":
        try:
            from importlib.metadata import version
            return f"rapidocr {version('rapidocr-onnxruntime')}"
        except Exception as exc:  # noqa: BLE001
            raise IngestError("OCR engine rapidocr is not installed (pip install rapidocr-onnxruntime)") from exc
    raise IngestError(f"unknown OCR engine {engine!r}: tesseract or rapidocr")


def recognise(image, engine: str, lang: str = "eng") -> list[Word]:
    if engine == "tesseract":
        return tesseract_words(image, lang)
    if engine == "rapidocr":
        return rapidocr_words(image)
    raise IngestError(f"unknown OCR engine {engine!r}: tesseract or rapidocr")


def tesseract_words(image, lang: str = "eng") -> list[Word]:
    """``tesseract - - tsv`` on a PNG piped in: words with block/paragraph/line numbers in reading order."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    dpi = str(int(image.info.get("dpi", (300, 300))[0]))
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    try:
        out = subprocess.run(["tesseract", "-", "-", "--dpi", dpi, "-l", lang, "--psm", "3", "tsv"],
                             input=buf.getvalue(), capture_output=True, timeout=TESSERACT_TIMEOUT_S, env=env)
    except FileNotFoundError as exc:
        raise IngestError("OCR needs the tesseract-ocr package (apt-get install tesseract-ocr)") from exc
    except subprocess.TimeoutExpired as exc:
        raise IngestError(f"OCR of a page took over {TESSERACT_TIMEOUT_S:.0f} s") from exc
    if out.returncode != 0:
        msg = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise IngestError(f"tesseract failed: {msg[-1] if msg else out.returncode}")
    words = []
    rows = csv.DictReader(io.StringIO(out.stdout.decode("utf-8", "replace")), delimiter="\t", quoting=csv.QUOTE_NONE)
    for r in rows:
        text = (r.get("text") or "").strip()
        if r.get("level") != "5" or not text:
            continue
        left, top, w, h = (int(r[k]) for k in ("left", "top", "width", "height"))
        words.append(Word(text, left, top, left + w, top + h, int(r["block_num"]), int(r["par_num"]),
                          int(r["line_num"]), float(r["conf"])))
    return words


_local = threading.local()


def _rapidocr():
    """One RapidOCR per thread (its pipeline keeps per-call state), onnxruntime with one intra-op thread."""
    eng = getattr(_local, "rapidocr", None)
    if eng is None:
        from rapidocr_onnxruntime import RapidOCR

        eng = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
        _local.rapidocr = eng
    return eng


def rapidocr_words(image) -> list[Word]:
    """RapidOCR's text lines (it boxes lines, not words) split into words with boxes shared out by length;
    lines are ordered top to bottom, and a vertical gap over one line height starts a paragraph."""
    import numpy as np

    result, _ = _rapidocr()(np.asarray(image.convert("RGB")))
    lines = []
    for box, text, score in result or []:
        xs, ys = [p[0] for p in box], [p[1] for p in box]
        lines.append((min(xs), min(ys), max(xs), max(ys), text, float(score)))
    lines.sort(key=lambda b: ((b[1] + b[3]) / 2, b[0]))
    words: list[Word] = []
    par, line_no, prev = 1, 0, None
    for x0, top, x1, bottom, text, score in lines:
        if prev is not None and top - prev[3] > (prev[3] - prev[1]):
            par += 1
        line_no += 1
        prev = (x0, top, x1, bottom)
        parts = text.split()
        total = sum(len(p) for p in parts) + max(0, len(parts) - 1)
        pos = 0
        for p in parts:
            a = x0 + (x1 - x0) * pos / max(total, 1)
            pos += len(p)
            b = x0 + (x1 - x0) * pos / max(total, 1)
            pos += 1
            words.append(Word(p, a, top, b, bottom, 1, par, line_no, 100 * score))
    return words
