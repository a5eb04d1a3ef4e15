"""Original upload files on disk: the name a user gave, where the bytes live, and that they go away.

The name is kept as given (NFC-normalised, so two spellings of one name are one document; path parts and
control characters removed) and is only ever data: the file is written to
``data_dir/uploads/<tenant>/<doc_id>/<random>/original<.ext>``, every folder name from a hash of the tenant
or the document id, so no tenant or file name can reach outside the uploads folder or past the OS limits
on a name (255 bytes) or a path. It is deleted when its ingestion job has finished (failed or refused files
included), unless ``settings.keep_uploads`` is set, in which case a successfully ingested file stays until
its document is deleted. Empty folders are removed on every path: after a job, a failed upload, a resume,
a delete, and at start.

Cheap checks run before anything is stored, so the caller learns at once (4xx): the name (reserved or too
long), an empty file, the size, and the type by its magic bytes (``ingest.detect``).
"""
from __future__ import annotations

import hashlib
import re
import shutil
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path

from app.samples import SAMPLE_PREFIX
from ingest.pipeline import document_id

_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_DOC_ID = re.compile(r"^[0-9a-f]{32}$")
_EXT = re.compile(r"^\.[A-Za-z0-9]{1,16}$")


@dataclass(frozen=True)
class NameLimits:
    max_chars: int = 10_000  # a file name longer than this is refused (the UI and the database show it in full)
    max_header_bytes: int = 4 * 10_000 + 1024  # one multipart part header: the name in UTF-8 and the rest


class UploadRefused(ValueError):
    """An upload refused by a cheap check before anything is stored; ``status`` is the HTTP answer."""
    status = 400


class UploadTooLarge(UploadRefused):
    status = 413


class UnsupportedType(UploadRefused):
    status = 415


def clean_name(raw: str | None, limits: NameLimits = NameLimits()) -> str:
    """The name a document is stored and shown under: the user's name in NFC, without folders or control
    characters; raises UploadRefused for a reserved or over-long name."""
    name = unicodedata.normalize("NFC", raw or "")
    name = re.split(r"[/\\]", name)[-1]  # a browser may send a path
    name = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in name).strip()
    if name in ("", ".", ".."):
        name = "upload"
    if len(name) > limits.max_chars:
        raise UploadRefused(f"the file name is {len(name):,} characters long; the limit is {limits.max_chars:,}")
    if name.casefold().startswith(SAMPLE_PREFIX.strip().casefold()):
        raise UploadRefused(f"names starting with {SAMPLE_PREFIX.strip()!r} are reserved for the sample documents; "
                            "rename the file")
    return name


def disk_name(name: str) -> str:
    """The file's name on disk: ``original`` plus the name's extension when it is a plain one (the type check
    reads the extension the user claimed)."""
    ext = Path(name).suffix
    return "original" + (ext.lower() if _EXT.match(ext) else "")


def check_bytes(name: str, data: bytes, max_bytes: int) -> None:
    if not data:
        raise UploadRefused(f"{name}: the file is empty (0 bytes)")
    if len(data) > max_bytes:
        raise UploadTooLarge(f"{name}: {len(data):,} bytes is over the {max_bytes // 2**20} MB limit")


def check_type(name: str, path: Path) -> str:
    """The kind the pipeline will parse ``path`` as (its magic bytes against the extension of ``name``)."""
    from ingest.detect import detect_kind
    from ingest.errors import IngestError

    try:
        return detect_kind(path)
    except IngestError as exc:
        raise UnsupportedType(f"{name}: {exc}") from exc


def uploads_root(data_dir: Path) -> Path:
    return Path(data_dir) / "uploads"


def tenant_folder(data_dir: Path, tenant: str) -> Path:
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:12]
    return uploads_root(data_dir) / f"{_SAFE.sub('_', tenant)[:40]}-{digest}"


def upload_folder(data_dir: Path, tenant: str, filename: str) -> Path:
    """A fresh folder for one upload of ``filename`` (the name the document will have)."""
    folder = tenant_folder(data_dir, tenant) / document_id(tenant, filename) / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def store(data_dir: Path, tenant: str, name: str, data: bytes) -> Path:
    """Write one upload to its fresh folder and check its type; -> the file. A refused or failed write leaves
    no folder behind."""
    folder = upload_folder(data_dir, tenant, name)
    try:
        path = folder / disk_name(name)
        path.write_bytes(data)
        check_type(name, path)
        return path
    except BaseException:
        remove_folder(data_dir, folder)
        raise


def remove_folder(data_dir: Path, folder: Path) -> None:
    """Delete one upload's folder, then its parents up to the uploads root while they are empty."""
    root = uploads_root(data_dir).resolve()
    folder = Path(folder).resolve()
    if root not in folder.parents:
        raise ValueError(f"{folder} is not an upload folder")
    shutil.rmtree(folder, ignore_errors=True)
    for parent in folder.parents:
        if parent == root:
            break
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break


def prune_empty(data_dir: Path) -> int:
    """Remove every empty folder under the uploads root (left by a kill between a job and its clean-up)."""
    root = uploads_root(data_dir)
    if not root.exists():
        return 0
    removed = 0
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()  # only when empty
            removed += 1
        except OSError:
            pass
    return removed


def remove_document_files(data_dir: Path, tenant: str, doc_id: str) -> None:
    """Delete every kept original of a document (all its versions)."""
    if not _DOC_ID.match(doc_id or ""):
        return
    folder = tenant_folder(data_dir, tenant) / doc_id
    if folder.exists():
        remove_folder(data_dir, folder)


def replace_notice(current, data: bytes, ingest_version: str = "") -> dict:
    """What an upload response says when a document of the same name exists (``current``: its DocumentInfo;
    ``ingest_version``: what the pipeline indexes with now — identical bytes indexed by an older chunker or
    embedder are indexed again)."""
    same = hashlib.sha256(data).hexdigest() == current.content_hash
    if same and ingest_version and current.ingest_version != ingest_version:
        notice = (f"{current.filename} is identical to the stored version {current.version}; it is indexed again "
                  f"because the chunker or embedding model changed since (version {current.version + 1}).")
    elif same:
        notice = f"{current.filename} is identical to the stored version {current.version}; nothing changes."
    else:
        notice = (f"{current.filename} replaces the earlier version {current.version} of this document "
                  f"(version {current.version + 1}; the version history is kept).")
    return {"replaces": {"doc_id": current.id, "filename": current.filename, "version": current.version,
                         "identical": same}, "notice": notice}
