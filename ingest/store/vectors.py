"""The vector store interface: dense + BM25-style sparse vectors per chunk, hybrid search fused by RRF.

Two implementations share one collection layout (named vectors ``dense`` (cosine) and ``sparse`` (IDF
applied by the engine, ``Modifier.IDF``), payload ``tenant`` / ``doc_id`` / ``version`` / ``ord`` with
keyword indexes on ``tenant`` (a tenant index) and ``doc_id``):

- ``ingest.store.edge.EdgeVectorStore``: Qdrant Edge, the Qdrant engine in-process (HNSW, payload indexes,
  sparse inverted index, WAL) under ``data_dir/qdrant_edge/<collection>``. The embedded default.
- ``ingest.store.server.ServerVectorStore``: qdrant-client against a Qdrant server (``qdrant_url``), the
  scale-out twin; the same class also opens qdrant-client's old local mode (benchmark reference, migration).

The sparse side is our own tokenizer: lowercase word/number tokens minus a few stopwords, hashed to
indices (crc32), valued by BM25's saturated term frequency; the engine multiplies in the IDF, so the sparse
score is BM25 and the two engines rank alike. ``open_vector_store`` picks the implementation. The types both
engines share (``VectorPoint``, ``SparseVec``, ``DENSE``/``SPARSE``, ``RRF_K``, ``VectorStoreBusy``) live in
``ingest.store.points`` and are re-exported here.
"""
from __future__ import annotations

import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Protocol

import numpy as np

from ingest.store.points import DENSE, RRF_K, SPARSE, SparseVec, VectorPoint, VectorStoreBusy

__all__ = ["DENSE", "RRF_K", "SPARSE", "SparseVec", "VectorPoint", "VectorStoreBusy", "VectorStore", "edge_path",
           "open_vector_store", "sparse_document_vector", "sparse_query_vector", "sparse_terms"]

WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with shall"
    " any all such which who not no may".split()
)
BM25_K1, BM25_B, BM25_AVG_LEN = 1.2, 0.75, 120.0


def sparse_terms(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in WORD.finditer(text)) if w not in STOPWORDS]


def _term_index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


def sparse_document_vector(text: str) -> SparseVec:
    terms = sparse_terms(text)
    counts = Counter(_term_index(t) for t in terms)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(terms) / BM25_AVG_LEN)
    items = sorted((i, tf * (BM25_K1 + 1) / (tf + norm)) for i, tf in counts.items())
    return SparseVec([i for i, _ in items], [float(v) for _, v in items])


def sparse_query_vector(text: str) -> SparseVec:
    idx = sorted({_term_index(t) for t in sparse_terms(text)})
    return SparseVec(idx, [1.0] * len(idx))


class VectorStore(Protocol):
    """What the pipeline and the KnowledgeBase use; both implementations are thread-safe."""

    def upsert(self, points: list[VectorPoint]) -> None: ...

    def delete_document(self, tenant: str, doc_id: str, keep_version: int | None = None) -> None:
        """Remove a document's points (all of them, or all but ``keep_version``)."""

    def count(self, tenant: str | None = None) -> int: ...

    def search(self, tenant: str, dense: np.ndarray, sparse: SparseVec, limit: int,
               doc_ids: list[str] | None = None, candidates: int | None = None,
               weights: tuple[float, float] | None = None) -> list[tuple[str, float]]:
        """Hybrid search filtered by tenant (and doc_ids): point ids and RRF scores, best first.
        ``weights`` = (dense, sparse) weights of the RRF terms; None = equal."""

    def optimize(self) -> None:
        """Index what was written since the last call (HNSW); a no-op where the engine does it itself."""

    def close(self) -> None: ...


def edge_path(data_dir: Path, collection: str) -> Path:
    return Path(data_dir) / "qdrant_edge" / collection


def open_vector_store(collection: str, dim: int, url: str = "", data_dir: Path | None = None,
                      migrate_from: Path | None = None) -> VectorStore:
    """A Qdrant server when ``url`` is set, else the Edge shard under ``data_dir`` (migrating qdrant-client's
    old local store at ``migrate_from`` on first start, see ``ingest.store.migrate``)."""
    if url:
        from ingest.store.server import ServerVectorStore

        return ServerVectorStore(collection, dim, url=url)
    from ingest.store.edge import EdgeVectorStore
    from ingest.store.migrate import migrate_local_store

    assert data_dir is not None
    path = edge_path(data_dir, collection)
    if migrate_from is not None and not path.exists():
        migrate_local_store(Path(migrate_from), collection, path, dim)
    return EdgeVectorStore(path, dim)
