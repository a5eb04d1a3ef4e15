"""Resumable ingestion jobs.

A job is its list of files, committed before any work starts; each file's outcome is committed as soon
as it is known. A crashed or killed run leaves the job 'running' with some items still 'pending';
calling ``ingest_paths`` again with the same files (or ``run_job(job_id)``) picks that job up and
continues with the pending items only; ``KnowledgeBase.resume_unfinished_jobs()`` (run at service start and
by ``lexicon ingest --resume``) does so for every open job. Work already committed is never redone: a file whose document
was committed just before the crash is recognised by its content hash and reported 'unchanged'.
"""
from __future__ import annotations

import hashlib
import unicodedata
import uuid
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, col, select

from ingest.models import Job, JobItem, utcnow
from ingest.types import JobInfo, JobItemInfo

OPEN_STATUSES = ("pending", "running")


def expand_paths(paths: list[Path]) -> list[tuple[Path, str]]:
    """Files to ingest with the filename each is stored under (folders: path relative to the folder)."""
    out: list[tuple[Path, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                # unknown types are kept: they fail with "unsupported file type" instead of vanishing
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts):
                    out.append((f, f.relative_to(p).as_posix()))
        else:
            out.append((p, p.name))  # a missing file becomes a failed item with a clear error
    return out


def job_signature(tenant: str, items: list[tuple[Path, str]]) -> str:
    h = hashlib.sha256(tenant.encode())
    for path, name in items:
        h.update(f"\x00{Path(path).resolve()}\x01{name}".encode())
    return h.hexdigest()


def stored_name(name: str) -> str:
    """The name a document is stored under: as given, in Unicode NFC, so that the same name typed or sent in
    another normalisation (macOS file systems give NFD) is the same document and replaces its earlier version."""
    return unicodedata.normalize("NFC", name)


def create_or_resume(engine: sa.Engine, tenant: str, items: list[tuple[Path, str]]) -> str:
    items = [(path, stored_name(name)) for path, name in items]
    sig = job_signature(tenant, items)
    with Session(engine) as s:
        open_job = s.exec(select(Job).where(Job.tenant == tenant, Job.signature == sig,
                                            col(Job.status).in_(OPEN_STATUSES))
                          .order_by(col(Job.created_at).desc())).first()
        if open_job is not None:
            return open_job.id
        job = Job(id=uuid.uuid4().hex, tenant=tenant, signature=sig, total=len(items))
        s.add(job)
        s.add_all([JobItem(job_id=job.id, seq=i, path=str(p), filename=name) for i, (p, name) in enumerate(items)])
        s.commit()
        return job.id


def pending_items(engine: sa.Engine, job_id: str) -> list[JobItem]:
    with Session(engine) as s:
        return list(s.exec(select(JobItem).where(JobItem.job_id == job_id, JobItem.status == "pending")
                           .order_by(JobItem.seq)).all())


def all_items(engine: sa.Engine, job_id: str) -> list[JobItem]:
    with Session(engine) as s:
        return list(s.exec(select(JobItem).where(JobItem.job_id == job_id).order_by(JobItem.seq)).all())


def set_job_status(engine: sa.Engine, job_id: str, status: str) -> None:
    with Session(engine) as s:
        job = s.get(Job, job_id)
        job.status, job.updated_at = status, utcnow()
        if status == "done":
            job.finished_at = utcnow()
        s.add(job)
        s.commit()


def record_item(engine: sa.Engine, item_id: int, result) -> None:
    with Session(engine) as s:
        item = s.get(JobItem, item_id)
        item.status, item.error, item.doc_id = result.status, result.error, result.doc_id
        item.pages, item.chunks, item.tables = result.pages, result.chunks, result.tables
        s.add(item)
        job = s.get(Job, item.job_id)
        job.updated_at = utcnow()
        s.add(job)
        s.commit()


def job_info(engine: sa.Engine, job_id: str) -> JobInfo | None:
    with Session(engine) as s:
        job = s.get(Job, job_id)
        if job is None:
            return None
        items = s.exec(select(JobItem).where(JobItem.job_id == job_id).order_by(JobItem.seq)).all()
        infos = [JobItemInfo(i.seq, i.filename, i.status, i.error, i.doc_id, i.pages, i.chunks, i.tables) for i in items]
        return JobInfo(job.id, job.tenant, job.status, job.total, sum(i.status != "pending" for i in items),
                       sum(i.status == "failed" for i in items), infos, job.created_at, job.finished_at)


def open_job_ids(engine: sa.Engine) -> list[str]:
    """Jobs a crash left pending or running, every tenant, oldest first."""
    with Session(engine) as s:
        return list(s.exec(select(Job.id).where(col(Job.status).in_(OPEN_STATUSES))
                           .order_by(col(Job.created_at))).all())


def list_job_ids(engine: sa.Engine, tenant: str) -> list[str]:
    with Session(engine) as s:
        return list(s.exec(select(Job.id).where(Job.tenant == tenant).order_by(col(Job.created_at).desc())).all())
