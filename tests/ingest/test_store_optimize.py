"""Qdrant Edge's index build in a child process on a copy, swapped in (ingest.store.optimize): the real Edge
shard and a real child process; points, tenant filters and persistence hold across the swap, a swap cut by a
crash is rolled back, and the folder has one owner."""
from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

from ingest.store.edge import EdgeVectorStore
from ingest.store.optimize import old_path, work_path
from ingest.store.vectors import VectorPoint, VectorStoreBusy, sparse_document_vector, sparse_query_vector

DIM = 384  # ~2.6k points of this size pass Edge's indexing threshold, so optimize really builds HNSW
N = 3200
WORDS = "liability cap termination notice governing law audit fees invoice warranty breach".split()


def _points(start: int = 0, n: int = N) -> list[VectorPoint]:
    rng = np.random.default_rng(start)
    dense = rng.standard_normal((n, DIM)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    out = []
    for i in range(n):
        k = start + i
        text = " ".join(WORDS[(k + j) % len(WORDS)] for j in range(5))
        out.append(VectorPoint(str(uuid.UUID(int=k + 1)), dense[i], sparse_document_vector(text),
                               {"tenant": "b" if k % 4 == 0 else "a", "doc_id": f"d{k // 50}", "version": 1,
                                "ord": k % 50}))
    return out


def test_optimize_in_a_child_process_keeps_points_filters_and_persistence(tmp_path):
    path = tmp_path / "edge"
    pts = _points()
    store = EdgeVectorStore(path, DIM, offload_above=0)  # always offload
    try:
        for s in range(0, N, 800):
            store.upsert(pts[s:s + 800])
        before = store.info()["indexed_vectors"]  # the sparse side only: no HNSW yet
        store.optimize()
        info = store.info()
        assert info["points"] == N and info["indexed_vectors"] >= before + N  # HNSW built (by the child)
        assert not work_path(path).exists() and not old_path(path).exists()
        b_point = pts[8]
        hits = store.search("b", b_point.dense, sparse_query_vector(""), limit=10)
        b_ids = {p.id for p in pts if p.payload["tenant"] == "b"}
        assert hits[0][0] == b_point.id and {h for h, _ in hits} <= b_ids
        assert store.count("a") == sum(p.payload["tenant"] == "a" for p in pts)
        # the swapped-in shard takes writes
        store.upsert(_points(N, 10))
        store.delete_document("a", "d1")
        expected = N + 10 - sum(1 for p in pts if p.payload["doc_id"] == "d1" and p.payload["tenant"] == "a")
        assert store.count() == expected
        indexed = store.info()["indexed_vectors"]
        found = store.search("a", pts[1].dense, sparse_query_vector(""), limit=5)
    finally:
        store.close()
    again = EdgeVectorStore(path, DIM)
    try:
        assert again.count() == expected and again.info()["indexed_vectors"] == indexed
        assert again.search("a", pts[1].dense, sparse_query_vector(""), limit=5) == found
    finally:
        again.close()


def test_a_swap_cut_by_a_crash_is_rolled_back(tmp_path):
    path = tmp_path / "edge"
    store = EdgeVectorStore(path, DIM)
    store.upsert(_points(0, 40))
    store.close()
    # killed between the two renames of the swap: the shard sits at .old, the copy at .optimizing
    os.rename(path, old_path(path))
    work_path(path).mkdir()
    (work_path(path) / "half-written").write_bytes(b"x")
    store = EdgeVectorStore(path, DIM)
    try:
        assert store.count() == 40
        assert not old_path(path).exists() and not work_path(path).exists()
    finally:
        store.close()


def test_one_owner_per_shard_folder(tmp_path):
    store = EdgeVectorStore(tmp_path / "edge", DIM)
    try:
        with pytest.raises(VectorStoreBusy, match="in use by another process"):
            EdgeVectorStore(tmp_path / "edge", DIM)
    finally:
        store.close()
    EdgeVectorStore(tmp_path / "edge", DIM).close()  # released on close
