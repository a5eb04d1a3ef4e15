"""Sniff a file's real type from its bytes (not its name) and guard against zip bombs.

The extension only says what the uploader claims; a ``.pdf`` that is really text, or a ``.docx`` that is
not a zip, is rejected with a message naming both. DOCX/XLSX are zip archives: before any parser opens
one we sum the declared uncompressed sizes and check compression ratios, so a small upload cannot
expand into gigabytes in memory.
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import IngestError

EXTENSION_KINDS = {
    ".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".csv": "csv",
    ".html": "html", ".htm": "html", ".txt": "text", ".md": "text", ".markdown": "text", ".text": "text",
    ".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".tiff": "image",
}
# The accepted binary formats by their leading bytes, one entry per signature: (kind, magic). Zip containers are
# told apart (DOCX / XLSX) by their parts below; text kinds have no magic and are sniffed from the bytes.
MAGIC = (
    ("pdf", b"%PDF-"),
    ("image", b"\x89PNG\r\n\x1a\n"),  # PNG
    ("image", b"\xff\xd8\xff"),  # JPEG
    ("image", b"II*\x00"),  # TIFF, little-endian
    ("image", b"MM\x00*"),  # TIFF, big-endian
    ("zip", b"PK\x03\x04"),
)
IMAGE_MAGIC = tuple(magic for kind, magic in MAGIC if kind == "image")
TEXT_KINDS = {"csv", "html", "text"}
MAX_ZIP_RATIO = 200  # a real DOCX/XLSX part compresses ~2-20x; bombs compress 1000x+
MAX_ZIP_ENTRIES = 20_000


@dataclass(frozen=True)
class ZipLimits:
    max_uncompressed_bytes: int
    max_ratio: int = MAX_ZIP_RATIO
    max_entries: int = MAX_ZIP_ENTRIES


def sniff_kind(head: bytes, path: Path) -> str:
    """Kind from content: pdf | docx | xlsx | zip | image | html | text | binary | empty."""
    if not head:
        return "empty"
    kind = next((k for k, magic in MAGIC if head.startswith(magic)), None)
    if kind is None and b"%PDF-" in head[:1024]:
        kind = "pdf"  # a PDF may have some junk before its header
    if kind in ("pdf", "image"):
        return kind
    if kind == "zip":
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except zipfile.BadZipFile:
            return "zip"
        if "word/document.xml" in names:
            return "docx"
        if "xl/workbook.xml" in names:
            return "xlsx"
        return "zip"
    if b"\x00" in head[:8192]:
        return "binary"
    try:
        text = head[:8192].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head[:8192]) - 4:  # a cut multi-byte char at the end is fine
            try:
                text = head[:8192].decode("cp1252")
            except UnicodeDecodeError:
                return "binary"
        else:
            text = head[: exc.start].decode("utf-8")
    low = text.lstrip("\ufeff \t\r\n").lower()
    if low.startswith("<!doctype html") or low.startswith("<html") or "<body" in low[:4096]:
        return "html"
    return "text"


def detect_kind(path: Path) -> str:
    """The parser to use for ``path``; raises IngestError when the extension and the content disagree."""
    ext = path.suffix.lower()
    with open(path, "rb") as fh:
        head = fh.read(64 * 1024)
    real = sniff_kind(head, path)
    if real == "empty":
        raise IngestError("the file is empty (0 bytes)")
    claimed = EXTENSION_KINDS.get(ext)
    if claimed is None:
        if real in {"pdf", "docx", "xlsx", "html", "image"}:
            return real  # no or unknown extension, but the content is a format we read
        raise IngestError(
            f"unsupported file type {ext or '(no extension)'}: expected PDF, DOCX, HTML, TXT/Markdown, XLSX, CSV"
            " or an image (PNG, JPEG, TIFF)"
        )
    if claimed in TEXT_KINDS:
        if real in ("text", "html"):
            return claimed
        raise IngestError(f"the file has extension {ext} but its content is {describe(real)}, not text")
    if real != claimed:
        raise IngestError(f"the file has extension {ext} but its content is {describe(real)}, not {claimed.upper()}")
    return claimed


def describe(kind: str) -> str:
    return {
        "pdf": "a PDF", "docx": "a DOCX document", "xlsx": "an XLSX workbook", "zip": "a zip archive",
        "html": "HTML", "text": "plain text", "binary": "binary data", "image": "an image (PNG, JPEG or TIFF)",
    }.get(kind, kind)


def check_zip_bomb(path: Path, limits: ZipLimits) -> None:
    """Refuse archives whose declared contents are too big, too many or compressed suspiciously well."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except zipfile.BadZipFile as exc:
        raise IngestError(f"the file is not a valid zip container (DOCX/XLSX): {exc}") from exc
    if len(infos) > limits.max_entries:
        raise IngestError(f"the archive has {len(infos)} parts (limit {limits.max_entries}); refusing a possible zip bomb")
    total = sum(i.file_size for i in infos)
    if total > limits.max_uncompressed_bytes:
        raise IngestError(
            f"the archive expands to {total / 2**20:.0f} MB (limit {limits.max_uncompressed_bytes / 2**20:.0f} MB);"
            " refusing a possible zip bomb"
        )
    for info in infos:
        if info.file_size > 1 << 20 and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise IngestError(
                f"part {info.filename} compresses {ratio:.0f}:1 (limit {limits.max_ratio}:1); refusing a possible zip bomb"
            )
