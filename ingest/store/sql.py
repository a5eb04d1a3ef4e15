"""The SQL engine: SQLite (default, WAL, transactional DDL) or Postgres by URL; creates the schema."""
from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import SQLModel

from ingest import models

MODEL_TABLES = [m.__table__ for m in (
    models.Tenant, models.Document, models.DocumentVersion, models.Chunk, models.TableEntry, models.Job,
    models.JobItem, models.DocumentFactsRow,
)]


def make_engine(url: str) -> sa.Engine:
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):
            # let SQLAlchemy, not pysqlite, decide where transactions start, so CREATE TABLE is atomic
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(conn):
            # IMMEDIATE: take the write lock up front so a read-then-write transaction waits on busy_timeout
            # instead of failing at once with "database is locked" when another thread committed meanwhile
            # (WAL readers are never blocked by it)
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    else:
        engine = sa.create_engine(url, pool_pre_ping=True)
    SQLModel.metadata.create_all(engine, tables=MODEL_TABLES)
    from ingest.tables.catalogue import add_meta_column

    add_meta_column(engine)
    from ingest.tables.vectors import add_vector_columns

    add_vector_columns(engine)
    add_ingest_version_columns(engine)
    widen_name_columns(engine)
    from ingest.facts.store import add_facts_columns

    add_facts_columns(engine)
    return engine


def add_ingest_version_columns(engine: sa.Engine) -> None:
    """Databases from before ``ingest_version`` existed get the column, empty: their documents were chunked
    by an unknown chunker, so the next ingest of each file re-chunks it (ingest.pipeline)."""
    for table in ("lx_documents", "lx_document_versions"):
        if "ingest_version" not in {c["name"] for c in sa.inspect(engine).get_columns(table)}:
            with engine.begin() as conn:
                conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN ingest_version VARCHAR(200) NOT NULL DEFAULT ''")


def widen_name_columns(engine: sa.Engine) -> None:
    """File names are kept in full: a Postgres database from before has them as VARCHAR(1024) (SQLite never
    enforced the length)."""
    if engine.dialect.name != "postgresql":
        return
    for table in ("lx_documents", "lx_job_items"):
        column = next(c for c in sa.inspect(engine).get_columns(table) if c["name"] == "filename")
        if getattr(column["type"], "length", None):
            with engine.begin() as conn:
                conn.exec_driver_sql(f"ALTER TABLE {table} ALTER COLUMN filename TYPE VARCHAR")
