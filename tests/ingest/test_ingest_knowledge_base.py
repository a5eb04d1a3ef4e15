"""End to end on the sample corpus: real SQLite, real Qdrant local store, real embeddings."""
from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from ingest.samples import SAMPLE_FACTS, write_msa_pdf

pytestmark = pytest.mark.slow


def physical_tables(kb) -> set[str]:
    return {t for t in sa.inspect(kb.engine).get_table_names() if t.startswith("t_")}


def test_sample_corpus_is_searchable_with_citations(kb, corpus):
    summary = kb.ingest_paths(corpus, "acme")
    assert [r.status for r in summary.results] == ["ingested"] * 4, [r.error for r in summary.results]
    hits = kb.search("acme", "What is the cap on each party's liability?", k=3)
    top = hits[0]
    assert top.filename == SAMPLE_FACTS["msa"]["filename"] and top.page == 2
    assert top.section.startswith(SAMPLE_FACTS["msa"]["liability_cap_clause"]) and "USD 2,000,000" in top.text
    whole = kb.document_passages("acme", top.doc_id)
    assert [p.page for p in whole] == sorted(p.page for p in whole) and any(p.chunk_id == top.chunk_id for p in whole)
    # the sparse side finds exact clause numbers and rare words
    hits = kb.search("acme", "change of control ninety days notice", k=2)
    assert hits[0].section.startswith(SAMPLE_FACTS["msa"]["change_of_control_clause"]) and hits[0].page == 3
    nda = [d for d in kb.list_documents("acme") if d.filename == SAMPLE_FACTS["nda"]["filename"]][0]
    hits = kb.search("acme", "governing law", k=3, doc_ids=[nda.id])
    assert hits and all(h.doc_id == nda.id for h in hits) and "Delaware" in hits[0].text


def test_tables_are_queryable_with_typed_numbers(kb, corpus):
    kb.ingest_paths(corpus, "acme")
    tables = {t.filename: t for t in kb.list_tables("acme")}
    income = tables[SAMPLE_FACTS["annual_report"]["filename"]]
    assert income.page == 2 and income.unit == "USD thousands" and income.n_rows == 6
    facts = SAMPLE_FACTS["annual_report"]["income_statement"]
    r = kb.run_sql("acme", f"SELECT item, y2022, y2024 - y2023 AS growth FROM {income.sql_name} ORDER BY row_num")
    rows = {row[0]: row[1:] for row in r.rows}
    assert rows["Operating income (loss)"][0] == pytest.approx(facts["Operating income (loss)"][2022])
    assert rows["Revenue"][1] == pytest.approx(facts["Revenue"][2024] - facts["Revenue"][2023])
    seg = tables[SAMPLE_FACTS["segments"]["filename"]]
    r = kb.run_sql("acme", f"SELECT fy_2024 FROM {seg.sql_name} WHERE segment_usd_thousands = 'Software'")
    assert r.rows == [[pytest.approx(SAMPLE_FACTS["segments"]["fy_total"]["Software"])]]
    assert isinstance(r.rows[0][0], float)


def test_unchanged_file_is_skipped_by_hash(kb, corpus):
    first = kb.ingest_file(corpus[0], "acme")
    points = kb.vectors.count("acme")
    again = kb.ingest_file(corpus[0], "acme")
    assert first.status == "ingested" and again.status == "unchanged" and again.doc_id == first.doc_id
    assert kb.vectors.count("acme") == points
    assert kb.list_documents("acme")[0].version == 1


def test_changed_file_replaces_old_chunks_and_tables(kb, tmp_path, monkeypatch):
    path = tmp_path / "contract.txt"
    path.write_text("1. Fees\nThe monthly fee is forty thousand dollars.\n\n| Item | 2024 |\n|---|---|\n| Fee | 40 |\n")
    v1 = kb.ingest_file(path, "acme")
    old_table = kb.list_tables("acme")[0].sql_name
    path.write_text("1. Fees\nThe monthly fee is fifty-five thousand euros.\n\n| Item | 2024 |\n|---|---|\n| Fee | 55 |\n")
    v2 = kb.ingest_file(path, "acme")
    assert v2.status == "ingested" and v2.doc_id == v1.doc_id
    docs = kb.list_documents("acme")
    assert len(docs) == 1 and docs[0].version == 2
    texts = [p.text for p in kb.document_passages("acme", v1.doc_id)]
    assert any("fifty-five" in t for t in texts) and not any("forty" in t for t in texts)
    assert kb.vectors.count("acme") == docs[0].chunks  # old points are gone
    hits = kb.search("acme", "monthly fee forty thousand dollars", k=5)
    assert hits and all("forty" not in h.text for h in hits)
    new_table = kb.list_tables("acme")[0].sql_name
    assert new_table != old_table and physical_tables(kb) == {new_table}
    assert kb.run_sql("acme", f"select y2024 from {new_table}").rows == [[55.0]]


def test_failed_update_keeps_the_stored_version(kb, tmp_path):
    path = tmp_path / "msa.pdf"
    write_msa_pdf(path)
    v1 = kb.ingest_file(path, "acme")
    path.write_bytes(b"%PDF-1.7\nthis is not really a pdf body\n%%EOF")
    v2 = kb.ingest_file(path, "acme")
    assert v2.status == "failed" and "damaged" in v2.error
    doc = kb.list_documents("acme")[0]
    assert doc.status == "ingested" and doc.version == 1 and "previous version kept" in doc.error
    assert doc.chunks == v1.chunks and kb.search("acme", "liability cap", k=1)[0].doc_id == v1.doc_id


