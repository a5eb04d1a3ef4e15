"""Original upload files on disk: where they live, and that they go away.

An upload is written to ``data_dir/uploads/<tenant>/<doc_id>/<random>/<name>`` for its ingestion job and
deleted when the job has finished (failed or refused files included), unless ``settings.keep_uploads`` is
set, in which case a successfully ingested file stays until its document is deleted. The folder names
come from a hash of the tenant and the deterministic document id, never from the raw names, so no tenant
or file name can reach outside the uploads folder.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import uuid
from pathlib import Path

from ingest.pipeline import document_id

_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_DOC_ID = re.compile(r"^[0-9a-f]{32}$")


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
