"""The vector store contract, on Qdrant Edge (the embedded default) and on qdrant-client (the server twin's code,
here in its local mode; against a real server when LEXICON_TEST_QDRANT_URL is set): tenant and document
filters, RRF weights, deletion by document/version, durability across close/reopen, migration of an old
local store."""
from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

from ingest.store.edge import EdgeVectorStore
from ingest.store.server import ServerVectorStore
from ingest.store.vectors import VectorPoint, edge_path, open_vector_store, sparse_document_vector, sparse_query_vector

DIM = 16
TEXTS = {
    ("a", "d1"): ["governing law of delaware", "termination for convenience on notice", "fees and invoices"],
    ("a", "d2"): ["liability cap of twelve months fees", "audit rights once a year"],
    ("b", "d3"): ["governing law of new york", "liability cap unlimited"],
}


def _points(version: int = 1) -> list[VectorPoint]:
    rng = np.random.default_rng(0)
    out = []
    for (tenant, doc), texts in TEXTS.items():
        for i, text in enumerate(texts):
            v = rng.standard_normal(DIM).astype(np.float32)
            out.append(VectorPoint(str(uuid.uuid5(uuid.NAMESPACE_OID, f"{doc}:{version}:{i}")), v / np.linalg.norm(v),
                                   sparse_document_vector(text),
                                   {"tenant": tenant, "doc_id": doc, "version": version, "ord": i, "text": text}))
    return out


@pytest.fixture(params=["edge", "qdrant-client"])
def store(request, tmp_path):
    if request.param == "edge":
        s = EdgeVectorStore(tmp_path / "edge", DIM)
    elif os.environ.get("LEXICON_TEST_QDRANT_URL"):
        s = ServerVectorStore(f"test_{uuid.uuid4().hex[:8]}", DIM, url=os.environ["LEXICON_TEST_QDRANT_URL"])
    else:
        s = ServerVectorStore("chunks", DIM, location=":memory:")
    yield s
    s.close()


def _id_of(points, doc, i):
    return next(p.id for p in points if p.payload["doc_id"] == doc and p.payload["ord"] == i)


def test_hybrid_search_is_tenant_and_document_filtered(store):
    pts = _points()
    store.upsert(pts)
    assert store.count() == 7 and store.count("a") == 5 and store.count("b") == 2
    target = next(p for p in pts if p.payload["doc_id"] == "d3" and p.payload["ord"] == 1)
    # tenant b's best match for its own vector and words; tenant a never sees d3, whatever the query
    assert store.search("b", target.dense, sparse_query_vector("liability cap"), limit=3)[0][0] == target.id
    a_ids = {p.id for p in pts if p.payload["tenant"] == "a"}
    hits = store.search("a", target.dense, sparse_query_vector("governing law new york liability"), limit=10)
    assert hits and {h for h, _ in hits} <= a_ids
    only_d2 = store.search("a", target.dense, sparse_query_vector("governing law"), limit=10, doc_ids=["d2"])
    assert {h for h, _ in only_d2} == {_id_of(pts, "d2", 0), _id_of(pts, "d2", 1)}
    assert store.search("c", target.dense, sparse_query_vector("law"), limit=5) == []


def test_rrf_weights_let_the_sparse_side_lead(store):
    pts = _points()
    store.upsert(pts)
    dense_pick = _id_of(pts, "d1", 2)  # "fees and invoices" by its vector
    dense = next(p.dense for p in pts if p.id == dense_pick)
    words = sparse_query_vector("audit rights")  # only d2:1 has these words
    equal = store.search("a", dense, words, limit=5)
    # Qdrant's weighted RRF scales the rank (a hit at rank r scores 1/(k - 1 + (r + 1) / w)), so a side only
    # stops counting at very small weights
    sparse_led = store.search("a", dense, words, limit=5, weights=(1e-4, 1.0))
    dense_led = store.search("a", dense, words, limit=5, weights=(1.0, 1e-4))
    assert sparse_led[0][0] == _id_of(pts, "d2", 1)
    assert dense_led[0][0] == dense_pick
    assert {h for h, _ in equal[:2]} == {dense_pick, _id_of(pts, "d2", 1)}


def test_delete_document_and_old_versions(store):
    store.upsert(_points(version=1))
    store.upsert([p for p in _points(version=2) if p.payload["doc_id"] == "d1"])
    assert store.count("a") == 8
    store.delete_document("a", "d1", keep_version=2)  # what a committed update does
    assert store.count("a") == 5
    store.delete_document("b", "d1")  # another tenant's delete touches nothing of a's
    assert store.count("a") == 5
    store.delete_document("a", "d1")
    store.delete_document("a", "d2")
    assert store.count("a") == 0 and store.count("b") == 2


def test_edge_store_keeps_every_point_across_close_and_reopen(tmp_path):
    pts = _points()
    s = EdgeVectorStore(tmp_path / "edge", DIM)
    s.upsert(pts)
    s.optimize()
    before = s.search("a", pts[0].dense, sparse_query_vector("governing law"), limit=5)
    s.close()
    s = EdgeVectorStore(tmp_path / "edge", DIM)
    try:
        assert s.count() == len(pts)
        assert s.search("a", pts[0].dense, sparse_query_vector("governing law"), limit=5) == before
    finally:
        s.close()


def test_old_local_store_is_migrated_on_first_start(tmp_path):
    data = tmp_path / "data"
    pts = _points()
    old = ServerVectorStore("chunks", DIM, path=data / "qdrant")  # the store this project used before Edge
    old.upsert(pts)
    query = (pts[3].dense, sparse_query_vector("liability cap fees"))
    expected = old.search("a", *query, limit=4)
    old.close()

    store = open_vector_store("chunks", DIM, data_dir=data, migrate_from=data / "qdrant")
    try:
        assert store.count() == len(pts) and store.count("b") == 2
        got = store.search("a", *query, limit=4)
        assert [h for h, _ in got] == [h for h, _ in expected]  # same ranking, same RRF scores
        assert np.allclose([s for _, s in got], [s for _, s in expected])
    finally:
        store.close()
    assert not (data / "qdrant").exists() and (data / "qdrant.migrated").is_dir()  # kept, not deleted
    assert edge_path(data, "chunks").is_dir()
    again = open_vector_store("chunks", DIM, data_dir=data, migrate_from=data / "qdrant")  # no second migration
    try:
        assert again.count() == len(pts)
    finally:
        again.close()
