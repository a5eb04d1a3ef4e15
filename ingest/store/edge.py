"""The embedded vector store: one Qdrant Edge shard (the Qdrant engine in-process) per collection.

Layout as on a server (see ``ingest.store.vectors``): named ``dense`` (cosine) and ``sparse`` (IDF) vectors,
keyword indexes on ``tenant`` (a tenant index) and ``doc_id``. Updates go through Edge's WAL first, so a
process killed right after ``upsert`` returns keeps the points (the WAL is replayed on load).

Indexing: Edge runs no background optimizer; ``optimize()`` builds HNSW for what was written since the last
call. Edge's own optimize holds the Python GIL while it runs (qdrant-edge-py 0.9), so past
``OFFLOAD_ABOVE_POINTS`` it runs on a copy of the shard in a child process and the optimized copy is swapped
in (``ingest.store.optimize``): searches go on meanwhile and wait only for the swap. The pipeline calls it at
the end of each ingest job, and the optimizer is set up (``ingest.store.edge_config``) so one call costs about
what the job added: new points stay in an appendable segment searched by brute force (``INDEXING_THRESHOLD_KB``,
~2.6k chunks), indexed segments are capped (``MAX_SEGMENT_KB``, ~42k chunks) and merged only past
``SEGMENT_NUMBER`` segments. Every segment costs each query a graph walk (12 segments at 100k chunks cost as
much CPU as a brute-force scan), so the merges keep them few; the price is a longer optimize when a merge falls
due (bench/bench_ingest.py prints the longest).

One process owns a shard at a time (the WAL is locked): a second process gets ``VectorStoreBusy``.
"""
from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from ingest.store.edge_config import HNSW_EF, edge_config
from ingest.store.optimize import old_path, optimize_copy, recover_swap, swap_in
from ingest.store.points import DENSE, RRF_K, SPARSE, SparseVec, VectorPoint, VectorStoreBusy

log = logging.getLogger(__name__)
OFFLOAD_ABOVE_POINTS = 5_000  # smaller shards optimize in-process (a child process and a copy cost more)


def _match(key: str, value) -> qe.FieldCondition:
    return qe.FieldCondition(key, match=qe.MatchValue(value))


