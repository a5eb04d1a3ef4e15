"""Batch jobs persisted in the metadata database (SQLite or Postgres, the KnowledgeBase's engine).

A job is its (document, question) rows, written before any work starts; each row's answer (or its error) is
committed as soon as it is known, so a killed run loses at most the pair in flight and a restarted service
(or a rerun of ``lexicon batch``) continues with the pending rows. A row is keyed on the document's content
hash: when a document changed since its row was answered, refreshing the job puts the row back to pending.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Optional

import sqlalchemy as sa
from sqlmodel import Field, Session, SQLModel, col, select

OPEN = ("pending", "running")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class BatchJob(SQLModel, table=True):
    __tablename__ = "lx_batch_jobs"
    id: str = Field(primary_key=True, max_length=40)
    tenant: str = Field(index=True, max_length=128)
    key: str = Field(default="", index=True, max_length=128)  # the caller's name for the job (rerun = same job)
    status: str = Field(default="pending", max_length=16)  # pending | running | done | failed
    mode: str = Field(default="rag", max_length=8)
    questions_json: str = "[]"  # [{"id", "question", "mode"}]
    runner: str = Field(default="", max_length=200)  # in-process | ray (address) and why
    error: Optional[str] = None  # a job-level failure (the runner died); per-question errors live on rows
    total: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None


class BatchRow(SQLModel, table=True):
    __tablename__ = "lx_batch_rows"
    id: Optional[int] = Field(default=None, primary_key=True)
    job_id: str = Field(index=True, max_length=40)
    seq: int
    doc_id: str = Field(max_length=40)
    filename: str = Field(max_length=1024)
    content_hash: str = Field(default="", max_length=64)  # the document version the answer belongs to
    question_id: str = Field(max_length=128)
    question: str
    mode: str = Field(default="rag", max_length=8)
    status: str = Field(default="pending", max_length=16)  # pending | done | failed
    answer: Optional[str] = None
    supported: Optional[bool] = None
    route: Optional[str] = Field(default=None, max_length=16)
    citations_json: str = "[]"
    error: Optional[str] = None
    updated_at: datetime = Field(default_factory=utcnow)


TABLES = [BatchJob.__table__, BatchRow.__table__]


def ensure_tables(engine: sa.Engine) -> None:
    SQLModel.metadata.create_all(engine, tables=TABLES)


def _pairs(docs: list[dict], questions: list[dict]) -> list[tuple[dict, dict]]:
    return [(d, q) for d in docs for q in questions]


def create_job(engine: sa.Engine, tenant: str, docs: list[dict], questions: list[dict], mode: str = "rag",
               key: str = "") -> str:
    """A new job over ``docs`` x ``questions``, or (same tenant and non-empty ``key``) the existing one, refreshed."""
    with Session(engine) as s:
        if key:
            old = s.exec(select(BatchJob).where(BatchJob.tenant == tenant, BatchJob.key == key)
                         .order_by(col(BatchJob.created_at).desc())).first()
            if old is not None:
                refresh(s, old, docs, questions)
                return old.id
        job = BatchJob(id=uuid.uuid4().hex, tenant=tenant, key=key, mode=mode,
                       questions_json=json.dumps(questions), total=len(docs) * len(questions))
        s.add(job)
        s.add_all([_new_row(job.id, i, d, q) for i, (d, q) in enumerate(_pairs(docs, questions))])
        s.commit()
        return job.id


def _new_row(job_id: str, seq: int, doc: dict, q: dict) -> BatchRow:
    return BatchRow(job_id=job_id, seq=seq, doc_id=doc["id"], filename=doc["filename"],
                    content_hash=doc.get("content_hash") or "", question_id=q["id"], question=q["question"],
                    mode=q.get("mode") or "rag")


def refresh(s: Session, job: BatchJob, docs: list[dict], questions: list[dict]) -> None:
    """Rows for the current documents and questions: kept when the document and question are unchanged,
    back to pending when the document's content hash (or the question text) changed, added when new,
    dropped when their document or question is gone. The job reopens if anything is left to do."""
    rows = {(r.doc_id, r.question_id): r for r in s.exec(select(BatchRow).where(BatchRow.job_id == job.id)).all()}
    wanted = _pairs(docs, questions)
    keys = set()
    for seq, (d, q) in enumerate(wanted):
        key = (d["id"], q["id"])
        keys.add(key)
        row = rows.get(key)
        if row is None:
            s.add(_new_row(job.id, seq, d, q))
            continue
        changed = row.content_hash != (d.get("content_hash") or "") or row.question != q["question"]
        row.seq, row.filename = seq, d["filename"]
        if changed or row.status == "failed":
            row.content_hash, row.question, row.mode = d.get("content_hash") or "", q["question"], q.get("mode") or "rag"
            row.status, row.answer, row.supported, row.route, row.citations_json, row.error = (
                "pending", None, None, None, "[]", None)
            row.updated_at = utcnow()
        s.add(row)
    for key, row in rows.items():
        if key not in keys:
            s.delete(row)
    job.total, job.questions_json, job.updated_at = len(wanted), json.dumps(questions), utcnow()
    s.add(job)
    s.flush()
    if s.exec(select(BatchRow.id).where(BatchRow.job_id == job.id, BatchRow.status == "pending")).first():
        job.status, job.finished_at, job.error = "pending", None, None
    s.commit()


def pending_rows(engine: sa.Engine, job_id: str) -> list[BatchRow]:
    with Session(engine) as s:
        return list(s.exec(select(BatchRow).where(BatchRow.job_id == job_id, BatchRow.status == "pending")
                           .order_by(BatchRow.seq)).all())


def record(engine: sa.Engine, row_id: int, result: dict) -> None:
    """Commit one pair's outcome: ``{"status": "done"|"failed", answer, supported, route, citations, error}``."""
    with Session(engine) as s:
        row = s.get(BatchRow, row_id)
        if row is None:  # the job was refreshed meanwhile and the row dropped
            return
        row.status, row.error = result["status"], result.get("error")
        row.answer, row.supported, row.route = result.get("answer"), result.get("supported"), result.get("route")
        row.citations_json = json.dumps(result.get("citations") or [])
        row.updated_at = utcnow()
        s.add(row)
        s.commit()


