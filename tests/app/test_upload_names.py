"""Uploads over real HTTP keep the user's file name, whatever its script or length, and refuse bad files at once.

A real server (uvicorn, SQLite, Qdrant Edge, the embedder): names in Chinese and with accents are separate
documents kept exactly (NFC), the same name in another normalisation replaces the earlier version only in
the same tenant, names of 300 UTF-8 bytes and of 5,000 characters are stored and listed in full while every
path on disk stays under the OS limits, empty / fake-type / oversized / reserved-name uploads get their 4xx
before anything is stored, and no upload folder is left after a refusal, a resume or a delete.
"""
from __future__ import annotations

import os
import time
import unicodedata
from pathlib import Path

import httpx
import pytest

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from live_server import LiveServer, free_port  # tests/live_server.py
from text_pdf import write_lines_pdf  # tests/text_pdf.py

pytestmark = pytest.mark.slow
A, B = {"X-API-Key": "key-names-a"}, {"X-API-Key": "key-names-b"}
CONTRACT, AGREEMENT, ACCENTS = "合同.pdf", "协议.pdf", "é…é.pdf"
NAME_300_BYTES = "契" * 98 + "约.pdf"  # 99 CJK characters (3 bytes each) + ".pdf": 301 bytes of UTF-8
NAME_5000_CHARS = "Master services agreement " * 192 + "x" * 4 + ".pdf"  # 5,000 characters
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(64)


def pdf_bytes(tmp: Path, words: str) -> bytes:
    return write_lines_pdf(tmp / "doc.pdf", [[f"This agreement concerns the {words}.",
                                              f"The {words} is delivered within thirty days."]]).read_bytes()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from app.server import create_app

    # originals are kept (keep_uploads) so the test can read the paths on disk and see delete remove them
    settings = small_settings(tmp_path_factory.mktemp("names-data"), max_file_mb=1, keep_uploads=True,
                              api_keys={"key-names-a": "a", "key-names-b": "b"})
    app = create_app(settings)
    live = LiveServer(app, free_port()).start()
    live.service, live.settings = app.state.service, settings
    yield live
    live.stop()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=300) as c:
        yield c


def upload(client, headers, name: str, data: bytes) -> httpx.Response:
    return client.post("/api/documents", headers=headers, files={"file": (name, data, "application/octet-stream")})


def ingested(client, headers, name: str, data: bytes) -> dict:
    r = upload(client, headers, name, data)
    assert r.status_code == 202, r.text
    job = r.json()
    deadline = time.monotonic() + 600
    while job["status"] != "done":
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
        job = client.get(f"/api/jobs/{job['job_id']}", headers=headers).json()
    assert job["documents"][0]["status"] in ("ingested", "unchanged"), job
    return {**r.json(), "doc_id": job["documents"][0]["doc_id"], "filename": job["documents"][0]["filename"]}


def folders(settings) -> list[str]:
    root = settings.data_dir / "uploads"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir()) if root.exists() else []


def documents(client, headers) -> dict[str, dict]:
    return {d["filename"]: d for d in client.get("/api/documents", headers=headers).json()}


def test_names_in_any_script_are_separate_documents_kept_exactly(server, client, tmp_path):
    docs = {name: ingested(client, A, name, pdf_bytes(tmp_path, words))
            for name, words in ((CONTRACT, "turbine housing"), (AGREEMENT, "glacier survey"),
                                (ACCENTS, "saffron harvest"))}
    assert len({d["doc_id"] for d in docs.values()}) == 3 and not any(d.get("replaces") for d in docs.values())
    listed = documents(client, A)
    assert set(listed) == {CONTRACT, AGREEMENT, ACCENTS}  # exactly as sent, nothing collapsed to "_.pdf"
    assert all(listed[n]["status"] == "ingested" and listed[n]["version"] == 1 for n in listed)
    for name, words in ((CONTRACT, "turbine housing"), (AGREEMENT, "glacier survey"), (ACCENTS, "saffron harvest")):
        hits = server.service.kb.search("a", f"When is the {words} delivered?", k=1)
        assert hits and hits[0].filename == name, (name, hits)


