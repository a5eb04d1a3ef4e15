"""Every kind of bad file fails alone, with a readable error on its job item; the rest goes through."""
from __future__ import annotations

import zipfile

import pypdf
import pytest

from ingest.knowledge_base import KnowledgeBase
from ingest.samples import write_msa_pdf, write_nda_docx, write_segments_xlsx

pytestmark = pytest.mark.slow


def add_bomb(path, member: str, mb: int) -> None:
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(member, b"\0" * (mb << 20))


@pytest.fixture
def bad_folder(tmp_path):
    d = tmp_path / "inbox"
    d.mkdir()
    write_msa_pdf(d / "good_msa.pdf")
    (d / "good_notes.md").write_text("# Notes\n\n1. Scope\nThe supplier delivers weekly reports.\n")
    (d / "corrupt.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\ngarbage\n%%EOF")
    writer = pypdf.PdfWriter(clone_from=str(d / "good_msa.pdf"))
    writer.encrypt(user_password="s3cret", owner_password="owner", algorithm="AES-128")
    writer.write(str(d / "encrypted.pdf"))
    (d / "empty.docx").write_bytes(b"")
    (d / "huge.txt").write_text("lorem ipsum dolor " * 120_000)  # ~2 MB, over a 1 MB limit
    write_nda_docx(d / "bomb.docx")
    add_bomb(d / "bomb.docx", "word/media/filler.bin", 24)
    write_segments_xlsx(d / "bomb.xlsx")
    add_bomb(d / "bomb.xlsx", "xl/filler.xml", 24)
    (d / "really_text.pdf").write_text("This is a plain text file with a .pdf name.")
    (d / "program.exe").write_bytes(b"MZ\x90\x00")
    (d / ".DS_Store").write_bytes(b"\x00\x01")  # hidden files are not documents: skipped
    return d


EXPECTED_ERRORS = {
    "corrupt.pdf": "damaged",
    "encrypted.pdf": "encrypted",
    "empty.docx": "empty (0 bytes)",
    "huge.txt": "over the 1 MB limit",
    "bomb.docx": "zip bomb",
    "bomb.xlsx": "zip bomb",
    "really_text.pdf": "extension .pdf but its content is plain text",
    "program.exe": "unsupported file type .exe",
}


def test_bad_files_fail_alone_with_readable_errors(settings, embedder, bad_folder):
    limited = settings.model_copy(update={"max_file_mb": 1, "max_uncompressed_mb": 16})
    with KnowledgeBase(limited, embedder=embedder) as kb:
        kept = kb.ingest_file(bad_folder / "good_notes.md", "acme")  # stored before the bad batch
        summary = kb.ingest_paths([bad_folder], "acme")
        status = {r.filename: (r.status, r.error) for r in summary.results}
        assert set(status) == set(EXPECTED_ERRORS) | {"good_msa.pdf", "good_notes.md"}
        assert status["good_msa.pdf"] == ("ingested", None)
        assert status["good_notes.md"] == ("unchanged", None)
        for name, fragment in EXPECTED_ERRORS.items():
            assert status[name][0] == "failed" and fragment in status[name][1], (name, status[name])
        job = kb.get_job(summary.job_id)
        assert job.status == "done" and job.failed == len(EXPECTED_ERRORS) and job.done == job.total
        docs = {d.filename: d for d in kb.list_documents("acme")}
        assert docs["bomb.docx"].status == "failed" and "zip bomb" in docs["bomb.docx"].error
        assert docs["good_notes.md"].status == "ingested" and docs["good_notes.md"].chunks == kept.chunks
        assert kb.search("acme", "weekly reports", k=1)[0].filename == "good_notes.md"
        # failed documents own no chunks or vectors
        ok_chunks = sum(d.chunks for d in docs.values() if d.status == "ingested")
        assert kb.vectors.count("acme") == ok_chunks
