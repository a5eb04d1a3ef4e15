"""Ingest benchmark: pipeline throughput vs embedding alone on real filings; hybrid search latency at 10k/100k
chunks on Qdrant Edge vs qdrant-client's local mode (the store used before), in the same run.

Throughput (``../shared/eval/financebench-dev`` PDFs; skipped with a message when absent): (1) parse+chunk
alone (the read-ahead side), then interleaved ``--repeats`` times: (2) embedding those chunks alone in the
pipeline's batches with the embedder's whole OpenMP team and (2') with one thread less (what the pipeline uses
on an oversubscribed machine, where the smaller team is often the faster), (3) the whole pipeline through
``KnowledgeBase.ingest_paths`` (page text, then tables on the read-ahead thread while the chunks are embedded,
Edge, SQL) for a fresh tenant; then (2)/(2') once more. Ratio = median (3) rate / the faster median of (2), (2').

Optimize probe (``--optimize-probe N``): search latency while N upserted points are indexed, Edge's own
in-process optimize (holds the GIL) vs ours in a child process on a copy, swapped in.

Search: synthetic legal text and random unit vectors (embedding 100k chunks on a CPU takes an hour), tenant
"t-a" 75% / "t-b" 25%, 50 chunks per document; hybrid = dense + BM25 prefetches fused by RRF, tenant-filtered.
Query embedding (the real model) is timed apart and added for the end-to-end figure. The Edge shards are built
as the service builds them (upserts, ``optimize()`` after each job of ``--job-chunks``) and kept under
``--store-dir`` for reuse; the local-mode reference is rebuilt in memory and runs fewer queries (it takes
seconds per query at 100k).

    python bench/bench_ingest.py [--files 4] [--sizes 10000,100000] [--queries 60] [--local-queries 20,5]
                                 [--skip-ingest] [--skip-search] [--store-dir /tmp/lexicon-bench-stores]
                                 [--repeats 2] [--optimize-probe 20000]
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

ROOT = Path(__file__).resolve().parent.parent
FILINGS = ROOT.parent / "shared" / "eval" / "financebench-dev" / "pdfs"
WORDS = ("agreement party supplier customer liability cap termination notice confidential information services "
         "fees invoice payment governing law jurisdiction indemnify warranty breach remedy change control "
         "assignment subcontract audit records data protection insurance force majeure term renewal").split()
QUERIES = ["what is the liability cap", "termination notice period", "governing law and jurisdiction",
           "confidential information survival", "change of control termination right", "invoice payment terms"]
BUILD_VERSION = 2  # bump when the synthetic data or the shard config changes


def pct(xs: list[float], q: int) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * len(xs)) - 1))] * 1000


def synthetic_clause(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


# ---- throughput ------------------------------------------------------------------------------------
def bench_ingest(tmp: Path, n_files: int, repeats: int = 2) -> None:
    from app.settings import Settings
    from ingest.knowledge_base import KnowledgeBase
    from ingest.pipeline import EMBED_BATCH, embedding_text

    if not FILINGS.is_dir():
        print(f"ingest throughput: SKIPPED ({FILINGS} not found; it holds the financebench-dev filings)")
        return
    files = sorted(FILINGS.glob("*.pdf"), key=lambda p: p.stat().st_size)[:n_files] if n_files else \
        sorted(FILINGS.glob("*.pdf"))
    kb = KnowledgeBase(Settings(data_dir=tmp / "data"))
    _ = kb.embedder.dim  # model load is not throughput
    kb.embedder.encode(["warm up"] * 8, release_pool=False)
    kb.pipeline.prepare(files[0], "warm", files[0].name)  # the parsers' imports are not throughput either
    c0, t0 = time.process_time(), time.perf_counter()
    preps = [kb.pipeline.prepare(f, "bench", f.name) for f in files]
    parse_s, parse_cpu = time.perf_counter() - t0, time.process_time() - c0
    bad = [p.result.error for p in preps if p.result is not None]
    assert not bad, bad
    pages = sum(len(p.parsed.pages) for p in preps)
    texts = [[embedding_text(c) for c in p.chunks] for p in preps]
    n_chunks = sum(map(len, texts))
    runs: dict[str, list[tuple[float, float]]] = {"embed": [], "embed1": [], "pipeline": []}

    def embed_only(key: str, busy: int) -> None:
        """The reference: the same chunks in the pipeline's batches, with the embedder's whole team (busy=0)
        or one thread short of it (busy=1, what the pipeline uses while it parses)."""
        c, t = time.process_time(), time.perf_counter()
        for doc in texts:
            for s in range(0, len(doc), EMBED_BATCH):
                kb.embedder.encode(doc[s:s + EMBED_BATCH], release_pool=False, busy_cores=busy)
        runs[key].append((time.perf_counter() - t, time.process_time() - c))

    # interleaved (the machine's speed drifts): refs, pipeline (a fresh tenant each time, so nothing is
    # 'unchanged'), ..., refs; medians
    for r in range(repeats):
        embed_only("embed", 0)
        embed_only("embed1", 1)
        c, t = time.process_time(), time.perf_counter()
        summary = kb.ingest_paths(files, f"bench{r}")
        runs["pipeline"].append((time.perf_counter() - t, time.process_time() - c))
        assert summary.failed == 0 and summary.pages == pages, [x.error for x in summary.results]
    embed_only("embed", 0)
    embed_only("embed1", 1)
    kb.close()
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    ref_key = min(("embed", "embed1"), key=lambda k: med[k][0])
    ref, full = med[ref_key][0], med["pipeline"][0]

    def walls(k: str) -> str:
        return " / ".join(f"{w:.1f}" for w, _ in runs[k])

    print(f"corpus: {len(files)} financebench filings, {pages} pages, {n_chunks} chunks  (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"  parse+chunk alone       : {pages / parse_s:7.2f} pages/s ({parse_s:.1f} s, CPU {parse_cpu:.1f} s = "
          f"{1000 * parse_cpu / pages:.0f} ms per page, {parse_cpu / med['embed1'][1]:.0%} of embedding's CPU)")
    for key, label in (("embed", "embedding alone, team"), ("embed1", "embedding alone, team-1")):
        print(f"  {label:24s}: {pages / med[key][0]:7.2f} pages/s  {n_chunks / med[key][0]:6.1f} chunks/s "
              f"(runs {walls(key)} s, CPU {med[key][1]:.1f} s)")
    print(f"  whole pipeline          : {pages / full:7.2f} pages/s  {n_chunks / full:6.1f} chunks/s "
          f"(runs {walls('pipeline')} s, CPU {med['pipeline'][1]:.1f} s)")
    print(f"  -> {ref / full:.2f}x of the faster embedding-alone rate ({ref_key}; target >= 0.80), "
          f"{med['embed'][0] / full:.2f}x of the full team's; by CPU seconds "
          f"{med[ref_key][1] / med['pipeline'][1]:.2f}x")


# ---- search ----------------------------------------------------------------------------------------
def synthetic_points(size: int, dim: int, batch: int = 2000):
    """The same points for both stores: batches of VectorPoint."""
    from ingest.store.vectors import VectorPoint, sparse_document_vector

    rng, nprng = random.Random(1), np.random.default_rng(1)
    for start in range(0, size, batch):
        n = min(batch, size - start)
        dense = nprng.standard_normal((n, dim)).astype(np.float32)
        dense /= np.linalg.norm(dense, axis=1, keepdims=True)
        yield [VectorPoint(str(uuid.UUID(int=start + i + 1)), dense[i], sparse_document_vector(synthetic_clause(rng, 60)),
                           {"tenant": "t-a" if (start + i) % 4 else "t-b", "doc_id": f"d{(start + i) // 50}",
                            "version": 1, "ord": (start + i) % 50})
               for i in range(n)]


def edge_store(size: int, dim: int, store_dir: Path, job_chunks: int):
    """A built Edge shard for ``size`` points (reused when complete), plus a build note."""
    from ingest.store.edge import EdgeVectorStore

    path = store_dir / f"edge_{size}_v{BUILD_VERSION}"
    if (path / ".complete").exists():
        return EdgeVectorStore(path, dim), "reused"
    shutil.rmtree(path, ignore_errors=True)
    store = EdgeVectorStore(path, dim)
    t0, optimize_s, since = time.perf_counter(), [], 0
    for pts in synthetic_points(size, dim):
        store.upsert(pts)
        since += len(pts)
        if since >= job_chunks:
            t = time.perf_counter()
            store.optimize()
            optimize_s.append(time.perf_counter() - t)
            since = 0
    t = time.perf_counter()
    store.optimize()
    optimize_s.append(time.perf_counter() - t)
    (path / ".complete").write_text("ok")
    info = store.info()
    return store, (f"built in {time.perf_counter() - t0:.0f} s, {len(optimize_s)} optimize calls, longest "
                   f"{max(optimize_s):.1f} s; {info['segments']} segments")


def local_store(size: int, dim: int):
    from ingest.store.server import ServerVectorStore

    store = ServerVectorStore(f"bench_{size}", dim, location=":memory:")
    t0 = time.perf_counter()
    for pts in synthetic_points(size, dim):
        store.upsert(pts, batch=500)
    return store, f"loaded in {time.perf_counter() - t0:.0f} s"


def time_queries(store, vecs: dict, n: int, tenant: str = "t-a", cpu: list | None = None) -> list[float]:
    """Wall seconds per query; ``cpu`` collects the process's CPU seconds per query (all threads), a figure
    that holds up when other work shares the machine."""
    from ingest.store.vectors import sparse_query_vector

    out = []
    for q in range(n):
        text = QUERIES[q % len(QUERIES)]
        c, t = time.process_time(), time.perf_counter()
        hits = store.search(tenant, vecs[text], sparse_query_vector(text), limit=12)
        out.append(time.perf_counter() - t)
        if cpu is not None:
            cpu.append(time.process_time() - c)
        assert hits, "no hits"
    return out


def bench_search(sizes: list[int], n_queries: int, local_queries: list[int], store_dir: Path, job_chunks: int,
                 skip_local: bool) -> None:
    from app.settings import Settings
    from ingest.embedder import shared_embedder

    embedder = shared_embedder(Settings().resolved_embedding_model)
    embed = []
    for _ in range(3):
        for text in QUERIES:
            t = time.perf_counter()
            embedder.encode([text])
            embed.append(time.perf_counter() - t)
    vecs = {text: embedder.encode([text])[0] for text in QUERIES}
    emb50, emb95 = pct(embed, 50), pct(embed, 95)
    print(f"query embedding alone: p50 {emb50:.1f} ms  p95 {emb95:.1f} ms  (load average {os.getloadavg()[0]:.1f}"
          f" on {os.cpu_count()} CPUs)")
    for i, size in enumerate(sizes):
        edge, note = edge_store(size, embedder.dim, store_dir, job_chunks)
        try:
            time_queries(edge, vecs, 6)  # warm caches
            ecpu: list[float] = []
            e = time_queries(edge, vecs, n_queries, cpu=ecpu)
            small = time_queries(edge, vecs, n_queries, tenant="t-b")
        finally:
            edge.close()
        print(f"{size:>7} chunks  Edge ({note}): hybrid p50 {pct(e, 50):6.1f} ms  p95 {pct(e, 95):6.1f} ms "
              f"(CPU p50 {pct(ecpu, 50):.1f} ms; tenant t-b: p95 {pct(small, 95):.1f} ms); with query embedding p50 {pct(e, 50) + emb50:.1f} ms"
              f"  p95 {pct(e, 95) + emb95:.1f} ms  [{n_queries} queries]")
        if skip_local:
            continue
        nq = local_queries[min(i, len(local_queries) - 1)]
        local, lnote = local_store(size, embedder.dim)
        try:
            lcpu: list[float] = []
            loc = time_queries(local, vecs, nq, cpu=lcpu)
        finally:
            local.close()
        print(f"{size:>7} chunks  local mode ({lnote}): hybrid p50 {pct(loc, 50):8.1f} ms  p95 {pct(loc, 95):8.1f} ms"
              f" (CPU p50 {pct(lcpu, 50):.0f} ms)  [{nq} queries]  -> Edge is {pct(loc, 50) / pct(e, 50):.0f}x faster at p50")


def bench_optimize(size: int, dim: int, tmp: Path) -> None:
    """Search latency while the index is built: Edge's own optimize in-process (the reference: it holds the
    GIL and the store) vs ours in a child process on a copy (ingest.store.optimize), on two identical shards of
    ``size`` upserted, not yet indexed points; a thread optimizes while the main thread searches back to back
    (each search's time counted from the end of the previous one, so a stall between searches shows)."""
    import threading

    from ingest.store.edge import EdgeVectorStore

    vecs = {}
    rng = np.random.default_rng(7)
    for text in QUERIES:
        v = rng.standard_normal(dim).astype(np.float32)
        vecs[text] = v / np.linalg.norm(v)
    base = tmp / "optimize_probe"
    store = EdgeVectorStore(base / "a", dim)
    for pts in synthetic_points(size, dim):
        store.upsert(pts)
    store.close()
    shutil.copytree(base / "a", base / "b")
    idle = None
    for label, folder, offload in (("in-process (Edge's optimize)", "b", 10**12), ("child process + swap", "a", 0)):
        st = EdgeVectorStore(base / folder, dim, offload_above=offload)
        try:
            time_queries(st, vecs, 6)
            if idle is None:
                idle = time_queries(st, vecs, 30)
            lat: list[float] = []
            done = threading.Event()
            took: list[float] = []

            def run(_st=st) -> None:
                t = time.perf_counter()
                _st.optimize()
                took.append(time.perf_counter() - t)
                done.set()

            worker = threading.Thread(target=run)
            last = time.perf_counter()
            worker.start()
            while not done.is_set():
                # a search's wait counts from the end of the one before: a thread blocked on the GIL between
                # two searches is a stall too
                time_queries(st, vecs, 1)
                now = time.perf_counter()
                lat.append(now - last)
                last = now
            worker.join()
            info = st.info()
        finally:
            st.close()
        print(f"{size:>7} chunks  search during optimize, {label:30s}: optimize {took[0]:6.1f} s, {len(lat):5d} "
              f"searches, p50 {pct(lat, 50):7.1f} ms  p95 {pct(lat, 95):7.1f} ms  max {max(lat) * 1000:8.1f} ms "
              f"({info['segments']} segments" + (f"; swap pause {st.last_swap_pause_s * 1000:.0f} ms)"
                                                  if st.last_swap_pause_s is not None else ")"))
    print(f"{size:>7} chunks  search idle (same shard, before): p50 {pct(idle, 50):.1f} ms  p95 {pct(idle, 95):.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=4, help="smallest N financebench filings (0 = all 14)")
    ap.add_argument("--repeats", type=int, default=2, help="pipeline runs, interleaved with the references")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--local-queries", default="20,5", help="queries on the local-mode reference, per size")
    ap.add_argument("--job-chunks", type=int, default=5000, help="chunks per simulated ingest job (optimize after)")
    ap.add_argument("--store-dir", type=Path, default=Path(tempfile.gettempdir()) / "lexicon-bench-stores")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--skip-search", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--optimize-probe", type=int, default=0, metavar="N",
                    help="search latency during an index build of N points: in-process vs child process")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_ingest_"))
    try:
        if not args.skip_ingest:
            bench_ingest(tmp, args.files, args.repeats)
        if args.optimize_probe:
            bench_optimize(args.optimize_probe, 384, tmp)
        if not args.skip_search:
            args.store_dir.mkdir(parents=True, exist_ok=True)
            bench_search([int(s) for s in args.sizes.split(",") if s], args.queries,
                         [int(s) for s in args.local_queries.split(",")], args.store_dir, args.job_chunks,
                         args.skip_local)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
