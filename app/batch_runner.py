"""Run a persisted batch job's pending rows: in this process, or on Ray when ``settings.ray_address`` is set.

A question that fails (too long, a bad mode, an agent error) is recorded on its row with the error and the
job goes on; only a runner failure (Ray unreachable, the process killed) leaves the job open, to be resumed.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

from app import batch_store as store

log = logging.getLogger("lexicon.batch")


def pair_of(row) -> dict:
    """What a worker needs to answer one row (plain data, so it can travel to a Ray worker)."""
    return {"row_id": row.id, "doc_id": row.doc_id, "filename": row.filename, "question": row.question,
            "mode": row.mode}


def answer_pair(service, tenant: str, pair: dict) -> dict:
    """One (document, question) answered from that document only; an exception becomes the row's error."""
    try:
        a = service.ask(tenant, pair["question"], mode=pair.get("mode") or "rag", doc_ids=[pair["doc_id"]])
        return {"status": "done", "answer": a.answer, "supported": a.supported, "route": a.route,
                "citations": [c.model_dump() for c in a.citations]}
    except Exception as exc:  # recorded on the row; the other questions go on
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}


def run_job(service, job_id: str, on_row: Optional[Callable[[dict], None]] = None,
            should_stop: Callable[[], bool] = lambda: False) -> dict:
    """Answer every pending row of ``job_id`` in this process, committing each as it is known; returns the
    job dict (without rows). ``app.batch_ray.run_job_on_ray`` is the same on Ray workers."""
    engine = service.kb.engine
    job = store.get_job(engine, job_id)
    rows = store.pending_rows(engine, job_id)
    store.set_status(engine, job_id, "running", runner="in-process")
    try:
        for row in rows:
            if should_stop():
                return store.job_dict(engine, job_id, rows=False)  # left running: resumed at the next start
            result = answer_pair(service, job.tenant, pair_of(row))
            store.record(engine, row.id, result)
            if on_row is not None:
                on_row({**pair_of(row), **result})
    except Exception as exc:
        log.exception("batch job %s stopped", job_id)
        store.set_status(engine, job_id, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    store.set_status(engine, job_id, "done")
    return store.job_dict(engine, job_id, rows=False)
