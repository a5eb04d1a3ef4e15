"""Tenant B never sees tenant A's chunks, documents, tables or jobs."""
from __future__ import annotations

import pytest

from ingest.errors import SqlRejected
from ingest.samples import SAMPLE_FACTS

pytestmark = pytest.mark.slow


def test_tenant_isolation(kb, corpus):
    kb.ingest_paths(corpus, "tenant-a")
    other = kb.ingest_file(corpus[0], "tenant-b")  # the same file, owned separately
    assert other.status == "ingested"
    a_docs = {d.id for d in kb.list_documents("tenant-a")}
    b_docs = {d.id for d in kb.list_documents("tenant-b")}
    assert len(a_docs) == 4 and len(b_docs) == 1 and not a_docs & b_docs

    for query in ["net income 2024 revenue", "liability cap", "Delaware representatives", "segment revenue"]:
        hits = kb.search("tenant-b", query, k=10)
        assert hits and all(h.doc_id in b_docs for h in hits)
        # asking B's search for A's documents by id returns nothing
        assert kb.search("tenant-b", query, k=10, doc_ids=list(a_docs)) == []
    assert kb.search("tenant-c", "liability cap") == []

    a_tables = kb.list_tables("tenant-a")
    assert a_tables and kb.list_tables("tenant-b") == []
    income = next(t for t in a_tables if t.filename == SAMPLE_FACTS["annual_report"]["filename"])
    with pytest.raises(SqlRejected, match="not one of this tenant's tables"):
        kb.run_sql("tenant-b", f"select * from {income.sql_name}")
    assert kb.run_sql("tenant-a", f"select count(*) from {income.sql_name}").rows == [[6]]

    a_doc = next(iter(a_docs))
    assert kb.document_passages("tenant-b", a_doc) == []
    assert kb.delete_document("tenant-b", a_doc) is False
    assert a_doc in {d.id for d in kb.list_documents("tenant-a")}
    assert all(j.tenant == "tenant-b" for j in kb.list_jobs("tenant-b"))
