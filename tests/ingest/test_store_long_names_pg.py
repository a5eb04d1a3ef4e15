"""File names are stored in full on Postgres too: a database from before (VARCHAR(1024)) is widened at start."""
from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

pytestmark = pytest.mark.postgres
PG = "postgresql://root@127.0.0.1:5432/test"


@pytest.fixture
def pg_url():
    import psycopg

    schema = f"lexicon_names_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"postgresql+psycopg://root@127.0.0.1:5432/test?options=-csearch_path%3D{schema}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_an_old_database_is_widened_and_keeps_a_5000_character_name(pg_url):
    from sqlmodel import Session

    from ingest.models import Document
    from ingest.store.sql import make_engine

    engine = make_engine(pg_url)
    with engine.begin() as conn:  # the columns as an earlier version created them
        for table in ("lx_documents", "lx_job_items"):
            conn.exec_driver_sql(f"ALTER TABLE {table} ALTER COLUMN filename TYPE VARCHAR(1024)")
    engine.dispose()
    engine = make_engine(pg_url)  # start: widened
    for table in ("lx_documents", "lx_job_items"):
        column = next(c for c in sa.inspect(engine).get_columns(table) if c["name"] == "filename")
        assert getattr(column["type"], "length", None) is None, (table, column)
    name = "合同 " * 1666 + "x.pdf"
    assert len(name) > 5000
    with Session(engine) as s:
        s.add(Document(id="d" * 32, tenant="t", filename=name))
        s.commit()
    with Session(engine) as s:
        assert s.get(Document, "d" * 32).filename == name
    engine.dispose()