def set_status(engine: sa.Engine, job_id: str, status: str, error: Optional[str] = None, runner: str = "") -> None:
    with Session(engine) as s:
        job = s.get(BatchJob, job_id)
        job.status, job.error, job.updated_at = status, error, utcnow()
        if runner:
            job.runner = runner
        if status in ("done", "failed"):
            job.finished_at = utcnow()
        s.add(job)
        s.commit()


def get_job(engine: sa.Engine, job_id: str) -> Optional[BatchJob]:
    with Session(engine) as s:
        return s.get(BatchJob, job_id)


def open_job_ids(engine: sa.Engine, tenant: Optional[str] = None) -> list[str]:
    with Session(engine) as s:
        q = select(BatchJob.id).where(col(BatchJob.status).in_(OPEN)).order_by(BatchJob.created_at)
        if tenant is not None:
            q = q.where(BatchJob.tenant == tenant)
        return list(s.exec(q).all())


def row_dict(r: BatchRow) -> dict:
    return {"seq": r.seq, "document": r.filename, "doc_id": r.doc_id, "content_hash": r.content_hash,
            "question_id": r.question_id, "question": r.question, "mode": r.mode, "status": r.status,
            "answer": r.answer, "supported": r.supported, "route": r.route,
            "citations": json.loads(r.citations_json or "[]"), "error": r.error,
            "updated_at": r.updated_at.isoformat() if r.updated_at else None}


def job_dict(engine: sa.Engine, job_id: str, rows: bool = True) -> dict:
    with Session(engine) as s:
        job = s.get(BatchJob, job_id)
        all_rows = list(s.exec(select(BatchRow).where(BatchRow.job_id == job_id).order_by(BatchRow.seq)).all())
    counts = {k: sum(r.status == k for r in all_rows) for k in ("pending", "done", "failed")}
    out = {"id": job.id, "job_id": job.id, "key": job.key, "status": job.status, "mode": job.mode,
           "runner": job.runner, "error": job.error, "total": len(all_rows), "done": counts["done"],
           "failed": counts["failed"], "pending": counts["pending"],
           "progress": round((counts["done"] + counts["failed"]) / len(all_rows), 4) if all_rows else 1.0,
           "questions": json.loads(job.questions_json),
           "created_at": job.created_at.isoformat(), "finished_at": job.finished_at.isoformat() if job.finished_at else None}
    if rows:
        out["rows"] = [row_dict(r) for r in all_rows]
    return out


def list_jobs(engine: sa.Engine, tenant: str) -> list[str]:
    with Session(engine) as s:
        return list(s.exec(select(BatchJob.id).where(BatchJob.tenant == tenant)
                           .order_by(col(BatchJob.created_at).desc())).all())
