"""What a tenant leaves on disk and in the stores: uploads go away, deleting documents leaves an empty
footprint, same-name uploads are versions, and the sample corpus never replaces a user's document.

Real parts throughout: the service over SQLite, Qdrant Edge, the embedder and (for snapshots) the engine.
"""
from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from sqlmodel import Session, func, select

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from tenant_world import CODE_WORD, LEDGER, LEDGER_CSV, MEMO, write_memo_pdf  # tests/app/tenant_world.py

pytestmark = pytest.mark.slow


def bomb_docx(path):
    """A DOCX with a 24 MB zero-filled member: refused by the zip-bomb guard (limit lowered to 8 MB)."""
    import zipfile

    from ingest.samples import write_nda_docx

    write_nda_docx(path)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/media/filler.bin", b"\0" * (24 << 20))
    return path


def wait(service, tenant: str, job: dict) -> dict:
    deadline = time.monotonic() + 600
    while (job := service.job(tenant, job["job_id"]))["status"] != "done":
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    service._ingest_pool.submit(lambda: None).result()  # one ingest thread: the upload's clean-up has run
    return job


def upload_files(settings) -> list[str]:
    root = settings.data_dir / "uploads"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.exists() else []


def footprint(service, tenant: str) -> dict:
    """Everything of ``tenant``'s in the data directory and the stores."""
    from ingest.models import Chunk, Document, DocumentVersion, TableEntry

    kb = service.kb
    with Session(kb.engine) as s:
        def count(model, *where):
            return s.exec(select(func.count()).select_from(model).where(*where)).one()
        docs = s.exec(select(Document.id).where(Document.tenant == tenant)).all()
        out = {"documents": len(docs), "chunks": count(Chunk, Chunk.tenant == tenant),
               "versions": count(DocumentVersion, DocumentVersion.doc_id.in_(docs or [""])),
               "table_entries": count(TableEntry, TableEntry.tenant == tenant)}
    out["sql_tables"] = sorted(t for t in sa.inspect(kb.engine).get_table_names() if t in service.tenant_tables_seen)
    out["vectors"] = kb.vectors.count(tenant)
    out["snapshots"] = service.engine_stats(tenant).get("snapshot_names", [])
    out["files"] = upload_files(service.settings)
    return out


@pytest.fixture
def service(tmp_path):
    from app.service import LexiconService

    svc = LexiconService(small_settings(tmp_path / "data", keep_uploads=True, max_uncompressed_mb=8))
    svc.tenant_tables_seen = set()
    yield svc
    svc.close()


def test_deleting_every_document_leaves_an_empty_footprint(service, tmp_path):
    memo = write_memo_pdf(tmp_path / MEMO).read_bytes()
    for tenant in ("a", "b"):
        wait(service, tenant, service.upload(tenant, MEMO, memo))
        wait(service, tenant, service.upload(tenant, LEDGER, LEDGER_CSV.encode()))
    refused = wait(service, "a", service.upload("a", "bomb.docx", bomb_docx(tmp_path / "bomb.docx").read_bytes()))
    assert refused["documents"][0]["status"] == "failed" and "zip bomb" in refused["documents"][0]["error"]
    memo_id = next(d["id"] for d in service.documents("a") if d["filename"] == MEMO)
    answer = service.ask("a", "Summarize the whole memo.", mode="long", doc_ids=[memo_id])
    assert answer.route == "long"
    service.tenant_tables_seen |= {t.sql_name for t in service.kb.list_tables("a")}
    before, other = footprint(service, "a"), footprint(service, "b")
    print("tenant a before:", before)
    assert before["documents"] == 3 and before["chunks"] and before["vectors"] and before["table_entries"]
    assert before["sql_tables"] and before["versions"] == 2 and len(before["snapshots"]) == 1
    assert len(before["files"]) == 4, before["files"]  # keep_uploads: a's two and b's two originals, not the bomb

    for doc in service.documents("a"):
        assert service.delete_document("a", doc["id"])
    after = footprint(service, "a")
    print("tenant a after:", after)
    assert after == {"documents": 0, "chunks": 0, "versions": 0, "table_entries": 0, "sql_tables": [],
                     "vectors": 0, "snapshots": [], "files": after["files"]}
    assert len(after["files"]) == 2 and all(f.startswith("b-") for f in after["files"]), after["files"]
    b_after = footprint(service, "b")  # b's documents are untouched
    assert {k: b_after[k] for k in ("documents", "chunks", "vectors", "table_entries")} == \
        {k: other[k] for k in ("documents", "chunks", "vectors", "table_entries")}
    assert any(CODE_WORD in p.text for p in service.kb.search("b", "project code name", k=3))


