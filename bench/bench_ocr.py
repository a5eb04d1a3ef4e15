"""OCR benchmark: engines compared on the same pages, scanned copies of CUAD contracts read through the
ingest path (character error rate against the contracts' TXT, pages per second), clause recall@5 on the
scanned copies against the born-digital ones, and every file of the messy-PDF set ingested or refused clearly.

    .venv/bin/python bench/bench_ocr.py compare --pages 10      # tesseract vs rapidocr, same page images
    .venv/bin/python bench/bench_ocr.py scanned --docs 20       # build copies, CER + pages/s, recall@5
    .venv/bin/python bench/bench_ocr.py messy                   # ../shared/eval/messy-pdfs, one process per file

A scanned copy renders each page of a contract at 150 dpi (pypdfium2, grayscale) and saves the images as an
image-only PDF (Pillow), under --work (default /tmp/lexicon-ocr-bench), never in the repository. The copies
sit in a dataset folder shaped like cuad-dev (``pdf/`` with the same file names; ``master_clauses.csv`` and
``txt/`` linked), so ``lexicon eval`` runs on them unchanged: the same first N contracts, the same questions.
The OCR cache of the CER pass is handed to the evaluation's index, so each page is recognised once.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ocr_metrics import cer  # noqa: E402

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
TENANT = "eval-cuad"


def cuad_contracts(root: Path, n: int) -> list[Path]:
    """The first ``n`` contracts in the order ``lexicon eval --docs n`` takes them."""
    from app.evaluation.adapters.cuad import _find

    out = []
    with open(root / "master_clauses.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            pdf = _find(root / "pdf", Path(row["Filename"]).stem)
            if pdf is not None:
                out.append(pdf)
            if len(out) >= n:
                break
    return out


def scan_copy(src: Path, dst: Path, dpi: int = 150) -> int:
    """``src`` rendered page by page at ``dpi`` and saved as an image-only PDF; returns the page count."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(src))
    try:
        images = []
        for i in range(len(doc)):
            page = doc[i]
            images.append(page.render(scale=dpi / 72, grayscale=True).to_pil())
            page.close()
    finally:
        doc.close()
    dst.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(dst, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return len(images)


def scanned_dataset(root: Path, work: Path, n: int, dpi: int) -> Path:
    """A cuad-dev-shaped folder whose ``pdf/`` holds scanned copies of the first ``n`` contracts."""
    out = work / f"{root.name}-scanned{dpi}"
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    for name in ("master_clauses.csv", "txt"):
        if not (out / name).exists():
            os.symlink((root / name).resolve(), out / name)
    for src in cuad_contracts(root, n):
        dst = out / "pdf" / src.name
        if not dst.exists():
            pages = scan_copy(src, dst.with_suffix(".tmp"), dpi)
            dst.with_suffix(".tmp").rename(dst)
            print(f"scanned {src.name}: {pages} pages", flush=True)
    return out


def compare(args) -> None:
    """Each engine on the same page images (150 dpi renders of the first contracts' first pages), one page at a
    time: CER against the born-digital page's own text layer, pages per second."""
    import pypdfium2 as pdfium
    from PIL import Image  # noqa: F401

    from ingest.ocr_engines import recognise

    pages = []
    for src in cuad_contracts(EVAL / "cuad-dev", args.pages):
        doc = pdfium.PdfDocument(str(src))
        for i in range(min(2, len(doc))):
            page = doc[i]
            img = page.render(scale=args.dpi / 72, grayscale=True).to_pil()
            img.info["dpi"] = (args.dpi, args.dpi)
            tp = page.get_textpage()
            pages.append((img, tp.get_text_range()))
            tp.close()
            page.close()
        doc.close()
        if len(pages) >= args.pages:
            break
    pages = pages[:args.pages]
    rows = []
    for engine in args.engines:
        recognise(pages[0][0].crop((0, 0, 400, 400)), engine)  # load models / warm caches
        t = time.perf_counter()
        errs = [cer(" ".join(w.text for w in recognise(img, engine)), ref) for img, ref in pages]
        dt = time.perf_counter() - t
        rows.append({"engine": engine, "pages": len(pages), "cer": round(sum(errs) / len(errs), 4),
                     "cer_max": round(max(errs), 4), "pages_per_s": round(len(pages) / dt, 3)})
        print(json.dumps(rows[-1]), flush=True)
    _table(rows)


def ocr_pass(dataset: Path, contracts: list[Path], cache: Path, workers: int) -> dict:
    """Each scanned copy parsed by the ingest path (``parse_pdf`` with OCR, ``workers`` pages at once, a fresh
    cache): CER of the whole document against its TXT, pages OCR'd per second of wall time."""
    from ingest.ocr import OcrConfig
    from ingest.parsers.pdf import parse_pdf

    cfg = OcrConfig(workers=workers, cache_dir=cache)
    total_pages, total_s, edits, ref_chars, per_doc = 0, 0.0, 0.0, 0, []
    for src in contracts:
        scanned = dataset / "pdf" / src.name
        txt = dataset / "txt" / (src.stem + ".txt")
        t = time.perf_counter()
        parsed = parse_pdf(scanned, ocr=cfg)
        dt = time.perf_counter() - t
        hyp = "\n".join(p.text for p in parsed.pages)
        ref = txt.read_text(encoding="utf-8", errors="replace") if txt.exists() else ""
        c = cer(hyp, ref) if ref else float("nan")
        total_pages += parsed.ocr_pages
        total_s += dt
        if ref:
            n = len(" ".join(ref.split()))
            edits += c * n
            ref_chars += n
        per_doc.append({"doc": src.name, "pages": parsed.ocr_pages, "seconds": round(dt, 1), "cer": round(c, 4)})
        print(json.dumps(per_doc[-1]), flush=True)
    return {"pages": total_pages, "seconds": round(total_s, 1),
            "pages_per_s": round(total_pages / max(total_s, 1e-9), 3), "cer": round(edits / max(1, ref_chars), 4),
            "workers": workers, "docs": per_doc}


def run_eval(dataset: Path, docs: int, data_dir: Path, cache: Path | None) -> dict:
    """``lexicon eval DATASET --docs N --retrieval-only`` with its own index folder under ``data_dir``; the CER
    pass's OCR cache is linked into that index first, so the ingest reads each page's OCR from it."""
    from app.evaluation.command import eval_command
    from app.evaluation.fingerprint import ingest_fingerprint
    from app.settings import get_settings
    from ingest.ocr import OcrConfig, tenant_cache

    settings = get_settings()
    if cache is not None and cache.exists():
        index = data_dir / f"cuad-{ingest_fingerprint(settings, '')}"
        target = tenant_cache(OcrConfig(cache_dir=index / "ocr"), TENANT).cache_dir
        shutil.copytree(cache, target, dirs_exist_ok=True, copy_function=os.link)
    res = eval_command(settings, dataset, docs=docs, retrieval_only=True, data_dir=data_dir,
                       out=data_dir / f"results-{dataset.name}.json", quiet=True)
    s = res["summary"]
    return {"dataset": str(dataset), "retrieval": s.get("retrieval"),
            "retrieval_clauses_only": s.get("retrieval_clauses_only"), "documents": s.get("documents"),
            "out": res["out"]}


def scanned(args) -> None:
    root = Path(args.dataset)
    work = Path(args.work)
    dataset = scanned_dataset(root, work, args.docs, args.dpi)
    contracts = cuad_contracts(root, args.docs)
    cache = work / "ocr-cache" / f"dpi{args.dpi}"
    report = {"ocr": ocr_pass(dataset, contracts, cache, args.workers)}
    print(json.dumps({k: v for k, v in report["ocr"].items() if k != "docs"}), flush=True)
    if not args.no_eval:
        report["scanned"] = run_eval(dataset, args.docs, work / "eval-scanned", cache)
        print(json.dumps(report["scanned"]), flush=True)
        if args.born_digital:
            report["born_digital"] = run_eval(root, args.docs, work / "eval-born-digital", None)
            print(json.dumps(report["born_digital"]), flush=True)
    out = work / f"report-{args.docs}docs.json"
    out.write_text(json.dumps(report, indent=1))
    print(f"-> {out}")


MESSY_CHILD = """
import sys, json
from pathlib import Path
from ingest.pipeline import PipelineLimits, read_and_parse
from ingest.chunker import ChunkConfig
from ingest.detect import ZipLimits
from ingest.errors import IngestError
from ingest.ocr import OcrConfig
limits = PipelineLimits(200 * 2**20, ZipLimits(500 * 2**20), ChunkConfig(), OcrConfig())
try:
    kind, parsed = read_and_parse(Path(sys.argv[1]), limits)
    print(json.dumps({"status": "parsed", "pages": len(parsed.pages), "ocr_pages": parsed.ocr_pages,
                      "chars": sum(len(p.text) for p in parsed.pages), "tables": len(parsed.tables)}))
except IngestError as exc:
    print(json.dumps({"status": "error", "error": str(exc)}))
"""


def messy(args) -> None:
    """Every file of the messy-PDF set parsed in its own process (a crash or hang shows as such, never takes
    the others down): parsed, a clear error, or crash / timeout."""
    folder = Path(args.folder)
    rows = []
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() == ".pdf"):
        t = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, "-c", MESSY_CHILD, str(path)], capture_output=True, text=True,
                                 timeout=args.timeout, cwd=Path(__file__).resolve().parents[1])
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            row = json.loads(lines[-1]) if out.returncode == 0 and lines else {
                "status": "crash", "error": f"exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]}"}
        except subprocess.TimeoutExpired:
            row = {"status": "timeout", "error": f"over {args.timeout} s"}
        row = {"file": path.name, **row, "seconds": round(time.perf_counter() - t, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("parsed", "error", "crash", "timeout")}
    print(json.dumps({"files": len(rows), **counts,
                      "ocr_files": sum(1 for r in rows if r.get("ocr_pages")),
                      "ocr_pages": sum(r.get("ocr_pages", 0) for r in rows)}))


def _table(rows: list[dict]) -> None:
    keys = list(rows[0])
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(str(r[k]) for k in keys))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--pages", type=int, default=10)
    c.add_argument("--dpi", type=int, default=150)
    c.add_argument("--engines", nargs="+", default=["tesseract", "rapidocr"])
    s = sub.add_parser("scanned")
    s.add_argument("--dataset", default=str(EVAL / "cuad-dev"))
    s.add_argument("--docs", type=int, default=20)
    s.add_argument("--dpi", type=int, default=150)
    s.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    s.add_argument("--work", default="/tmp/lexicon-ocr-bench")
    s.add_argument("--no-eval", action="store_true")
    s.add_argument("--born-digital", action="store_true", help="also evaluate the born-digital PDFs")
    m = sub.add_parser("messy")
    m.add_argument("--folder", default=str(EVAL / "messy-pdfs"))
    m.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    {"compare": compare, "scanned": scanned, "messy": messy}[args.cmd](args)


if __name__ == "__main__":
    main()
