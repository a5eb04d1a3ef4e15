"""The real type is sniffed from the bytes; mismatches and zip bombs are refused before parsing."""
from __future__ import annotations

import zipfile

import pytest

from ingest.detect import ZipLimits, check_zip_bomb, detect_kind
from ingest.errors import IngestError


def test_real_formats_are_detected(corpus, tmp_path):
    kinds = {p.suffix: detect_kind(p) for p in corpus}
    assert kinds == {".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx"}
    renamed = tmp_path / "report"  # no extension: the content decides
    renamed.write_bytes(corpus[0].read_bytes())
    assert detect_kind(renamed) == "pdf"


@pytest.mark.parametrize("name, data, message", [
    ("contract.pdf", b"just some text, not a PDF", "extension .pdf but its content is plain text"),
    ("nda.docx", b"%PDF-1.4 ...", "extension .docx but its content is a PDF"),
    ("book.xlsx", b"\x00\x01\x02binary", "extension .xlsx but its content is binary data"),
    ("notes.txt", b"\x00\x00\x00\x01", "content is binary data, not text"),
    ("empty.pdf", b"", "empty"),
    ("tool.exe", b"MZ\x90\x00", "unsupported file type .exe"),
])
def test_mismatches_are_refused_with_a_readable_message(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(IngestError, match=message.replace(".", r"\.")):
        detect_kind(path)


def test_zip_that_is_not_office_is_refused(tmp_path):
    path = tmp_path / "fake.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "hi")
    with pytest.raises(IngestError, match="zip archive, not DOCX"):
        detect_kind(path)


def test_zip_bomb_limits(tmp_path):
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/document.xml", b"<w/>" + b" " * (8 << 20))
    with pytest.raises(IngestError, match="compresses .*:1"):
        check_zip_bomb(path, ZipLimits(max_uncompressed_bytes=64 << 20))
    with pytest.raises(IngestError, match="expands to 8 MB"):
        check_zip_bomb(path, ZipLimits(max_uncompressed_bytes=4 << 20, max_ratio=10**9))
    check_zip_bomb(path, ZipLimits(max_uncompressed_bytes=64 << 20, max_ratio=10**9))  # within limits