def test_uploads_are_deleted_after_ingest_unless_kept(tmp_path):
    from app.service import LexiconService

    service = LexiconService(small_settings(tmp_path / "data", max_uncompressed_mb=8))  # keep_uploads off
    try:
        ok = wait(service, "a", service.upload("a", LEDGER, LEDGER_CSV.encode()))
        bad = wait(service, "a", service.upload("a", "bomb.docx", bomb_docx(tmp_path / "b.docx").read_bytes()))
        broken = wait(service, "a", service.upload("a", "broken.pdf", b"%PDF-1.4 not really a pdf"))
        assert ok["documents"][0]["status"] == "ingested"
        assert bad["documents"][0]["status"] == broken["documents"][0]["status"] == "failed"
        assert upload_files(service.settings) == []
        assert not (service.settings.data_dir / "uploads").exists() or \
            not any((service.settings.data_dir / "uploads").iterdir())
    finally:
        service.close()


def test_same_name_upload_is_a_new_version_and_says_so(service):
    first = wait(service, "a", service.upload("a", "terms.txt", b"Payment is due within thirty days.\n"))
    assert "replaces" not in first and "notice" not in first
    doc_id = first["documents"][0]["doc_id"]
    again = service.upload("a", "terms.txt", b"Payment is due within sixty days.\n")
    assert again["replaces"] == {"doc_id": doc_id, "filename": "terms.txt", "version": 1, "identical": False}
    assert "replaces the earlier version 1" in again["notice"]
    wait(service, "a", again)
    same = service.upload("a", "terms.txt", b"Payment is due within sixty days.\n")
    assert same["replaces"]["identical"] and "nothing changes" in same["notice"]
    wait(service, "a", same)
    versions = service.document_versions("a", doc_id)
    assert [v["version"] for v in versions] == [1, 2] and versions[0]["content_hash"] != versions[1]["content_hash"]
    assert [d["version"] for d in service.documents("a")] == [2]
    assert "sixty" in service.kb.document_passages("a", doc_id)[0].text
    from app.service import NotFound
    with pytest.raises(NotFound):
        service.document_versions("b", doc_id)  # another tenant's document does not exist for b
    assert "replaces" not in service.upload("b", "terms.txt", b"b's terms\n")  # b has no terms.txt of its own


def test_identical_upload_after_a_chunker_change_says_it_is_indexed_again(service, monkeypatch):
    from ingest import chunker

    first = wait(service, "a", service.upload("a", "terms.txt", b"Payment is due within thirty days.\n"))
    doc_id = first["documents"][0]["doc_id"]
    monkeypatch.setattr(chunker, "CHUNKER_VERSION", chunker.CHUNKER_VERSION + 1)
    same = service.upload("a", "terms.txt", b"Payment is due within thirty days.\n")
    assert same["replaces"]["identical"] and "indexed again" in same["notice"] and "version 2" in same["notice"]
    wait(service, "a", same)
    assert [v["version"] for v in service.document_versions("a", doc_id)] == [1, 2]
    assert "thirty" in service.kb.document_passages("a", doc_id)[0].text


def test_samples_never_replace_a_user_document_and_restart_reingests_nothing(tmp_path):
    from app.samples import SAMPLE_PREFIX, load_samples
    from app.service import LexiconService
    from ingest.samples import SAMPLE_FACTS

    settings = small_settings(tmp_path / "data", api_keys={"custom-key": "acme", "other": "globex"})
    msa = SAMPLE_FACTS["msa"]["filename"]
    service = LexiconService(settings)
    try:
        own = write_memo_pdf(tmp_path / "own.pdf").read_bytes()  # the user's own PDF, named like a sample
        mine = wait(service, "acme", service.upload("acme", msa, own))
        first = load_samples(service)
        assert first["tenant"] == "acme" and first["key"] == "custom-key"  # some key sees them
        assert sorted(d["status"] for d in first["documents"]) == ["ingested"] * 4
    finally:
        service.close()
    service = LexiconService(settings)  # a restart
    try:
        second = load_samples(service)
        assert [d["status"] for d in second["documents"]] == ["unchanged"] * 4
        names = {d["filename"]: d for d in service.documents("acme")}
        assert set(names) == {msa, *(SAMPLE_PREFIX + SAMPLE_FACTS[k]["filename"] for k in
                                     ("msa", "nda", "annual_report", "segments"))}
        assert names[msa]["id"] == mine["documents"][0]["doc_id"] and names[msa]["version"] == 1
        assert CODE_WORD in service.kb.document_passages("acme", names[msa]["id"])[0].text
        assert service.documents("globex") == []
    finally:
        service.close()
