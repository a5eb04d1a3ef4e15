"""LexiconService: the one facade the REST API, the web UI, the CLI and batch jobs share.

It owns one KnowledgeBase (one per process), the chat model (built on first use, so document and SQL
work never waits for weights) and the agent graph with its checkpointer. Every call takes the tenant;
threads are stored under ``tenant:thread_id`` so one tenant can never read another's conversation.
"""
from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import unicodedata
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator, Optional

from app import uploads
from app.uploads import UploadRefused, UploadTooLarge  # noqa: F401  (the API maps them to their 4xx)
from app.agent.graph import build_graph, make_checkpointer
from app.agent.state import AgentDeps, turn_input
from app.schemas import MAX_QUESTION_CHARS, AgentAnswer

MODES = ("auto", "rag", "long", "bi")


class NotFound(KeyError):
    pass


class Busy(RuntimeError):
    """Too much queued work: the REST API answers 429 with ``Retry-After: retry_after``."""

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message)
        self.retry_after = retry_after


def _jsonable(obj):
    if dataclasses.is_dataclass(obj):
        obj = dataclasses.asdict(obj)
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    return obj


KEY_LINE_ITEMS = ("revenue", "net income", "operating income", "gross profit", "total assets", "net sales",
                  "earnings per share", "total")


def key_rows(rows: list, n: int) -> list:
    """Up to ``n`` (label, value) rows, headline line items first (revenue, net income, ...), then in order."""
    def rank(item):
        i, (label, _value) = item
        low = str(label or "").lower()
        hit = next((k for k, word in enumerate(KEY_LINE_ITEMS) if low.startswith(word)), len(KEY_LINE_ITEMS))
        return hit, i
    numeric = [(i, r) for i, r in enumerate(rows) if len(r) > 1 and isinstance(r[1], (int, float))]
    return [r for _, r in sorted(sorted(numeric, key=rank)[:n])]


def _log_failure(future) -> None:
    """A background ingestion job that crashed leaves its job open (resumable); say why in the log."""
    exc = future.exception()
    if exc is not None:
        logging.getLogger("lexicon.ingest").error("ingestion job failed: %r", exc, exc_info=exc)


