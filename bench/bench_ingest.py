"""Ingest benchmark: pages/s and chunks/s through the real pipeline, hybrid query latency at 10k/100k chunks.

Reference runs in the same process, so the ratios are comparable across machines:
- ingest: parse+chunk only (no embedding/indexing) vs the full pipeline (parse, chunk, embed, Qdrant, SQL);
- queries: dense-only Qdrant search vs hybrid dense+BM25 with RRF, both tenant-filtered.
The 10k/100k collections use synthetic legal text and random unit vectors (embedding 100k chunks on a CPU
would take an hour); query embedding uses the real model. Qdrant runs as the in-process local store.

    python bench/bench_ingest.py [--docs 6 --pages 8 --sizes 10000,100000 --queries 40]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

WORDS = ("agreement party supplier customer liability cap termination notice confidential information services "
         "fees invoice payment governing law jurisdiction indemnify warranty breach remedy change control "
         "assignment subcontract audit records data protection insurance force majeure term renewal").split()


def synthetic_clause(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_pdfs(dest: Path, docs: int, pages: int, rng: random.Random) -> list[Path]:
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    st = getSampleStyleSheet()
    out = []
    for d in range(docs):
        story = []
        for p in range(pages):
            for c in range(1, 5):
                story.append(Paragraph(f"{p + 1}.{c} Clause {p + 1}.{c}. " + synthetic_clause(rng, 90), st["BodyText"]))
            story.append(PageBreak())
        path = dest / f"contract_{d:03d}.pdf"
        SimpleDocTemplate(str(path)).build(story)
        out.append(path)
    return out


def bench_ingest(tmp: Path, docs: int, pages: int) -> None:
    from app.settings import Settings
    from ingest.chunker import ChunkConfig, chunk_pages
    from ingest.detect import detect_kind
    from ingest.knowledge_base import KnowledgeBase
    from ingest.parsers import parse_file

    (tmp / "pdfs").mkdir()
    files = write_pdfs(tmp / "pdfs", docs, pages, random.Random(0))
    settings = Settings(data_dir=tmp / "data")
    t0 = time.perf_counter()
    n_pages = n_chunks = 0
    for f in files:
        doc = parse_file(f, detect_kind(f))
        n_pages += len(doc.pages)
        n_chunks += len(chunk_pages(doc.pages, ChunkConfig(settings.chunk_tokens, settings.chunk_overlap)))
    parse_s = time.perf_counter() - t0
    kb = KnowledgeBase(settings)
    _ = kb.embedder.dim  # model load is not ingest throughput
    t0 = time.perf_counter()
    summary = kb.ingest_paths(files, "bench")
    full_s = time.perf_counter() - t0
    kb.close()
    assert summary.failed == 0, [r.error for r in summary.results]
    print(f"corpus: {len(files)} PDFs, {summary.pages} pages, {summary.chunks} chunks "
          f"({settings.chunk_tokens}-token budget)")
    print(f"reference parse+chunk only : {n_pages / parse_s:8.1f} pages/s  {n_chunks / parse_s:8.1f} chunks/s")
    print(f"full ingest (embed+index)  : {summary.pages / full_s:8.1f} pages/s  {summary.chunks / full_s:8.1f} chunks/s"
          f"  ({full_s:.1f} s; {parse_s / full_s:.2f}x of reference speed)")


def bench_queries(sizes: list[int], n_queries: int) -> None:
    from qdrant_client import models

    from app.settings import Settings
    from ingest.embedder import shared_embedder
    from ingest.vectors import DENSE, VectorPoint, VectorStore, sparse_document_vector, sparse_query_vector

    embedder = shared_embedder(Settings().resolved_embedding_model)
    rng = random.Random(1)
    nprng = np.random.default_rng(1)
    queries = ["what is the liability cap", "termination notice period", "governing law and jurisdiction",
               "confidential information survival", "change of control termination right", "invoice payment terms"]
    for size in sizes:
        store = VectorStore(f"bench_{size}", embedder.dim, location=":memory:")
        t0 = time.perf_counter()
        batch = 2000
        for start in range(0, size, batch):
            n = min(batch, size - start)
            dense = nprng.standard_normal((n, embedder.dim)).astype(np.float32)
            dense /= np.linalg.norm(dense, axis=1, keepdims=True)
            store.upsert([
                VectorPoint(str(uuid.UUID(int=start + i + 1)), dense[i], sparse_document_vector(synthetic_clause(rng, 60)),
                            {"tenant": "t-a" if (start + i) % 4 else "t-b", "doc_id": f"d{(start + i) // 50}",
                             "version": 1})
                for i in range(n)
            ], batch=500)
        load_s = time.perf_counter() - t0
        hybrid, dense_only, embed = [], [], []
        for q in range(n_queries):
            text = queries[q % len(queries)]
            t = time.perf_counter()
            vec = embedder.encode([text])[0]
            embed.append(time.perf_counter() - t)
            store.search("t-a", vec, sparse_query_vector(text), limit=6)
            hybrid.append(time.perf_counter() - t)
            t = time.perf_counter()
            vec = embedder.encode([text])[0]
            with store._lock:
                store.client.query_points(store.collection, query=vec.tolist(), using=DENSE, limit=6,
                                          query_filter=models.Filter(must=[models.FieldCondition(
                                              key="tenant", match=models.MatchValue(value="t-a"))]))
            dense_only.append(time.perf_counter() - t)
        store.close()
        p = lambda xs, q: statistics.quantiles(xs, n=100)[q - 1] * 1000  # noqa: E731
        print(f"{size:>7} chunks (loaded in {load_s:.0f} s): hybrid RRF p50 {p(hybrid, 50):7.1f} ms  p95 "
              f"{p(hybrid, 95):7.1f} ms | reference dense-only p50 {p(dense_only, 50):7.1f} ms  p95 "
              f"{p(dense_only, 95):7.1f} ms | hybrid/dense p50 {p(hybrid, 50) / p(dense_only, 50):.2f}x"
              f" | query embedding alone p50 {p(embed, 50):.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=6)
    ap.add_argument("--pages", type=int, default=8)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_ingest_"))
    try:
        bench_ingest(tmp, args.docs, args.pages)
        bench_queries([int(s) for s in args.sizes.split(",") if s], args.queries)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