def test_delete_removes_vectors_rows_and_tables(kb, corpus):
    kb.ingest_paths(corpus, "acme")
    report = next(d for d in kb.list_documents("acme") if d.filename == SAMPLE_FACTS["annual_report"]["filename"])
    table = next(t for t in kb.list_tables("acme") if t.doc_id == report.id)
    before = kb.vectors.count("acme")
    assert kb.delete_document("acme", report.id) is True
    assert kb.vectors.count("acme") == before - report.chunks
    assert report.id not in {d.id for d in kb.list_documents("acme")}
    assert kb.document_passages("acme", report.id) == []
    assert table.sql_name not in physical_tables(kb)
    assert table.sql_name not in {t.sql_name for t in kb.list_tables("acme")}
    assert all(h.doc_id != report.id for h in kb.search("acme", "revenue net income 2024", k=10))
    with kb.engine.connect() as conn:
        assert conn.exec_driver_sql("select count(*) from lx_chunks where doc_id = ?", (report.id,)).scalar() == 0
    assert kb.delete_document("acme", report.id) is False


def test_reopening_the_store_keeps_everything(settings, embedder, corpus):
    from ingest.knowledge_base import KnowledgeBase

    with KnowledgeBase(settings, embedder=embedder) as kb:
        kb.ingest_file(corpus[0], "acme")
        n = kb.vectors.count("acme")
    with KnowledgeBase(settings, embedder=embedder) as kb:
        assert kb.vectors.count("acme") == n > 0
        assert kb.ingest_file(corpus[0], "acme").status == "unchanged"
        assert kb.search("acme", "governing law New York", k=1)[0].page == 3


def test_failure_inside_the_commit_rolls_back_rows_and_ddl(kb, tmp_path, monkeypatch):
    import ingest.pipeline

    path = tmp_path / "figures.md"
    path.write_text("# Figures\n\n| Item | 2024 |\n|---|---|\n| Revenue | 100 |\n")
    v1 = kb.ingest_file(path, "acme")
    old_table = kb.list_tables("acme")[0].sql_name
    path.write_text("# Figures\n\nRestated.\n\n| Item | 2024 |\n|---|---|\n| Revenue | 250 |\n")

    def fail_after_drop(conn, name, table):
        raise RuntimeError("disk full")  # the old table was already dropped in this transaction

    monkeypatch.setattr(ingest.pipeline, "create_sql_table", fail_after_drop)
    failed = kb.ingest_file(path, "acme")
    assert failed.status == "failed" and "disk full" in failed.error
    doc = kb.list_documents("acme")[0]
    assert doc.version == 1 and doc.chunks == v1.chunks and "previous version kept" in doc.error
    assert physical_tables(kb) == {old_table}  # the DROP was rolled back with everything else
    assert kb.run_sql("acme", f"select y2024 from {old_table}").rows == [[100.0]]
    assert not any("Restated" in p.text for p in kb.document_passages("acme", v1.doc_id))
    assert kb.vectors.count("acme") == v1.chunks  # the failed attempt's points were removed
    monkeypatch.undo()
    assert kb.ingest_file(path, "acme").status == "ingested"
    assert kb.run_sql("acme", f"select y2024 from {kb.list_tables('acme')[0].sql_name}").rows == [[250.0]]


def test_store_in_use_by_another_process_gives_a_clear_error(settings, embedder, tmp_path):
    import subprocess
    import sys
    import textwrap

    from ingest.knowledge_base import KnowledgeBase

    with KnowledgeBase(settings, embedder=embedder):  # holds the Qdrant Edge shard
        child = textwrap.dedent(f"""
            from ingest.store.vectors import open_vector_store
            try:
                open_vector_store("chunks", 384, data_dir={str(settings.data_dir)!r})
            except RuntimeError as exc:
                print(exc)
        """)
        out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120,
                             cwd=str(tmp_path), env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])}).stdout
    assert "in use by another process" in out and "LEXICON_QDRANT_URL" in out


def test_html_csv_and_text_go_through_the_whole_pipeline(kb, tmp_path):
    (tmp_path / "kpis.csv").write_text('quarter,revenue,margin\nQ1,"$1,200.5",41.0%\nQ2,"(300)",39.5%\n')
    (tmp_path / "policy.html").write_text("<html><body><h1>Retention Policy</h1><h2>4.2 Deletion</h2>"
                                          "<p>Backups are deleted after ninety days.</p></body></html>")
    (tmp_path / "memo.txt").write_text("Memo page one.\fSecond page: the escrow agent is Fabrikam Bank.")
    summary = kb.ingest_paths([tmp_path], "acme")
    assert summary.ingested == 3, [r.error for r in summary.results]
    (table,) = kb.list_tables("acme")
    assert [(c.name, c.sql_type, c.unit) for c in table.columns] == [
        ("quarter", "TEXT", ""), ("revenue", "REAL", "USD"), ("margin", "REAL", "%")]
    assert kb.run_sql("acme", f"select sum(revenue), avg(margin) from {table.sql_name}").rows == [
        [pytest.approx(900.5), pytest.approx(40.25)]]
    hit = kb.search("acme", "when are backups deleted", k=1)[0]
    assert hit.filename == "policy.html" and hit.section == "4.2 Deletion"
    hit = kb.search("acme", "who is the escrow agent", k=1)[0]
    assert hit.filename == "memo.txt" and hit.page == 2
