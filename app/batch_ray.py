"""A batch job's pending rows answered by Ray actors; the driver commits each row as its answer comes back.

Each actor builds its own ``LexiconService`` from the same settings (same database, vector store and model),
so an answer on Ray is the answer in-process. With shared stores (``LEXICON_QDRANT_URL``) there is one actor
per ``batch_ray_workers``; with the embedded vector store (one process at a time) there is exactly one, and
the caller must not hold the store meanwhile (``lexicon batch`` closes its own service first).
``settings.ray_address``: ``local`` starts a Ray runtime in this process; anything else is passed to
``ray.init(address=...)`` (``auto``, ``ray://head:10001``). A runtime that is already initialised is used.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Optional

import sqlalchemy as sa

from app import batch_store as store
from app.batch_runner import answer_pair, pair_of


class RayUnavailable(RuntimeError):
    pass


def init_ray(settings):
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("LEXICON_RAY_ADDRESS is set but ray is not installed: pip install 'lexicon-rag[ray]'") from exc
    if not ray.is_initialized():
        address = settings.ray_address
        kwargs = {"include_dashboard": False, "ignore_reinit_error": True, "log_to_driver": False}
        try:
            ray.init(**kwargs) if address == "local" else ray.init(address=address, **kwargs)
        except Exception as exc:
            raise RayUnavailable(f"cannot reach Ray at {address!r}: {exc}") from exc
    return ray


class _Worker:
    """One LexiconService in a Ray worker process."""

    def __init__(self, settings_json: str):
        from app.service import LexiconService
        from app.settings import Settings

        self.service = LexiconService(Settings.model_validate_json(settings_json))

    def answer(self, tenant: str, pair: dict) -> dict:
        return answer_pair(self.service, tenant, pair)

    def close(self) -> bool:
        self.service.close()
        return True


def worker_env() -> dict:
    """The driver's thread count, so the workers' kernels add up in the same order (same greedy tokens)."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else (os.cpu_count() or 1)
    return {"OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def run_job_on_ray(settings, engine: sa.Engine, job_id: str, on_row: Optional[Callable[[dict], None]] = None) -> dict:
    """Answer the job's pending rows on Ray; rows are committed here (through ``engine``) as they finish."""
    ray = init_ray(settings)
    job = store.get_job(engine, job_id)
    rows = store.pending_rows(engine, job_id)
    shared = bool(settings.qdrant_url)
    n_workers = max(1, min(settings.batch_ray_workers if shared else 1, len(rows) or 1))
    runner = f"ray {settings.ray_address} ({n_workers} worker{'s' if n_workers > 1 else ''})"
    store.set_status(engine, job_id, "running", runner=runner)
    portable = settings.model_copy(update={"data_dir": settings.data_dir.resolve()}).model_dump_json()
    actor_cls = ray.remote(num_cpus=1, runtime_env={"env_vars": worker_env()})(_Worker)
    workers = [actor_cls.remote(portable) for _ in range(n_workers)]
    try:
        pending = {}
        for i, row in enumerate(rows):
            pair = pair_of(row)
            pending[workers[i % n_workers].answer.remote(job.tenant, pair)] = pair
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                pair = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # the worker died: this row failed, the others go on
                    result = {"status": "failed", "error": f"ray worker: {type(exc).__name__}: {exc}"[:2000]}
                store.record(engine, pair["row_id"], result)
                if on_row is not None:
                    on_row({**pair, **result})
        ray.get([w.close.remote() for w in workers])
    except Exception as exc:
        store.set_status(engine, job_id, "failed", error=f"{type(exc).__name__}: {exc}", runner=runner)
        raise
    finally:
        for w in workers:
            ray.kill(w)
    store.set_status(engine, job_id, "done", runner=runner)
    return store.job_dict(engine, job_id, rows=False)