def test_same_name_in_another_normalisation_replaces_only_in_its_tenant(server, client, tmp_path):
    nfd = unicodedata.normalize("NFD", ACCENTS)
    assert nfd != ACCENTS
    before = documents(client, A)[ACCENTS]
    again = ingested(client, A, nfd, pdf_bytes(tmp_path, "saffron harvest and its storage"))
    assert again["doc_id"] == before["id"] and again["replaces"]["version"] == 1, again
    assert documents(client, A)[ACCENTS]["version"] == 2
    other = ingested(client, B, CONTRACT, pdf_bytes(tmp_path, "turbine housing"))  # tenant b: its own document
    assert not other.get("replaces") and other["doc_id"] != documents(client, A)[CONTRACT]["id"]
    assert set(documents(client, B)) == {CONTRACT} and documents(client, A)[CONTRACT]["version"] == 1


def test_long_names_are_stored_in_full_and_the_paths_stay_under_the_os_limits(server, client, tmp_path):
    assert len(NAME_300_BYTES.encode()) > 255 and len(NAME_5000_CHARS) == 5000
    for name in (NAME_300_BYTES, NAME_5000_CHARS):
        doc = ingested(client, A, name, pdf_bytes(tmp_path, "long name"))
        assert doc["filename"] == name and documents(client, A)[name]["id"] == doc["doc_id"]
    root = server.settings.data_dir / "uploads"
    kept = [p for p in root.rglob("*") if p.is_file()]
    assert kept and all(len(os.fsencode(part)) <= 255 for p in kept for part in p.parts)
    assert all(len(os.fsencode(p)) < os.pathconf(root, "PC_PATH_MAX") for p in kept)
    too_long = "y" * 10_001 + ".pdf"
    r = upload(client, A, too_long, pdf_bytes(tmp_path, "too long"))
    assert r.status_code == 400 and "10,000" in r.json()["detail"], r.text
    assert too_long not in documents(client, A)


@pytest.mark.parametrize("name,data,status,words", [
    ("empty.pdf", b"", 400, "empty"),
    ("picture.pdf", PNG, 415, "image"),
    ("noise.pdf", bytes(range(256)) * 8, 415, "binary"),
    ("big.txt", b"x" * (2**20 + 10), 413, "1 MB"),
    ("[sample] nda.pdf", b"%PDF-1.4\n", 400, "reserved"),
])
def test_bad_uploads_are_refused_at_once_and_leave_nothing(server, client, name, data, status, words):
    before_docs, before_folders = documents(client, A), folders(server.settings)
    r = upload(client, A, name, data)
    assert r.status_code == status and words in r.json()["detail"], r.text
    assert documents(client, A) == before_docs and folders(server.settings) == before_folders


def test_delete_leaves_no_upload_folder(server, client, tmp_path):
    for name in (CONTRACT, AGREEMENT, ACCENTS, NAME_300_BYTES, NAME_5000_CHARS):
        assert name in documents(client, A)
    assert folders(server.settings)  # the kept originals (keep_uploads)
    for tenant in (A, B):
        for doc in documents(client, tenant).values():
            assert client.delete(f"/api/documents/{doc['id']}", headers=tenant).status_code == 200
    assert documents(client, A) == {} and documents(client, B) == {}
    assert folders(server.settings) == []


def test_a_resumed_upload_leaves_no_folder(tmp_path):
    """A kill after the upload was stored and before its job ran: the next service resumes the job and removes
    the upload's folders (and an empty one a kill left between a job and its clean-up)."""
    from app import uploads
    from app.service import LexiconService

    settings = small_settings(tmp_path / "data")
    first = LexiconService(settings)
    path = uploads.store(settings.data_dir, "a", CONTRACT, pdf_bytes(tmp_path, "resumed turbine"))
    job_id = first.kb.create_job([path], "a", [CONTRACT])  # committed, never run: what kill -9 leaves
    first.close()
    (uploads.tenant_folder(settings.data_dir, "a") / ("0" * 32) / "f").mkdir(parents=True)  # an empty leftover
    second = LexiconService(settings)
    try:
        second.resume_ingest_jobs()
        second._ingest_pool.submit(lambda: None).result()  # one ingest thread: the resume has run
        job = second.job("a", job_id)
        assert job["status"] == "done" and job["documents"][0]["status"] == "ingested", job
        assert [d["filename"] for d in second.documents("a")] == [CONTRACT]
        assert folders(settings) == []
    finally:
        second.close()
