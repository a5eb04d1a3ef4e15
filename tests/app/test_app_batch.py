"""Batch jobs: persisted in the database, resumable after a kill, per-question failures, rows keyed on the
document's content hash, a formatted workbook, and the same job on a real local Ray runtime."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from app.batch import load_questions

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [{"id": "law", "question": "Which law governs this agreement?"},
             {"id": "term", "question": "What is the term of the agreement?"},
             {"id": "cap", "question": "What is the cap on liability?"}]
BI_QUESTIONS = [{"id": "rev", "question": "What was revenue in 2024?", "mode": "bi"},
                {"id": "net", "question": "What was net income in 2024?", "mode": "bi"}]


def lexicon_batch(data_dir: Path, docs: Path, questions: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "LEXICON_DATA_DIR": str(data_dir), "LEXICON_MAX_NEW_TOKENS": "8",
           "LEXICON_ENGINE_MAX_MODEL_LEN": "2048", "LEXICON_ENGINE_MEMORY_GIB": "1.0", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "app.cli", "batch", "--docs", str(docs), "--questions",
                             str(questions), "--out", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def db_rows(data_dir: Path) -> list[dict]:
    """The batch rows as committed (read straight from the SQLite file, as another process sees them)."""
    path = data_dir / "lexicon.db"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        db.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in db.execute("SELECT * FROM lx_batch_rows ORDER BY seq")]
        except sqlite3.OperationalError:  # table not created yet
            return []


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def statement_csv(path: Path, revenue_2024: int) -> Path:
    path.write_text("item,2023,2024\nRevenue,1000," + str(revenue_2024) + "\nNet income,100,150\n")
    return path


@pytest.fixture
def corpus(tmp_path):
    from ingest.samples import write_msa_pdf, write_nda_docx

    docs = tmp_path / "docs"
    docs.mkdir()
    write_msa_pdf(docs / "msa.pdf")
    write_nda_docx(docs / "nda.docx")
    qfile = tmp_path / "questions.yaml"
    qfile.write_text(yaml.safe_dump({"questions": QUESTIONS}))
    return docs, qfile


def test_questions_file_is_validated(tmp_path):
    bad = tmp_path / "q.yaml"
    bad.write_text("questions: []\n")
    with pytest.raises(ValueError, match="non-empty list"):
        load_questions(bad)
    bad.write_text(yaml.safe_dump([{"id": "a", "question": "x?"}, {"id": "a", "question": "y?"}]))
    with pytest.raises(ValueError, match="duplicate question id"):
        load_questions(bad)
    bad.write_text(yaml.safe_dump([{"id": "long", "question": "why " * 1250}]))
    with pytest.raises(ValueError, match="'long' is 4,999 characters long; the limit is 4,000"):
        load_questions(bad)
    shipped = load_questions(ROOT / "app" / "data" / "contract_review.yaml")
    assert {"governing_law", "termination", "change_of_control", "liability_cap"} <= {q["id"] for q in shipped}


@pytest.mark.slow
def test_batch_resumes_after_a_kill_without_duplicates(tmp_path, corpus):
    docs, qfile = corpus
    data, out = tmp_path / "data", tmp_path / "results.jsonl"
    proc = lexicon_batch(data, docs, qfile, out)
    deadline = time.monotonic() + 300
    while not rows_of(out):  # the rows answered so far are written while the job runs
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no rows answered in time"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {(r["doc_id"], r["question_id"]): r for r in db_rows(data) if r["status"] == "done"}
    n_pairs = len(list(docs.iterdir())) * len(QUESTIONS)
    assert 1 <= len(before) < n_pairs
    partial = rows_of(out)  # what the killed run left: answered rows only, each as committed
    assert 1 <= len(partial) <= len(before) and all(r["status"] == "done" and r["answer"] for r in partial)
    assert all(before[(r["doc_id"], r["question_id"])]["answer"] == r["answer"] for r in partial)

    rerun = lexicon_batch(data, docs, qfile, out)
    log, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, log
    after = rows_of(out)
    keys = [(r["document"], r["question_id"]) for r in after]
    assert len(keys) == len(set(keys)) == n_pairs and len(db_rows(data)) == n_pairs  # one job, no duplicates
    for r in after:
        assert r["status"] == "done" and set(r) >= {"document", "question", "answer", "citations", "supported", "route"}
        for c in r["citations"]:
            assert c["filename"] == r["document"]  # each pair is answered from its own document
        old = before.get((r["doc_id"], r["question_id"]))
        if old is not None:  # finished rows were kept, not redone
            assert r["answer"] == old["answer"] and r["updated_at"][:26] == str(old["updated_at"]).replace(" ", "T")[:26]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "docs", "questions.yaml", "results.jsonl"]


def test_per_question_failure_and_rerun_after_a_document_changed(tmp_path):
    """BI questions over a CSV statement (no text generation): a bad row fails alone; a changed document's
    rows are recomputed on the rerun, an unchanged document's rows are kept."""
    from app import batch_store as store
    from app.batch import batch_command
    from app.batch_runner import run_job
    from app.service import LexiconService

    settings = small_settings(tmp_path / "data")
    docs = tmp_path / "statements"
    docs.mkdir()
    statement_csv(docs / "a.csv", 1250)
    statement_csv(docs / "b.csv", 2000)
    qfile = tmp_path / "q.yaml"
    qfile.write_text(yaml.safe_dump(BI_QUESTIONS))
    out = tmp_path / "out.xlsx"
    service = LexiconService(settings)
    try:
        assert batch_command(settings, docs, qfile, out, service=service) == 0
        first = {(r["document"], r["question_id"]): r for r in store.job_dict(service.kb.engine, store.list_jobs(
            service.kb.engine, "demo")[0])["rows"]}
        assert all(r["status"] == "done" and r["route"] == "bi" for r in first.values()), first
        assert "1,250" in first[("a.csv", "rev")]["answer"] or "1250" in first[("a.csv", "rev")]["answer"]

        statement_csv(docs / "a.csv", 1375)  # a.csv changed, b.csv did not
        assert batch_command(settings, docs, qfile, out, service=service) == 0
        jobs = store.list_jobs(service.kb.engine, "demo")
        assert len(jobs) == 1  # the rerun is the same job
        second = {(r["document"], r["question_id"]): r for r in store.job_dict(service.kb.engine, jobs[0])["rows"]}
        assert "1,375" in second[("a.csv", "rev")]["answer"] or "1375" in second[("a.csv", "rev")]["answer"]
        assert second[("a.csv", "rev")]["content_hash"] != first[("a.csv", "rev")]["content_hash"]
        for q in ("rev", "net"):
            assert second[("b.csv", q)] == first[("b.csv", q)]  # same hash: kept as it was, not asked again

        # a question over the limit (e.g. from an older job) fails on its row; the others are answered
        b = next(d for d in service.documents("demo") if d["filename"] == "b.csv")
        job_id = store.create_job(service.kb.engine, "demo", [b], [
            BI_QUESTIONS[0], {"id": "huge", "question": "x" * 5000, "mode": "bi"}, BI_QUESTIONS[1]])
        job = run_job(service, job_id)
        rows = {r["question_id"]: r for r in store.job_dict(service.kb.engine, job_id)["rows"]}
        assert job["status"] == "done" and job["done"] == 2 and job["failed"] == 1
        assert rows["huge"]["status"] == "failed" and "limit is 4,000" in rows["huge"]["error"]
        assert rows["net"]["status"] == "done" and rows["net"]["answer"]
    finally:
        service.close()


