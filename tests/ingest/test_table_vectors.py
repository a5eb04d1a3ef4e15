"""The BI planner's table vectors are embedded once at ingest and stored on the catalogue row; a table
catalogued before they existed is embedded on its first read (or when its file is ingested again unchanged),
stored once; reads are bound to the tenant. Real files through the real KnowledgeBase (SQLite, Qdrant Edge,
the packaged embedder)."""
from __future__ import annotations

import numpy as np
import sqlalchemy as sa
from sqlmodel import Session, select

from glued_report import REPORT, ROWS  # tests/glued_report.py


class Counting:
    """The real embedder, counting the texts it is asked to encode."""

    def __init__(self, embedder):
        self.inner, self.texts = embedder, []

    def encode(self, texts, **kw):
        self.texts += list(texts)
        return self.inner.encode(texts, **kw)


def _entries(kb):
    from ingest.models import TableEntry

    with Session(kb.engine) as s:
        return s.exec(select(TableEntry)).all()


def test_vectors_are_stored_at_ingest_and_read_without_the_embedder(kb, tmp_path):
    from ingest.tables.vectors import table_texts, unpack
    from ingest.tables.catalogue import table_info

    path = tmp_path / "TALLIS_2019_10K.html"
    path.write_text(REPORT)
    assert kb.ingest_file(path, "t-a").status == "ingested"
    (entry,) = _entries(kb)
    texts = table_texts(table_info(entry, path.name))
    assert entry.vectors is not None and len(texts) == 1 + ROWS  # the description and every row
    assert "Purchases of property, plant and equipment" in texts  # glued words split
    stored = unpack(entry.vectors, len(texts))
    fresh = kb.embedder.encode(texts)
    assert np.allclose(stored, fresh, atol=2e-3)  # float16 of the same vectors

    counting = Counting(kb.embedder)
    from ingest.tables.vectors import stored_vectors

    got = stored_vectors(kb.engine, counting, "t-a", [entry.sql_name])
    assert set(got) == set(texts) and counting.texts == []  # read, not embedded
    assert stored_vectors(kb.engine, counting, "t-b", [entry.sql_name]) == {}  # another tenant reads nothing


def test_a_table_catalogued_before_vectors_is_embedded_once_on_first_read_or_reingest(kb, tmp_path):
    from ingest.models import TableEntry
    from ingest.tables.vectors import stored_vectors

    path = tmp_path / "TALLIS_2019_10K.html"
    path.write_text(REPORT)
    kb.ingest_file(path, "t-a")
    with kb.engine.begin() as conn:  # as an index built before the vectors existed
        conn.execute(sa.update(TableEntry).values(vectors=None, vector_texts=None))
    counting = Counting(kb.embedder)
    name = _entries(kb)[0].sql_name
    first = stored_vectors(kb.engine, counting, "t-a", [name])
    assert len(counting.texts) == 1 + ROWS and _entries(kb)[0].vectors is not None
    again = stored_vectors(kb.engine, counting, "t-a", [name])
    assert len(counting.texts) == 1 + ROWS and set(again) == set(first)  # stored once
    with kb.engine.begin() as conn:
        conn.execute(sa.update(TableEntry).values(vectors=None, vector_texts=None))
    assert kb.ingest_file(path, "t-a").status == "unchanged"
    assert _entries(kb)[0].vectors is not None  # ingesting the unchanged file completes them
