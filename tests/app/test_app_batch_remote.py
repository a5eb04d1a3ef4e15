"""`lexicon ingest/ask/batch` beside a running server (real uvicorn on loopback, real CLI subprocesses):
they find the server through DATA_DIR/server.json and go through its REST API; a server that does not answer
gives a message, never a traceback; a stale server.json (dead pid) is ignored."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ingest.samples import SAMPLE_FACTS, write_msa_pdf

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from live_server import LiveServer, free_port  # tests/live_server.py

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
KEYS = {"key-r": "r"}
MSA = SAMPLE_FACTS["msa"]["filename"]


def lexicon(data_dir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "LEXICON_DATA_DIR": str(data_dir), "LEXICON_API_KEYS": json.dumps(KEYS),
           "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("LEXICON_API_KEY", None)
    env.pop("LEXICON_SERVER_URL", None)
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from app.remote import write_server_file
    from app.server import create_app
    from app.service import LexiconService

    settings = small_settings(tmp_path_factory.mktemp("remote-data"), api_keys=KEYS)
    service = LexiconService(settings)
    live = LiveServer(create_app(settings, service), free_port()).start()
    write_server_file(settings, "127.0.0.1", live.port)  # as `lexicon serve` does
    yield {"settings": settings, "service": service, "url": live.url}
    live.stop()
    service.close()


def test_ingest_ask_and_batch_go_through_the_running_server(server, tmp_path):
    data, service = server["settings"].data_dir, server["service"]
    docs = tmp_path / "docs"
    docs.mkdir()
    write_msa_pdf(docs / MSA)
    r = lexicon(data, "ingest", str(docs / MSA), "--tenant", "r")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"using {server['url']}" in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert [d["filename"] for d in service.documents("r")] == [MSA]  # ingested by the server process

    r = lexicon(data, "ask", "Which law governs this agreement?", "--tenant", "r", "--mode", "rag")
    assert r.returncode == 0 and "route rag" in r.stdout and MSA in r.stdout, r.stdout + r.stderr

    qfile = tmp_path / "q.yaml"
    qfile.write_text(yaml.safe_dump([{"id": "law", "question": "Which law governs this agreement?"}]))
    out = tmp_path / "out.jsonl"
    r = lexicon(data, "batch", "--docs", str(docs), "--questions", str(qfile), "--out", str(out), "--tenant", "r")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["document"], x["question_id"], x["status"]) for x in rows] == [(MSA, "law", "done")]
    jobs = server["service"].kb.engine  # the job lives in the server's database
    from app import batch_store as store
    assert len(store.list_jobs(jobs, "r")) == 1

    r = lexicon(data, "ask", "x" * 5000, "--tenant", "r")
    assert r.returncode == 2 and "4000" in r.stdout and "Traceback" not in r.stdout + r.stderr


def test_a_server_that_does_not_answer_gets_a_message_not_a_traceback(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "server.json").write_text(json.dumps({"url": f"http://127.0.0.1:{free_port()}", "pid": os.getpid()}))
    r = lexicon(data, "ask", "Which law governs this agreement?")
    assert r.returncode == 1 and "does not answer" in r.stdout and "Traceback" not in r.stdout + r.stderr


def test_a_stale_server_file_is_ignored(tmp_path):
    data, note = tmp_path / "data", tmp_path / "note.txt"
    data.mkdir()
    (data / "server.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": 2**22 + 12345}))
    note.write_text("The notice period is thirty days.\n")
    r = lexicon(data, "ingest", str(note), "--tenant", "r")
    assert r.returncode == 0 and "using http" not in r.stdout, r.stdout + r.stderr


def test_batch_keeps_the_rows_answered_when_the_server_dies_and_finishes_after_a_restart(tmp_path):
    """The server stops mid-run: the client exits 1 saying so, the output holds the rows answered until then;
    the restarted server resumes the job and the same command writes every row once."""
    import time

    from app import batch_store as store
    from app.remote import write_server_file
    from app.server import create_app
    from app.service import LexiconService

    settings = small_settings(tmp_path / "data", api_keys=KEYS)
    service = LexiconService(settings)
    docs, qfile, out = tmp_path / "docs", tmp_path / "q.yaml", tmp_path / "out.jsonl"
    docs.mkdir()
    write_msa_pdf(docs / MSA)
    questions = ["Which law governs this agreement?", "What is the term of the agreement?",
                 "What is the cap on liability?", "How many days of notice are needed to terminate?",
                 "Who are the parties?", "What are the payment terms?"]
    qfile.write_text(yaml.safe_dump([{"id": f"q{i}", "question": q} for i, q in enumerate(questions)]))
    env = {**os.environ, "LEXICON_DATA_DIR": str(settings.data_dir), "LEXICON_API_KEYS": json.dumps(KEYS),
           "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("LEXICON_API_KEY", None)
    env.pop("LEXICON_SERVER_URL", None)
    args = [sys.executable, "-m", "app.cli", "batch", "--docs", str(docs), "--questions", str(qfile), "--out",
            str(out), "--tenant", "r"]
    try:
        live = LiveServer(create_app(settings, service), free_port()).start()
        write_server_file(settings, "127.0.0.1", live.port)
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 600
        while not (out.exists() and out.read_text().strip()):  # the first rows are in the file
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "slow"
            time.sleep(0.2)
        live.stop()  # the server goes away mid-run (its batch worker stops after the row it is on)
        log, _ = proc.communicate(timeout=300)
        partial = [json.loads(line) for line in out.read_text().splitlines()]
        assert proc.returncode == 1 and "resumes" in log and "Traceback" not in log, log
        assert 1 <= len(partial) < len(questions) and all(r["status"] == "done" for r in partial), (partial, log)

        live = LiveServer(create_app(settings, service), free_port()).start()  # restarted: the job resumes
        write_server_file(settings, "127.0.0.1", live.port)
        r = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert sorted(x["question_id"] for x in rows) == [f"q{i}" for i in range(len(questions))]
        assert all(x["status"] == "done" for x in rows) and len(store.list_jobs(service.kb.engine, "r")) == 1
        done = {x["question_id"]: x["answer"] for x in rows}
        assert all(done[p["question_id"]] == p["answer"] for p in partial)  # kept, not redone
        live.stop()
    finally:
        service.close()
