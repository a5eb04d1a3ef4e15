"""``lexicon batch``: every question of every document, resumable after a kill, JSONL and XLSX outputs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from app.batch import load_questions

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = [{"id": "law", "question": "Which law governs this agreement?"},
             {"id": "term", "question": "What is the term of the agreement?"},
             {"id": "cap", "question": "What is the cap on liability?"}]


def lexicon_batch(data_dir: Path, docs: Path, questions: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "LEXICON_DATA_DIR": str(data_dir), "LEXICON_MAX_NEW_TOKENS": "8",
           "LEXICON_ENGINE_MAX_MODEL_LEN": "2048", "LEXICON_ENGINE_MEMORY_GIB": "1.0", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "app.cli", "batch", "--docs", str(docs), "--questions",
                             str(questions), "--out", str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


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


@pytest.mark.slow
def test_batch_resumes_after_a_kill_without_duplicates(tmp_path, corpus):
    docs, qfile = corpus
    out = tmp_path / "results.jsonl"
    proc = lexicon_batch(tmp_path / "data", docs, qfile, out)
    deadline = time.monotonic() + 300
    while len(rows_of(out)) < 1:
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no rows written in time"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = rows_of(out)
    n_docs = len(list(docs.iterdir()))
    assert 1 <= len(before) < n_docs * len(QUESTIONS)

    rerun = lexicon_batch(tmp_path / "data", docs, qfile, out)
    log, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, log
    after = rows_of(out)
    keys = [(r["document"], r["question_id"]) for r in after]
    assert len(keys) == len(set(keys)) == n_docs * len(QUESTIONS)
    assert after[:len(before)] == before  # finished rows were kept, not redone
    for r in after:
        assert set(r) >= {"document", "question", "answer", "citations", "supported"}
        for c in r["citations"]:
            assert c["filename"] == r["document"]  # each pair is answered from its own document


def test_questions_file_is_validated(tmp_path):
    bad = tmp_path / "q.yaml"
    bad.write_text("questions: []\n")
    with pytest.raises(ValueError, match="non-empty list"):
        load_questions(bad)
    bad.write_text(yaml.safe_dump([{"id": "a", "question": "x?"}, {"id": "a", "question": "y?"}]))
    with pytest.raises(ValueError, match="duplicate question id"):
        load_questions(bad)
    shipped = load_questions(ROOT / "app" / "data" / "contract_review.yaml")
    assert {"governing_law", "termination", "change_of_control", "liability_cap"} <= {q["id"] for q in shipped}


@pytest.mark.slow
def test_xlsx_output_and_bad_out_suffix(tmp_path, sample_service):
    import openpyxl

    from app.batch import batch_command
    from ingest.samples import write_msa_pdf

    docs = tmp_path / "one"
    docs.mkdir()
    write_msa_pdf(docs / "msa.pdf")
    qfile = tmp_path / "q.yaml"
    qfile.write_text(yaml.safe_dump(QUESTIONS[:2]))
    out = tmp_path / "results.xlsx"
    settings = sample_service.settings
    assert batch_command(settings, docs, qfile, tmp_path / "results.csv", service=sample_service) == 2
    assert batch_command(settings, docs, qfile, out, tenant="xlsx-tenant", service=sample_service) == 0
    ws = openpyxl.load_workbook(out).active
    rows = list(ws.iter_rows(values_only=True))
    assert rows[0][:3] == ("document", "question_id", "question")
    assert sorted(r[1] for r in rows[1:]) == ["law", "term"] and all(r[0] == "msa.pdf" for r in rows[1:])
    assert "New York" in next(r[5] for r in rows[1:] if r[1] == "law")