class LexiconService:
    def __init__(self, settings, kb=None, chat_model=None):
        from ingest.knowledge_base import KnowledgeBase

        self.settings = settings
        settings.ensure_dirs()
        self.kb = kb or KnowledgeBase(settings)
        self._model = chat_model
        self._model_lock = threading.Lock()
        self.checkpointer, self._close_checkpointer = make_checkpointer(settings.resolved_checkpoint_url)
        self.graph = build_graph(AgentDeps(self.kb, settings, self.chat_model), self.checkpointer)
        self._ingest_pool = ThreadPoolExecutor(1, thread_name_prefix="lexicon-ingest")  # the KB serialises writes
        self._ask_workers: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()  # joined by close()
        self._closed = False

    def resume_ingest_jobs(self) -> None:
        """Queue every ingest job a crash or kill left open, ahead of new uploads (the server calls this once at
        start; not done in __init__ because Ray batch workers build services on the same stores)."""
        self._ingest_pool.submit(self._resume_ingest_jobs).add_done_callback(_log_failure)

    def _resume_ingest_jobs(self) -> None:
        uploads_root = uploads.uploads_root(self.settings.data_dir).resolve()
        for summary in self.kb.resume_unfinished_jobs():
            for r in summary.results:  # a resumed upload's original goes as after a normal upload
                path = Path(r.path).resolve()
                keep = getattr(self.settings, "keep_uploads", False) and r.status != "failed"
                if uploads_root in path.parents and not keep:
                    uploads.remove_folder(self.settings.data_dir, path.parent)
        uploads.prune_empty(self.settings.data_dir)  # folders a kill left between a job and its clean-up

    # ---- model ----------------------------------------------------------------------------------
    def chat_model(self):
        with self._model_lock:
            if self._model is None:
                from app.llm_client import build_chat_model
                self._model = build_chat_model(self.settings)
            return self._model

    @property
    def llm(self):
        """The embedded engine ``LLM`` (for the /v1 routes); raises when the agent uses a remote server."""
        llm = getattr(self.chat_model(), "llm", None)
        if llm is None:
            raise RuntimeError("the agent uses a remote OpenAI-compatible server; it has no embedded engine")
        return llm

    # ---- tenants --------------------------------------------------------------------------------
    def tenant_for_key(self, api_key: Optional[str]) -> Optional[str]:
        if not api_key:
            return None
        return self.settings.api_keys.get(api_key.strip())

    # ---- documents ------------------------------------------------------------------------------
    def ingest_waiting(self) -> int:
        """Upload jobs queued behind the one being ingested (bounded by settings.ingest_max_pending)."""
        return self._ingest_pool._work_queue.qsize()

    def upload(self, tenant: str, filename: str, data: bytes) -> dict:
        if self.ingest_waiting() >= self.settings.ingest_max_pending:
            raise Busy(f"{self.ingest_waiting()} uploads are waiting to be ingested; try again later", 30)
        name = uploads.clean_name(filename)  # the user's name, kept (UploadRefused: reserved or too long)
        uploads.check_bytes(name, data, self.settings.max_file_mb * 2**20)  # empty, too large
        replaces = self._replaces(tenant, name, data)
        path = uploads.store(self.settings.data_dir, tenant, name, data)  # UnsupportedType: magic bytes
        try:
            job_id = self.kb.create_job([path], tenant, [name])
        except BaseException:
            uploads.remove_folder(self.settings.data_dir, path.parent)
            raise
        self._ingest_pool.submit(self._run_upload, job_id, path.parent).add_done_callback(_log_failure)
        return {**self.job(tenant, job_id), **replaces}

    def _replaces(self, tenant: str, name: str, data: bytes) -> dict:
        """Says so when an upload takes the name of an existing document (its earlier versions stay listed)."""
        key = unicodedata.normalize("NFC", name)
        current = next((d for d in self.kb.list_documents(tenant)
                        if unicodedata.normalize("NFC", d.filename) == key and d.version > 0), None)
        return uploads.replace_notice(current, data, self.kb.pipeline.ingest_version()) if current else {}

    def _run_upload(self, job_id: str, folder: Path) -> None:
        """Ingest, then delete the original file (kept only with ``keep_uploads`` and a successful ingest).

        A job that crashed keeps its file so that it can be resumed."""
        summary = self.kb.run_job(job_id)
        if not (self.settings.keep_uploads and all(r.status != "failed" for r in summary.results)):
            uploads.remove_folder(self.settings.data_dir, folder)

    def ingest_paths(self, tenant: str, paths: list[Path]) -> dict:
        summary = self.kb.ingest_paths(paths, tenant)
        return self.job(tenant, summary.job_id)

    def job(self, tenant: str, job_id: str) -> dict:
        info = self.kb.get_job(job_id)
        if info is None or info.tenant != tenant:
            raise NotFound(f"no job {job_id}")
        out = _jsonable(info)
        out["job_id"] = info.id
        out["documents"] = out.pop("items")
        return out

    def jobs(self, tenant: str) -> list[dict]:
        return [self.job(tenant, j.id) for j in self.kb.list_jobs(tenant)]

    def documents(self, tenant: str) -> list[dict]:
        return [_jsonable(d) for d in self.kb.list_documents(tenant)]

    def delete_document(self, tenant: str, doc_id: str) -> bool:
        """Deletes the document's chunks, vectors, tables and versions, any kept original file, and the
        tenant's engine snapshots (dossiers may hold the document's text)."""
        if not self.kb.delete_document(tenant, doc_id):
            return False
        uploads.remove_document_files(self.settings.data_dir, tenant, doc_id)
        self.drop_snapshots(tenant)
        return True

    def document_versions(self, tenant: str, doc_id: str) -> list[dict]:
        """The version history of a document (raises NotFound for another tenant's or an unknown id)."""
        versions = self.kb.document_versions(tenant, doc_id)
        if versions is None:
            raise NotFound(f"no document {doc_id}")
        return [_jsonable(v) for v in versions]

    def drop_snapshots(self, tenant: str) -> int:
        """Drop every engine snapshot of ``tenant`` (nothing to do before the model is loaded)."""
        from engine.snapshot import split_owned

        llm = getattr(self._model, "llm", None) if self._model is not None else None
        if llm is None:
            return 0
        keys = [k for k in llm.stats().get("snapshot_names", []) if (split_owned(k) or ("",))[0] == tenant]
        return sum(bool(llm.drop_snapshot(k)) for k in keys)

    # ---- the agent ------------------------------------------------------------------------------
    def _config(self, tenant: str, thread_id: str, cancel: Optional[threading.Event] = None) -> dict:
        # scratch: this run's values a checkpointer does not keep (the frame's BI plan, the time budget)
        return {"configurable": {"thread_id": f"{tenant}:{thread_id}", "cancel": cancel, "scratch": {}}}

    def validate_question(self, question: str, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not question or not question.strip():
            raise ValueError("the question is empty")
        if len(question) > MAX_QUESTION_CHARS:
            raise ValueError(f"the question is {len(question):,} characters long; the limit is "
                             f"{MAX_QUESTION_CHARS:,}")

    def ask(self, tenant: str, question: str, mode: str = "auto", thread_id: Optional[str] = None,
            doc_ids: Optional[list[str]] = None) -> AgentAnswer:
        final = None
        for event in self.ask_stream(tenant, question, mode, thread_id, doc_ids):
            if event["type"] == "final":
                final = event["answer"]
            elif event["type"] == "error":
                raise RuntimeError(event["message"])
        return AgentAnswer(**final)

    def ask_stream(self, tenant: str, question: str, mode: str = "auto", thread_id: Optional[str] = None,
                   doc_ids: Optional[list[str]] = None) -> Iterator[dict]:
        """``{"type": "token", "text"}`` events while the answer is written, then ``{"type": "final"}``.

        The graph runs on a worker thread; closing this iterator early cancels the engine request.
        """
        self.validate_question(question, mode)
        thread_id = thread_id or uuid.uuid4().hex
        cancel = threading.Event()
        events: queue.Queue = queue.Queue()
        config = self._config(tenant, thread_id, cancel)

        def run():
            try:
                # one checkpoint per turn, written when the graph exits (a node-by-node trail cost ~100 KB a
                # question on disk; a run cut short is asked again, not resumed)
                for chunk in self.graph.stream(turn_input(tenant, question.strip(), mode, doc_ids), config,
                                               stream_mode="custom", durability="exit"):
                    if cancel.is_set():
                        return
                    events.put(chunk)
                state = self.graph.get_state(config).values
                answer = dict(state["messages"][-1]["answer"], thread_id=thread_id)
                events.put({"type": "final", "answer": AgentAnswer(**answer).model_dump()})
            except Exception as exc:  # reported to the caller, never swallowed
                events.put({"type": "error", "message": f"{type(exc).__name__}: {exc}"})
            finally:
                events.put(None)

        worker = threading.Thread(target=run, name="lexicon-ask", daemon=True)
        self._ask_workers.add(worker)
        worker.start()
        try:
            while True:
                event = events.get()
                if event is None:
                    return
                yield event
        finally:
            cancel.set()

    def thread_history(self, tenant: str, thread_id: str) -> list[dict]:
        state = self.graph.get_state(self._config(tenant, thread_id))
        if not state.values:
            raise NotFound(f"no thread {thread_id}")
        return [dict(m) for m in state.values.get("messages", [])]

    def threads(self, tenant: str) -> list[str]:
        prefix, seen = f"{tenant}:", []
        for cp in self.checkpointer.list(None):
            tid = cp.config["configurable"]["thread_id"]
            if tid.startswith(prefix) and tid[len(prefix):] not in seen:
                seen.append(tid[len(prefix):])
        return seen

    # ---- dashboards -----------------------------------------------------------------------------
    def kpis(self, tenant: str) -> list[dict]:
        from app.agent.bi.planner import column_period

        out = []
        for t in self.kb.list_tables(tenant):
            text = [c.name for c in t.columns if c.sql_type.upper() == "TEXT"]
            periods = [(c.name, p) for c in t.columns for p in [column_period(c.name, c.label)] if p]
            if not text or not periods:
                out.extend(self._long_table_kpis(tenant, t))
                continue
            latest = max(periods, key=lambda cp: (cp[1].year, cp[1].fy, cp[1].quarter or 0))
            res = self.kb.run_sql(tenant, f'SELECT "{text[0]}", "{latest[0]}" FROM "{t.sql_name}" ORDER BY row_num')
            for label, value in key_rows(res.rows, 4):
                if isinstance(value, (int, float)):
                    out.append({"label": f"{label} ({latest[1].label()})", "value": value, "unit": t.unit,
                                "source": f"{t.filename}, page {t.page}"})
        return out[:8]

    def _long_table_kpis(self, tenant: str, t) -> list[dict]:
        """A period column and metric columns (``year | revenue``): the latest period's metrics."""
        from app.agent.bi.planner import PERIOD_COLUMN_NAMES
        from app.agent.nodes_bi import _fmt

        period = next((c for c in t.columns if c.name.lower() in PERIOD_COLUMN_NAMES), None)
        metrics = [c for c in t.columns if c is not period and c.sql_type.upper() != "TEXT"]
        if period is None or not metrics:
            return []
        res = self.kb.run_sql(tenant, f'SELECT "{period.name}", ' + ", ".join(f'"{c.name}"' for c in metrics)
                              + f' FROM "{t.sql_name}" ORDER BY "{period.name}" DESC LIMIT 1')
        if not res.rows:
            return []
        latest = res.rows[0]
        return [{"label": f"{c.label or c.name} ({_fmt(latest[0])})", "value": v, "unit": c.unit or t.unit,
                 "source": f"{t.filename}, page {t.page}"}
                for c, v in zip(metrics, latest[1:]) if isinstance(v, (int, float))]

    def engine_stats(self, tenant: Optional[str] = None) -> dict:
        """Engine-wide figures; snapshot names and counts only of ``tenant``'s own snapshots (none without one)."""
        from engine.snapshot import owner_view

        if self._model is None:
            return {"model": "(not loaded yet)", "loaded": False}
        return owner_view(self._model.stats(), tenant)

    def plan_view(self) -> str:
        import contextlib
        import io

        from engine.planner import plan_command

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            cap = self.settings.engine_memory_cap_gib
            if cap is None:  # "auto" on CUDA: the device's memory
                import torch
                cap = torch.cuda.mem_get_info()[1] / 1024 ** 3
            plan_command("smollm2-135m", "bf16", "bf16", cap, self.settings.engine_max_model_len,
                         device=self.settings.engine_device)
        return buf.getvalue()

    def close(self) -> None:
        """Close in order: ingest jobs finish, the engine stops (answers in flight are cancelled) and its
        background decode compile is stopped and joined, the ask workers are joined, then the checkpointer and
        the stores. No daemon thread of ours is left inside native code when the interpreter finalizes (that
        aborted with exit 134; ``app.process_exit``)."""
        if self._closed:
            return
        self._closed = True
        from app import process_exit

        self._ingest_pool.shutdown(wait=True)
        if self._model is not None:
            compiling = process_exit.compile_thread(self._model)
            self._model.close()  # cancels what the ask workers wait on
            process_exit.stop_thread(compiling)  # of no use once the engine is closed
        for worker in list(self._ask_workers):
            worker.join(timeout=30)
        self._close_checkpointer()
        self.kb.close()
        if process_exit.lingering():
            process_exit.join_at_exit()
