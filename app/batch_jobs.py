"""Batch jobs of the server (REST): persisted, run one at a time on a background thread, resumed at start.

With ``settings.ray_address`` and shared stores (``LEXICON_QDRANT_URL``) the rows go to Ray workers; with
the embedded vector store this server process owns the store, so the job runs here and says why.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from app import batch_store as store
from app.batch_runner import run_job
from app.batch_xlsx import xlsx_bytes
from app.service import Busy, NotFound

log = logging.getLogger("lexicon.batch")
NO_RAY_HERE = "in-process (Ray needs LEXICON_QDRANT_URL: this server owns the embedded vector store)"


class BatchJobs:
    def __init__(self, service):
        self.service = service
        self.engine = service.kb.engine
        store.ensure_tables(self.engine)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="lexicon-batch")
        self._queued: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()

    # ---- starting and running -------------------------------------------------------------------
    def start(self, tenant: str, questions: list[dict], doc_ids: Optional[list[str]], mode: str = "rag",
              key: str = "") -> dict:
        """Questions are ``{id, question, mode}`` already validated (length, mode) by the API model."""
        if len(self._queued) >= self.service.settings.batch_max_open:
            raise Busy(f"{len(self._queued)} batch jobs are queued or running; try again later", 60)
        docs = [d for d in self.service.documents(tenant) if doc_ids is None or d["id"] in doc_ids]
        missing = set(doc_ids or []) - {d["id"] for d in docs}
        if missing:
            raise NotFound(f"unknown documents: {', '.join(sorted(missing))}")
        docs = [d for d in docs if d.get("status", "ingested") != "failed"]
        job_id = store.create_job(self.engine, tenant, docs, questions, mode, key)
        self.submit(job_id)
        return self.get(tenant, job_id, rows=False)

    def submit(self, job_id: str) -> None:
        with self._lock:
            if job_id in self._queued:
                return
            job = store.get_job(self.engine, job_id)
            if job is None or job.status not in store.OPEN:
                return
            self._queued.add(job_id)
        self._pool.submit(self._run, job_id)

    def _run(self, job_id: str) -> None:
        try:
            settings = self.service.settings
            if settings.ray_address and settings.qdrant_url:
                from app.batch_ray import run_job_on_ray
                run_job_on_ray(settings, self.engine, job_id)
            else:
                run_job(self.service, job_id, should_stop=self._stop.is_set)
                if settings.ray_address:
                    store.set_status(self.engine, job_id, store.get_job(self.engine, job_id).status,
                                     runner=NO_RAY_HERE)
        except Exception:
            log.exception("batch job %s failed", job_id)
        finally:
            with self._lock:
                self._queued.discard(job_id)

    def resume(self) -> list[str]:
        """Queue every unfinished job (after a crash or restart); returns their ids."""
        ids = store.open_job_ids(self.engine)
        for job_id in ids:
            self.submit(job_id)
        if ids:
            log.info("resuming %d batch job(s)", len(ids))
        return ids

    def close(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    # ---- reading --------------------------------------------------------------------------------
    def _own(self, tenant: str, job_id: str):
        job = store.get_job(self.engine, job_id)
        if job is None or job.tenant != tenant:
            raise NotFound(f"no batch job {job_id}")
        return job

    def get(self, tenant: str, job_id: str, rows: bool = True) -> dict:
        self._own(tenant, job_id)
        return store.job_dict(self.engine, job_id, rows=rows)

    def list(self, tenant: str) -> list[dict]:
        return [store.job_dict(self.engine, j, rows=False) for j in store.list_jobs(self.engine, tenant)]

    def xlsx(self, tenant: str, job_id: str) -> bytes:
        job = self.get(tenant, job_id)
        return xlsx_bytes(job["rows"], job)
