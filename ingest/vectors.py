"""Qdrant: dense + BM25-style sparse vectors in one collection, fused with RRF, tenant-filtered.

Local mode (the default, ``data_dir/qdrant``) is single-process: Qdrant locks the folder, so this
module keeps one client per folder per process and hands it out with a reference count. A Qdrant server
is used when ``qdrant_url`` is set. The sparse side hashes words to indices and stores BM25's saturated
term frequency; Qdrant applies the IDF (``Modifier.IDF``), so the fused score is dense + BM25 by RRF.
"""
from __future__ import annotations

import re
import threading
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient, models

DENSE, SPARSE = "dense", "sparse"
WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with shall"
    " any all such which who not no may".split()
)
BM25_K1, BM25_B, BM25_AVG_LEN = 1.2, 0.75, 120.0

_CLIENTS: dict[str, list] = {}  # path -> [client, refcount, lock shared by every store on that client]
_CLIENTS_LOCK = threading.Lock()


def sparse_terms(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in WORD.finditer(text)) if w not in STOPWORDS]


def _term_index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


def sparse_document_vector(text: str) -> models.SparseVector:
    terms = sparse_terms(text)
    counts = Counter(_term_index(t) for t in terms)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(terms) / BM25_AVG_LEN)
    items = sorted((i, tf * (BM25_K1 + 1) / (tf + norm)) for i, tf in counts.items())
    return models.SparseVector(indices=[i for i, _ in items], values=[float(v) for _, v in items])


def sparse_query_vector(text: str) -> models.SparseVector:
    idx = sorted({_term_index(t) for t in sparse_terms(text)})
    return models.SparseVector(indices=idx, values=[1.0] * len(idx))


@dataclass
class VectorPoint:
    id: str
    dense: np.ndarray
    sparse: models.SparseVector
    payload: dict


def _acquire_local(path: Path) -> tuple[QdrantClient, threading.RLock]:
    key = str(path.resolve())
    with _CLIENTS_LOCK:
        entry = _CLIENTS.get(key)
        if entry is None:
            path.mkdir(parents=True, exist_ok=True)
            try:
                client = QdrantClient(path=key)
            except RuntimeError as exc:
                raise RuntimeError(
                    f"the local vector store {key} is in use by another process ({exc}); run one lexicon process"
                    " per data_dir, or point every process at a Qdrant server with LEXICON_QDRANT_URL"
                ) from exc
            entry = _CLIENTS[key] = [client, 0, threading.RLock()]
        entry[1] += 1
        return entry[0], entry[2]


def _release_local(path: Path) -> None:
    key = str(path.resolve())
    with _CLIENTS_LOCK:
        entry = _CLIENTS.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            entry[0].close()
            del _CLIENTS[key]


class VectorStore:
    def __init__(self, collection: str, dim: int, url: str = "", path: Path | None = None, location: str = ""):
        self.collection, self.dim = collection, dim
        self._path = None
        self._remote = bool(url)
        self._lock = threading.RLock()  # the local client is not thread-safe
        if url:
            self.client = QdrantClient(url=url)
        elif location:  # ":memory:" for benchmarks
            self.client = QdrantClient(location=location)
        else:
            assert path is not None
            self._path = Path(path)
            self.client, self._lock = _acquire_local(self._path)
        self._ensure_collection()

    def _ensure_collection(self) -> None:
        with self._lock:
            if self.client.collection_exists(self.collection):
                return
            self.client.create_collection(
                self.collection,
                vectors_config={DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)},
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
            if self._remote:  # local mode has no payload indexes (it scans)
                for field in ("tenant", "doc_id"):
                    self.client.create_payload_index(self.collection, field, models.PayloadSchemaType.KEYWORD)

    def upsert(self, points: list[VectorPoint], batch: int = 256) -> None:
        with self._lock:
            for s in range(0, len(points), batch):
                self.client.upsert(self.collection, [
                    models.PointStruct(id=p.id, vector={DENSE: p.dense.tolist(), SPARSE: p.sparse}, payload=p.payload)
                    for p in points[s:s + batch]
                ], wait=True)

    def delete_document(self, tenant: str, doc_id: str, keep_version: int | None = None) -> None:
        """Remove a document's points (all of them, or all but ``keep_version``)."""
        must = [_match("tenant", tenant), _match("doc_id", doc_id)]
        must_not = [models.FieldCondition(key="version", match=models.MatchValue(value=keep_version))] \
            if keep_version is not None else []
        with self._lock:
            self.client.delete(self.collection, models.FilterSelector(
                filter=models.Filter(must=must, must_not=must_not)), wait=True)

    def count(self, tenant: str | None = None) -> int:
        flt = models.Filter(must=[_match("tenant", tenant)]) if tenant else None
        with self._lock:
            return self.client.count(self.collection, count_filter=flt, exact=True).count

    def search(self, tenant: str, dense: np.ndarray, sparse: models.SparseVector, limit: int,
               doc_ids: list[str] | None = None, candidates: int | None = None) -> list[tuple[str, float]]:
        """Hybrid search, tenant-filtered: ids and RRF scores, best first."""
        must = [_match("tenant", tenant)]
        if doc_ids:
            must.append(models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(doc_ids))))
        flt = models.Filter(must=must)
        n = candidates or max(limit * 4, 20)
        prefetch = [models.Prefetch(query=dense.tolist(), using=DENSE, filter=flt, limit=n)]
        if sparse.indices:
            prefetch.append(models.Prefetch(query=sparse, using=SPARSE, filter=flt, limit=n))
        with self._lock:
            res = self.client.query_points(
                # both prefetches carry the tenant filter; fusion only ranks their results, so the outer
                # query needs no second filter pass (in local mode each pass scans every payload)
                self.collection, prefetch=prefetch, query=models.FusionQuery(fusion=models.Fusion.RRF),
                limit=limit, with_payload=False,
            )
        return [(str(p.id), float(p.score)) for p in res.points]

    def close(self) -> None:
        with self._lock:
            if self._path is not None:
                _release_local(self._path)
                self._path = None
            else:
                self.client.close()


def _match(key: str, value) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))
