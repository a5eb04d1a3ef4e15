"""Batch document analysis: every question of a YAML checklist asked of every document.

``lexicon batch --docs DIR --questions FILE.yaml --out results.jsonl|.xlsx`` ingests the folder (unchanged
files are skipped by content hash), then asks each (document, question) pair restricted to that document,
with a progress bar. One row per pair: document, question id, question, answer, supported, citations.
Resumable: each row is appended and fsynced as soon as it is known, and a rerun skips the pairs already in
the output (for .xlsx a ``.partial.jsonl`` journal next to it plays that role; the workbook is written at
the end). In-process by default; on Ray when ``settings.ray_address`` is set.
"""
from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path
from typing import Callable, Iterable, Optional

import yaml


def load_questions(path: Path) -> list[dict]:
    """A YAML list of strings or of ``{id, question, mode?}``, or ``{questions: [...]}``."""
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("questions")
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty list of questions (or a 'questions:' list)")
    out, seen = [], set()
    for i, item in enumerate(data, 1):
        if isinstance(item, str):
            item = {"id": f"q{i}", "question": item}
        if not isinstance(item, dict) or not str(item.get("question") or "").strip():
            raise ValueError(f"{path}: question #{i} has no 'question' text")
        qid = str(item.get("id") or f"q{i}")
        if qid in seen:
            raise ValueError(f"{path}: duplicate question id {qid!r}")
        seen.add(qid)
        out.append({"id": qid, "question": str(item["question"]).strip(), "mode": item.get("mode", "rag")})
    return out


def journal_path(out: Path) -> Path:
    return out if out.suffix == ".jsonl" else out.with_name(out.name + ".partial.jsonl")


def read_rows(journal: Path) -> list[dict]:
    """Rows already written; a torn last line (killed mid-write) is dropped and rewritten by the rerun."""
    if not journal.exists():
        return []
    rows = []
    for line in journal.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def row_key(row: dict) -> tuple[str, str]:
    return row["document"], row["question_id"]


def answer_row(service, tenant: str, doc: dict, q: dict) -> dict:
    a = service.ask(tenant, q["question"], mode=q.get("mode", "rag"), doc_ids=[doc["id"]])
    return {"document": doc["filename"], "doc_id": doc["id"], "question_id": q["id"], "question": q["question"],
            "answer": a.answer, "supported": a.supported, "route": a.route,
            "citations": [c.model_dump() for c in a.citations]}


def run_pairs(service, tenant: str, docs: list[dict], questions: list[dict], done: set,
              on_row: Callable[[dict], None]) -> int:
    n = 0
    for doc in docs:
        for q in questions:
            if (doc["filename"], q["id"]) in done:
                continue
            on_row(answer_row(service, tenant, doc, q))
            n += 1
    return n


class Journal:
    """Append-only JSONL; every row is flushed and fsynced before the next pair starts."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = read_rows(path)
        with open(path, "w") as f:  # rewrite without a torn tail
            for r in rows:
                f.write(json.dumps(r) + "\n")
        self.rows = rows
        self.lock = threading.Lock()

    def append(self, row: dict) -> None:
        with self.lock, open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
            self.rows.append(row)


def write_xlsx(path: Path, rows: list[dict]) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "results"
    ws.append(["document", "question_id", "question", "answer", "supported", "citations"])
    for r in rows:
        cites = "\n".join(f"{c['filename']} p.{c.get('page')}: {c['quote']}" for c in r["citations"])
        ws.append([r["document"], r["question_id"], r["question"], r["answer"], r["supported"], cites])
    tmp = path.with_name(path.name + ".tmp")
    wb.save(tmp)
    os.replace(tmp, path)


def _ray_rows(settings, tenant: str, docs: list[dict], questions: list[dict], done: set) -> Iterable[dict]:
    """One Ray task per document; each worker builds its own service against the shared stores."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("settings.ray_address is set but ray is not installed: pip install 'lexicon-rag[ray]'") from exc
    if not settings.qdrant_url or not settings.database_url:
        raise RuntimeError("batch on Ray needs shared stores: set LEXICON_QDRANT_URL and LEXICON_DATABASE_URL")
    ray.init(address=settings.ray_address, ignore_reinit_error=True)

    @ray.remote
    def one_document(settings_json: str, doc: dict, todo: list[dict]) -> list[dict]:
        from app.service import LexiconService
        from app.settings import Settings
        svc = LexiconService(Settings.model_validate_json(settings_json))
        try:
            return [answer_row(svc, tenant, doc, q) for q in todo]
        finally:
            svc.close()

    futures = [one_document.remote(settings.model_dump_json(), d, [q for q in questions if (d["filename"], q["id"]) not in done])
               for d in docs]
    for rows in ray.get(futures):
        yield from rows


