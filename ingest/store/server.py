"""The scale-out twin: qdrant-client against a Qdrant server (``LEXICON_QDRANT_URL``), same layout as Edge.

The same class opens qdrant-client's local mode (``path=`` a folder, or ``location=":memory:"``): the
store this project used before Edge. It is brute force in numpy and single-process; it remains only as
the benchmark's reference and as the source of ``ingest.store.migrate``.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient, models

from ingest.store.points import DENSE, RRF_K, SPARSE, SparseVec, VectorPoint, VectorStoreBusy


def _match(key: str, value) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


class ServerVectorStore:
    def __init__(self, collection: str, dim: int, url: str = "", path: Path | None = None, location: str = ""):
        self.collection, self.dim = collection, dim
        self._lock = threading.RLock()  # the local-mode client is not thread-safe
        if url:
            self.client = QdrantClient(url=url)
        elif location:
            self.client = QdrantClient(location=location)
        else:
            assert path is not None
            Path(path).mkdir(parents=True, exist_ok=True)
            try:
                self.client = QdrantClient(path=str(path))
            except RuntimeError as exc:
                raise VectorStoreBusy(f"the local vector store {path} is in use by another process ({exc})") from exc
        self._remote = bool(url)
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
                self.client.create_payload_index(self.collection, "tenant", models.KeywordIndexParams(
                    type=models.KeywordIndexType.KEYWORD, is_tenant=True))
                self.client.create_payload_index(self.collection, "doc_id", models.PayloadSchemaType.KEYWORD)

    def upsert(self, points: list[VectorPoint], batch: int = 256) -> None:
        with self._lock:
            for s in range(0, len(points), batch):
                self.client.upsert(self.collection, [
                    models.PointStruct(id=p.id, payload=p.payload, vector={
                        DENSE: np.asarray(p.dense, dtype=np.float32).tolist(),
                        SPARSE: models.SparseVector(indices=p.sparse.indices, values=p.sparse.values)})
                    for p in points[s:s + batch]
                ], wait=True)

    def delete_document(self, tenant: str, doc_id: str, keep_version: int | None = None) -> None:
        must_not = [_match("version", keep_version)] if keep_version is not None else []
        flt = models.Filter(must=[_match("tenant", tenant), _match("doc_id", doc_id)], must_not=must_not)
        with self._lock:
            self.client.delete(self.collection, models.FilterSelector(filter=flt), wait=True)

    def count(self, tenant: str | None = None) -> int:
        flt = models.Filter(must=[_match("tenant", tenant)]) if tenant else None
        with self._lock:
            return self.client.count(self.collection, count_filter=flt, exact=True).count

    def search(self, tenant: str, dense: np.ndarray, sparse: SparseVec, limit: int,
               doc_ids: list[str] | None = None, candidates: int | None = None,
               weights: tuple[float, float] | None = None) -> list[tuple[str, float]]:
        must = [_match("tenant", tenant)]
        if doc_ids:
            must.append(models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(doc_ids))))
        flt = models.Filter(must=must)
        n = candidates or max(limit * 4, 20)
        prefetch = [models.Prefetch(query=np.asarray(dense, dtype=np.float32).tolist(), using=DENSE, filter=flt,
                                    limit=n)]
        w = list(weights) if weights else None
        if sparse.indices:
            prefetch.append(models.Prefetch(query=models.SparseVector(indices=sparse.indices, values=sparse.values),
                                            using=SPARSE, filter=flt, limit=n))
        elif w:
            w = w[:1]
        query = models.RrfQuery(rrf=models.Rrf(k=RRF_K, weights=w))  # k as on Edge (Qdrant's default is 2)
        with self._lock:
            res = self.client.query_points(self.collection, prefetch=prefetch, query=query, limit=limit,
                                           with_payload=False)
        return [(str(p.id), float(p.score)) for p in res.points]

    def scroll_all(self, batch: int = 512):
        """Every point with vectors and payload, in batches (for migration)."""
        offset = None
        while True:
            with self._lock:
                records, offset = self.client.scroll(self.collection, limit=batch, offset=offset,
                                                     with_payload=True, with_vectors=True)
            yield [VectorPoint(str(r.id), np.asarray(r.vector[DENSE], dtype=np.float32),
                               SparseVec(list(r.vector[SPARSE].indices), list(r.vector[SPARSE].values))
                               if SPARSE in r.vector else SparseVec([], []), dict(r.payload or {}))
                   for r in records]
            if offset is None:
                return

    def optimize(self) -> None:
        """The server optimizes in the background."""

    def close(self) -> None:
        with self._lock:
            self.client.close()
