"""``lexicon batch``: every question of a YAML checklist asked of every document of a folder.

``lexicon batch --docs DIR --questions FILE.yaml --out results.jsonl|.xlsx`` ingests the folder (unchanged
files are skipped by content hash), then asks each (document, question) pair restricted to that document,
with a progress bar. The job lives in the database (``app.batch_store``): each answer is committed as soon as
it is known, so a rerun of the same command (same folder and output) continues where a killed run stopped,
and recomputes only the rows whose document changed (rows are keyed on the document's content hash).
A question that fails is recorded on its row and the job goes on. The output is written atomically (a
formatted workbook for ``.xlsx``): with the rows answered so far every few seconds while the job runs, so a
run that dies leaves them, then complete at the end; nothing else is left next to it. In-process by default; on
Ray when ``settings.ray_address`` is set (``app.batch_ray``). With a server running, ``app.cli`` sends the job
to its REST API instead (``app.remote``).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
import yaml

from app import batch_store as store
from app.batch_runner import run_job
from app.batch_xlsx import write_atomic, xlsx_bytes
from app.schemas import MAX_QUESTION_CHARS

OUT_SUFFIXES = (".jsonl", ".xlsx")


def load_questions(path: Path) -> list[dict]:
    """A YAML list of strings or of ``{id, question, mode?, kind?}``, or ``{questions: [...]}``; an entry that
    names a clause ``kind`` may leave out its question (``app.agent.clauses.checklist``)."""
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("questions")
    if not isinstance(data, list) or not data:
        raise ValueError(f"{path}: expected a non-empty list of questions (or a 'questions:' list)")
    out, seen = [], set()
    for i, item in enumerate(data, 1):
        if isinstance(item, str):
            item = {"id": f"q{i}", "question": item}
        if isinstance(item, dict) and item.get("kind") and not item.get("question"):
            from app.agent.clauses.checklist import kind_question
            item = {**item, "question": kind_question(str(item["kind"]))}
        if not isinstance(item, dict) or not str(item.get("question") or "").strip():
            raise ValueError(f"{path}: question #{i} has no 'question' text")
        qid = str(item.get("id") or f"q{i}")
        if qid in seen:
            raise ValueError(f"{path}: duplicate question id {qid!r}")
        text = str(item["question"]).strip()
        if len(text) > MAX_QUESTION_CHARS:
            raise ValueError(f"{path}: question {qid!r} is {len(text):,} characters long; the limit is "
                             f"{MAX_QUESTION_CHARS:,} (as for `lexicon ask` and /api/ask)")
        seen.add(qid)
        out.append({"id": qid, "question": text, "mode": item.get("mode", "rag"),
                    **({"kind": str(item["kind"])} if item.get("kind") else {})})
    return out


def job_key(docs: Path, out: Path) -> str:
    """The same folder into the same output file is the same job (a rerun resumes or refreshes it)."""
    return "cli:" + hashlib.sha256(f"{Path(docs).resolve()}\x00{Path(out).resolve()}".encode()).hexdigest()[:40]


def write_output(out: Path, job: dict, answered_only: bool = False) -> None:
    """The job's rows into ``out`` (atomically); ``answered_only``: the rows answered so far (partial output)."""
    rows = [r for r in job["rows"] if r.get("status") != "pending"] if answered_only else job["rows"]
    if out.suffix == ".xlsx":
        write_atomic(out, xlsx_bytes(rows, job))
    else:
        write_atomic(out, "".join(json.dumps(r) + "\n" for r in rows).encode())


def check_args(docs: Path, questions: Path, out: Path) -> tuple[list[dict] | None, str | None]:
    """(questions, None) or (None, the message to print)."""
    if Path(out).suffix not in OUT_SUFFIXES:
        return None, f"--out must end in .jsonl or .xlsx, got {Path(out).name}"
    if not Path(docs).is_dir():
        return None, f"--docs {docs} is not a folder"
    try:
        return load_questions(questions), None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return None, str(exc)