def batch_command(settings, docs: Path, questions: Path, out: Path, tenant: str = "demo",
                  service=None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console()
    out = Path(out)
    if out.suffix not in (".jsonl", ".xlsx"):
        console.print(f"[red]--out must end in .jsonl or .xlsx, got {out.name}[/red]")
        return 2
    if not Path(docs).is_dir():
        console.print(f"[red]--docs {docs} is not a folder[/red]")
        return 2
    try:
        qs = load_questions(questions)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    from app.service import LexiconService
    own = service is None
    service = service or LexiconService(settings)
    try:
        job = service.ingest_paths(tenant, [Path(docs)])
        doc_ids = {d["doc_id"] for d in job["documents"] if d.get("doc_id") and d["status"] != "failed"}
        documents = [d for d in service.documents(tenant) if d["id"] in doc_ids]
        for d in job["documents"]:
            if d["status"] == "failed":
                console.print(f"[yellow]skipped {d['filename']}: {d['error']}[/yellow]")
        journal = Journal(journal_path(out))
        done = {row_key(r) for r in journal.rows}
        total = len(documents) * len(qs)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console) as bar:
            task = bar.add_task("questions", total=total, completed=sum(
                (d["filename"], q["id"]) in done for d in documents for q in qs))

            def on_row(row):
                journal.append(row)
                bar.update(task, advance=1, description=f"{row['document']}: {row['question_id']}")

            if settings.ray_address:
                for row in _ray_rows(settings, tenant, documents, qs, done):
                    on_row(row)
            else:
                run_pairs(service, tenant, documents, qs, done, on_row)
        if out.suffix == ".xlsx":
            write_xlsx(out, journal.rows)
        console.print(f"{len(journal.rows)} rows ({total} pairs) in {out}")
        return 0
    finally:
        if own:
            service.close()


class BatchJobs:
    """Batch jobs started over the REST API: run on a background thread, rows kept in memory per job."""

    def __init__(self, service):
        self.service, self.jobs, self.lock = service, {}, threading.Lock()

    def start(self, tenant: str, questions: list[str], doc_ids: Optional[list[str]], mode: str) -> dict:
        docs = [d for d in self.service.documents(tenant) if doc_ids is None or d["id"] in doc_ids]
        missing = set(doc_ids or []) - {d["id"] for d in docs}
        if missing:
            raise KeyError(f"unknown documents: {', '.join(sorted(missing))}")
        qs = [{"id": f"q{i}", "question": q, "mode": mode} for i, q in enumerate(questions, 1)]
        job = {"id": uuid.uuid4().hex, "tenant": tenant, "status": "running", "total": len(docs) * len(qs),
               "done": 0, "rows": [], "error": None}
        with self.lock:
            self.jobs[job["id"]] = job

        def run():
            try:
                run_pairs(self.service, tenant, docs, qs, set(), lambda r: (job["rows"].append(r),
                                                                            job.__setitem__("done", job["done"] + 1)))
                job["status"] = "done"
            except Exception as exc:
                job["status"], job["error"] = "failed", f"{type(exc).__name__}: {exc}"

        threading.Thread(target=run, name="lexicon-batch", daemon=True).start()
        return self.get(tenant, job["id"])

    def get(self, tenant: str, job_id: str) -> dict:
        job = self.jobs.get(job_id)
        if job is None or job["tenant"] != tenant:
            raise KeyError(f"no batch job {job_id}")
        return {k: v for k, v in job.items() if k != "tenant"}