class EdgeVectorStore:
    def __init__(self, path: Path, dim: int, offload_above: int | None = None):
        self.path, self.dim = Path(path), dim
        self.offload_above = OFFLOAD_ABOVE_POINTS if offload_above is None else offload_above
        self.last_swap_pause_s: float | None = None  # how long searches waited for the last index swap
        self._lock = threading.RLock()  # every call into the shard
        self._writes = threading.RLock()  # upserts/deletes; held by optimize from its copy to its swap
        self._owner = take_ownership(self.path)  # before any recovery touches the folders
        try:
            self.shard = open_shard(self.path, dim)
        except BaseException:
            self._owner.close()
            raise
        schema = self.shard.info().payload_schema
        if "tenant" not in schema:
            # no per-value HNSW subgraphs: a tenant/document filter narrows by the payload index, then scans or
            # walks the main graph (building subgraphs per tenant would double the index build)
            self.shard.update(qe.UpdateOperation.create_field_index(
                "tenant", qe.KeywordIndexParams(is_tenant=True, enable_hnsw=False)))
        if "doc_id" not in schema:
            self.shard.update(qe.UpdateOperation.create_field_index(
                "doc_id", qe.KeywordIndexParams(enable_hnsw=False)))

    def upsert(self, points: list[VectorPoint]) -> None:
        if not points:
            return
        ops = qe.UpdateOperation.upsert_points([
            qe.Point(p.id, {DENSE: np.asarray(p.dense, dtype=np.float32).tolist(),
                            SPARSE: qe.SparseVector(p.sparse.indices, p.sparse.values)}, p.payload)
            for p in points])
        with self._writes, self._lock:
            self.shard.update(ops)

    def delete_document(self, tenant: str, doc_id: str, keep_version: int | None = None) -> None:
        must_not = [_match("version", keep_version)] if keep_version is not None else None
        flt = qe.Filter(must=[_match("tenant", tenant), _match("doc_id", doc_id)], must_not=must_not)
        with self._writes, self._lock:
            self.shard.update(qe.UpdateOperation.delete_points_by_filter(flt))

    def count(self, tenant: str | None = None) -> int:
        flt = qe.Filter(must=[_match("tenant", tenant)]) if tenant else None
        with self._lock:
            return int(self.shard.count(qe.CountRequest(exact=True, filter=flt)))

    def search(self, tenant: str, dense: np.ndarray, sparse: SparseVec, limit: int,
               doc_ids: list[str] | None = None, candidates: int | None = None,
               weights: tuple[float, float] | None = None) -> list[tuple[str, float]]:
        must = [_match("tenant", tenant)]
        if doc_ids:
            must.append(qe.FieldCondition("doc_id", match=qe.MatchAny(list(doc_ids))))
        flt = qe.Filter(must=must)
        n = candidates or max(limit * 4, 20)
        params = qe.SearchParams(hnsw_ef=max(HNSW_EF, n))
        prefetch = [qe.Prefetch(n, query=qe.Query.Nearest(np.asarray(dense, dtype=np.float32).tolist(), using=DENSE),
                                filter=flt, params=params)]
        fuse_weights = list(weights) if weights else None
        if sparse.indices:
            prefetch.append(qe.Prefetch(n, query=qe.Query.Nearest(qe.SparseVector(sparse.indices, sparse.values),
                                                                  using=SPARSE), filter=flt))
        elif fuse_weights:
            fuse_weights = fuse_weights[:1]
        # both prefetches carry the tenant filter; fusion only ranks their union
        req = qe.QueryRequest(limit, query=qe.Fusion.Rrf(RRF_K, fuse_weights), prefetches=prefetch,
                              with_payload=False, filter=flt)
        with self._lock:
            res = self.shard.query(req)
        return [(str(p.id), float(p.score)) for p in res]

    def optimize(self) -> None:
        """Index what was written since the last call: in-process for a small shard, else in a child process
        on a copy that is then swapped in (searches are answered meanwhile; writes wait)."""
        t0 = time.perf_counter()
        with self._writes:
            with self._lock:
                if self.shard.info().points_count <= self.offload_above:
                    changed = self.shard.optimize()
                    if changed:
                        log.info("vector index optimized in %.1f s", time.perf_counter() - t0)
                    return
                self.shard.flush()
            try:
                work = optimize_copy(self.path, self.dim)
            except RuntimeError:
                log.exception("vector index: optimizing in a child process failed; the index stays as it was")
                return
            if work is None:
                return
            t1 = time.perf_counter()
            with self._lock:  # searches wait from here to the reload
                self.shard.close()
                self.shard = None
                try:
                    swap_in(self.path, work)
                finally:
                    self.shard = open_shard(self.path, self.dim, recover=False)
            pause = self.last_swap_pause_s = time.perf_counter() - t1
        shutil.rmtree(old_path(self.path), ignore_errors=True)
        log.info("vector index optimized in %.1f s in a child process (searches paused %.2f s for the swap)",
                 time.perf_counter() - t0, pause)

    def info(self) -> dict:
        with self._lock:
            i = self.shard.info()
        return {"points": i.points_count, "segments": i.segments_count, "indexed_vectors": i.indexed_vectors_count}

    def close(self) -> None:
        with self._lock:
            if self.shard is not None:
                self.shard.flush()
                self.shard.close()
                self.shard = None
                self._owner.close()


def open_shard(path: Path, dim: int, recover: bool = True) -> qe.EdgeShard:
    """Load the shard at ``path`` or create it; a shard held by another process raises VectorStoreBusy.
    ``recover``: first undo an index swap a crash cut short (``ingest.store.optimize``)."""
    try:
        if recover:  # the caller owns the folder (take_ownership)
            recover_swap(path)
        if (path / "edge_config.json").exists() or (path / "wal").exists():
            return qe.EdgeShard.load(str(path), edge_config(dim))
        path.mkdir(parents=True, exist_ok=True)
        return qe.EdgeShard.create(str(path), edge_config(dim))
    except Exception as exc:  # the binding raises a bare Exception
        if "WouldBlock" in str(exc) or "lock" in str(exc).lower():
            raise _busy(path, exc) from exc
        raise


def _busy(path: Path, exc) -> VectorStoreBusy:
    return VectorStoreBusy(
        f"the vector store {path} is in use by another process ({exc}); one lexicon process owns a data_dir"
        " at a time (talk to the running server instead), or point every process at a Qdrant server with"
        " LEXICON_QDRANT_URL")


def take_ownership(path: Path):
    """An exclusive lock on ``<shard>.owner`` for the store's lifetime (Edge's own WAL lock covers only the
    shard folder, which the index swap renames). Returns the open file; closing it releases the lock."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path.with_name(path.name + ".owner"), "a+b")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        fh.close()
        raise _busy(path, exc) from exc
    return fh