class PartialOutput:
    """Writes the rows answered so far into the output file while the job runs (at most every ``every_s``), so
    a run that dies (the process killed, the server gone) leaves what it had; the complete file replaces it."""

    def __init__(self, out: Path, every_s: float = 5.0):
        self.out, self.every_s, self.last, self.written = Path(out), every_s, float("-inf"), 0

    def due(self, answered: int) -> bool:
        return answered > self.written and time.monotonic() - self.last >= self.every_s

    def write(self, job: dict) -> None:
        write_output(self.out, job, answered_only=True)
        self.last, self.written = time.monotonic(), job["done"] + job["failed"]


def progress_bar(console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)


def batch_command(settings, docs: Path, questions: Path, out: Path, tenant: str = "demo", service=None) -> int:
    """Run the batch in this process (``service`` given, or one opened here). Returns the exit code."""
    from rich.console import Console

    console = Console()
    out = Path(out)
    qs, problem = check_args(docs, questions, out)
    if problem:
        console.print(f"[red]{problem}[/red]", markup=True, highlight=False)
        return 2
    from app.service import LexiconService
    own = service is None
    service = service or LexiconService(settings)
    try:
        if any(q.get("kind") for q in qs):  # clause kinds named by the checklist: the tenant's taxonomy
            from app.agent.clauses.checklist import with_kinds
            from app.agent.clauses.playbook import taxonomy_for
            try:
                qs = with_kinds(qs, taxonomy_for(service.kb, tenant))
            except ValueError as exc:
                console.print(f"[red]{questions}: {exc}[/red]", markup=True, highlight=False)
                return 2
        job = service.ingest_paths(tenant, [Path(docs)])
        ok = {d["doc_id"] for d in job["documents"] if d.get("doc_id") and d["status"] != "failed"}
        for d in job["documents"]:
            if d["status"] == "failed":
                console.print(f"[yellow]skipped {d['filename']}: {d['error']}[/yellow]")
        documents = [d for d in service.documents(tenant) if d["id"] in ok]
        engine = service.kb.engine
        store.ensure_tables(engine)
        job_id = store.create_job(engine, tenant, documents, qs, "rag", job_key(docs, out))
        # on Ray the workers open the stores; the embedded vector store only once this process lets it go
        use_ray = bool(settings.ray_address) and (own or bool(settings.qdrant_url))
        if use_ray and not settings.qdrant_url:
            service.close()
            service = None
            from ingest.store.sql import make_engine
            engine = make_engine(settings.resolved_database_url)
        elif settings.ray_address and not use_ray:
            console.print("[yellow]running in-process: this process holds the embedded vector store "
                          "(Ray needs LEXICON_QDRANT_URL here)[/yellow]")
        result = _run_with_progress(console, settings, service, engine, job_id, use_ray, PartialOutput(out))
        write_output(out, result)
        failed = f", {result['failed']} failed (see their error column)" if result["failed"] else ""
        console.print(f"{result['done']} answered{failed} ({result['total']} pairs) in {out}"
                      + (f" [dim]· {result['runner']}[/dim]" if result.get("runner") else ""))
        return 0
    finally:
        if own and service is not None:
            service.close()


def _run_with_progress(console, settings, service, engine, job_id: str, use_ray: bool,
                       partial: PartialOutput) -> dict:
    job = store.job_dict(engine, job_id, rows=False)
    answered = job["done"] + job["failed"]
    with progress_bar(console) as bar:
        task = bar.add_task("questions", total=job["total"], completed=answered)

        def on_row(row: dict) -> None:
            nonlocal answered
            answered += 1
            bar.update(task, advance=1, description=f"{row['filename']}: {row['question'][:40]}")
            if partial.due(answered):
                partial.write(store.job_dict(engine, job_id))

        if use_ray:
            from app.batch_ray import run_job_on_ray
            run_job_on_ray(settings, engine, job_id, on_row)
        else:
            run_job(service, job_id, on_row)
    return store.job_dict(engine, job_id)
