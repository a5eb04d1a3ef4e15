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