def test_workbook_is_formatted_with_a_summary_sheet(tmp_path):
    import openpyxl

    from app.batch_xlsx import write_atomic, xlsx_bytes

    rows = [{"document": "msa.pdf", "question_id": "law", "question": "Which law governs?", "answer": "New York.",
             "supported": True, "route": "rag", "status": "done",
             "citations": [{"filename": "msa.pdf", "page": 3, "quote": "governed by the laws of New York"}]},
            {"document": "msa.pdf", "question_id": "cap", "question": "Cap?", "answer": None, "supported": None,
             "route": None, "status": "failed", "error": "ValueError: boom", "citations": []}]
    out = tmp_path / "r.xlsx"
    write_atomic(out, xlsx_bytes(rows, {"id": "j1", "status": "done", "runner": "in-process"}))
    assert [p.name for p in tmp_path.iterdir()] == ["r.xlsx"]  # no journal or temp file left behind
    wb = openpyxl.load_workbook(out)
    ws = wb["results"]
    header = [c.value for c in ws[1]]
    assert header[:7] == ["document", "question_id", "question", "answer", "supported", "route", "citations"]
    assert ws.freeze_panes == "A2" and ws.column_dimensions["D"].width >= 50
    assert ws["D2"].alignment.wrap_text and ws["A1"].font.bold
    assert ws["G2"].value == "msa.pdf p.3: governed by the laws of New York" and ws["E2"].value == "yes"
    assert ws["H3"].value == "failed" and ws["I3"].value == "ValueError: boom"
    summary = {r[0]: r[1] for r in wb["summary"].iter_rows(values_only=True) if r and r[0]}
    assert summary["pairs"] == 2 and summary["answered"] == 1 and summary["supported"] == 1 and summary["failed"] == 1


@pytest.mark.slow
def test_batch_on_a_local_ray_runtime_equals_the_in_process_run(tmp_path, corpus):
    ray = pytest.importorskip("ray", reason="ray is in the dev extra: pip install -e '.[dev]'")
    from app.batch import batch_command

    docs, qfile = corpus
    (docs / "nda.docx").unlink()
    qfile.write_text(yaml.safe_dump(QUESTIONS[:2]))
    settings = small_settings(tmp_path / "data")
    local, on_ray = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    assert batch_command(settings, docs, qfile, local) == 0
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        assert batch_command(settings.model_copy(update={"ray_address": "local"}), docs, qfile, on_ray) == 0
    finally:
        ray.shutdown()
    keep = ("document", "question_id", "answer", "supported", "route", "citations", "status")
    a, b = [{k: r[k] for k in keep} for r in rows_of(local)], [{k: r[k] for k in keep} for r in rows_of(on_ray)]
    assert len(a) == 2 and a == b
    with sqlite3.connect(settings.data_dir / "lexicon.db") as db:
        runners = [r[0] for r in db.execute("SELECT runner FROM lx_batch_jobs ORDER BY created_at")]
    assert runners[0] == "in-process" and runners[1].startswith("ray local")
