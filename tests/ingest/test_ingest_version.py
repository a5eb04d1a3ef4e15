"""A new chunker (or embedder) re-ingests unchanged files: real SQLite, real Qdrant Edge, real embeddings."""
from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Session, select

from ingest import chunker
from ingest.models import Chunk, Document, DocumentVersion
from ingest.samples import write_msa_pdf
from ingest.store.sql import make_engine


def _state(kb, doc_id):
    with Session(kb.engine) as s:
        chunks = s.exec(select(Chunk).where(Chunk.doc_id == doc_id)).all()
        versions = s.exec(select(DocumentVersion).where(DocumentVersion.doc_id == doc_id)
                          .order_by(DocumentVersion.version)).all()
        doc = s.get(Document, doc_id)
        return doc.version, doc.ingest_version, {c.id for c in chunks}, [(v.version, v.ingest_version) for v in versions]


def test_new_chunker_version_rechunks_an_unchanged_file(kb, tmp_path, monkeypatch):
    path = write_msa_pdf(tmp_path / "msa.pdf")
    first = kb.ingest_file(path, "acme")
    assert first.status == "ingested"
    v1, iv1, ids1, _ = _state(kb, first.doc_id)
    assert v1 == 1 and f"chunker {chunker.CHUNKER_VERSION} " in iv1 and len(ids1) == first.chunks
    assert kb.ingest_file(path, "acme").status == "unchanged"

    monkeypatch.setattr(chunker, "CHUNKER_VERSION", chunker.CHUNKER_VERSION + 1)
    again = kb.ingest_file(path, "acme")
    assert again.status == "ingested" and again.doc_id == first.doc_id and again.chunks == first.chunks
    v2, iv2, ids2, versions = _state(kb, first.doc_id)
    assert v2 == 2 and iv2 != iv1 and f"chunker {chunker.CHUNKER_VERSION} " in iv2
    assert versions == [(1, iv1), (2, iv2)]
    # the old chunks and points are gone, the new ones are there once each
    assert not ids1 & ids2 and len(ids2) == again.chunks
    assert kb.vectors.count("acme") == again.chunks
    hits = kb.search("acme", "What is the cap on each party's liability?", k=4)
    assert hits and {h.chunk_id for h in hits} <= ids2
    # and now it is current: skipped again; other chunk settings are a new ingest version too
    assert kb.ingest_file(path, "acme").status == "unchanged"
    kb.pipeline.limits.chunk = chunker.ChunkConfig(max_tokens=20, overlap=4)
    third = kb.ingest_file(path, "acme")
    assert third.status == "ingested" and third.chunks > again.chunks
    assert kb.vectors.count("acme") == third.chunks and len(_state(kb, first.doc_id)[2]) == third.chunks


def test_database_without_ingest_version_gets_the_column_and_rechunks(kb, tmp_path):
    path = write_msa_pdf(tmp_path / "msa.pdf")
    first = kb.ingest_file(path, "acme")
    with kb.engine.begin() as conn:  # what a database from before the column looks like
        conn.exec_driver_sql("ALTER TABLE lx_documents DROP COLUMN ingest_version")
        conn.exec_driver_sql("ALTER TABLE lx_document_versions DROP COLUMN ingest_version")
    engine = make_engine(str(kb.engine.url))
    try:
        cols = {c["name"] for c in sa.inspect(engine).get_columns("lx_documents")}
        assert "ingest_version" in cols
        with Session(engine) as s:
            assert s.get(Document, first.doc_id).ingest_version == ""
    finally:
        engine.dispose()
    kb.engine.dispose()  # reconnect: the schema changed underneath
    again = kb.ingest_file(path, "acme")
    assert again.status == "ingested" and kb.vectors.count("acme") == again.chunks
    assert _state(kb, first.doc_id)[0] == 2
