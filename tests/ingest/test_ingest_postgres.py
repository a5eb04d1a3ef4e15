"""The same pipeline on the real PostgreSQL server, in a throwaway schema per test run."""
from __future__ import annotations

import os
import uuid
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from ingest.errors import SqlRejected
from ingest.knowledge_base import KnowledgeBase
from ingest.samples import SAMPLE_FACTS

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def pg_url():
    base = os.environ.get("LEXICON_TEST_POSTGRES_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")
    schema = f"lx_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    yield f"{base}{sep}options={quote(f'-csearch_path={schema}')}", schema
    with admin.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    admin.dispose()


def test_postgres_ingest_tables_sql_and_delete(settings, embedder, corpus, pg_url):
    url, schema = pg_url
    pg = settings.model_copy(update={"database_url": url})
    with KnowledgeBase(pg, embedder=embedder) as kb:
        assert kb.engine.dialect.name == "postgresql"
        summary = kb.ingest_paths(corpus, "acme")
        assert [r.status for r in summary.results] == ["ingested"] * 4, [r.error for r in summary.results]
        assert kb.ingest_paths(corpus, "acme").unchanged == 4
        with kb.engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names(schema=schema))
        assert {"lx_documents", "lx_chunks", "lx_tables", "lx_jobs"} <= tables  # all in the test schema

        income = next(t for t in kb.list_tables("acme") if t.filename == SAMPLE_FACTS["annual_report"]["filename"])
        r = kb.run_sql("acme", f"SELECT y2022 FROM {income.sql_name} WHERE item LIKE 'Net income%'")
        assert r.rows == [[pytest.approx(-1580.2)]]
        for bad, reason in [
            ("select * from lx_chunks", "lx_chunks"),
            (f"select * from {income.sql_name} a join lx_documents d on true", "lx_documents"),
            ("select pg_read_file('/etc/passwd')", "PG_READ_FILE"),
            ("select query_to_xml('select * from lx_chunks', true, true, '')", "QUERY_TO_XML"),
            (f"delete from {income.sql_name}", "only SELECT"),
        ]:
            with pytest.raises(SqlRejected, match=reason):
                kb.run_sql("acme", bad)
        with pytest.raises(SqlRejected, match="not one of this tenant's tables"):
            kb.run_sql("other", f"select * from {income.sql_name}")
        with pytest.raises(SqlRejected, match="the query failed"):
            kb.run_sql("acme", f"select no_such_column from {income.sql_name}")
        assert kb.run_sql("acme", f"select count(*) from {income.sql_name}").rows == [[6]]  # still usable

        hits = kb.search("acme", "termination for convenience notice", k=2)
        assert hits[0].section.startswith(SAMPLE_FACTS["msa"]["termination_clause"])
        assert kb.search("other", "termination for convenience notice") == []

        report = next(d for d in kb.list_documents("acme") if d.id == income.doc_id)
        assert kb.delete_document("acme", report.id)
        with kb.engine.connect() as conn:
            assert income.sql_name not in set(sa.inspect(conn).get_table_names(schema=schema))
        assert kb.vectors.count("acme") == sum(d.chunks for d in kb.list_documents("acme"))
