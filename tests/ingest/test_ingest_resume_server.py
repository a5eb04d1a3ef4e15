"""The real server, killed with SIGKILL while upload jobs run, restarted: every job finishes, nothing is lost,
nothing is duplicated (documents, versions, chunks, vectors), and resumed uploads leave no original behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.live_server import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
KEY = {"X-API-Key": "k-acme"}


AGENTS = ["Aldebaran", "Betelgeuse", "Capella", "Deneb"]


def _memo(i: int) -> str:
    pages = []
    for p in range(3):
        paras = [f"Section {p + 1}.{k} of this memo: the escrow agent for the matter is {AGENTS[i]} Trust, account "
                 f"{1000 * i + 10 * p + k}; notices go to the registered office within {k + 5} business days, and "
                 f"the fee schedule in annex {p} applies to every invoice issued under this memo."
                 for k in range(12)]
        pages.append("\n\n".join(paras))
    return "\f".join(pages)


def _start(data: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "LEXICON_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
           "LEXICON_API_KEYS": json.dumps({"k-acme": "acme"})}
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 240
    while True:
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "server did not come up"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_jobs_killed_with_the_server_finish_after_restart(tmp_path, embedder):
    from app.settings import Settings
    from ingest.knowledge_base import KnowledgeBase
    from ingest.samples import write_sample_corpus

    files = write_sample_corpus(tmp_path / "docs")
    for i in range(4):
        (tmp_path / "docs" / f"memo_{i}.txt").write_text(_memo(i))
        files.append(tmp_path / "docs" / f"memo_{i}.txt")
    data, port = tmp_path / "data", free_port()
    url = f"http://127.0.0.1:{port}"

    proc = _start(data, port)
    try:
        for f in files:
            r = httpx.post(f"{url}/api/documents", headers=KEY, files={"file": (f.name, f.read_bytes())}, timeout=60)
            assert r.status_code == 202, r.text
        deadline = time.monotonic() + 300
        while True:  # kill once some jobs are done and the others are still queued or running
            statuses = [j["status"] for j in httpx.get(f"{url}/api/jobs", headers=KEY, timeout=30).json()]
            if "done" in statuses and statuses.count("done") <= len(files) - 2 and "running" in statuses:
                break
            assert statuses.count("done") < len(files) - 1, "all jobs finished before the kill; make them longer"
            assert time.monotonic() < deadline, statuses
            time.sleep(0.1)
        proc.kill()  # SIGKILL
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        killed_with = statuses
    finally:
        _stop(proc)

    proc = _start(data, port)  # the restart resumes the open jobs
    try:
        deadline = time.monotonic() + 600
        while True:
            jobs = httpx.get(f"{url}/api/jobs", headers=KEY, timeout=30).json()
            if all(j["status"] == "done" for j in jobs):
                break
            assert time.monotonic() < deadline, [j["status"] for j in jobs]
            time.sleep(0.5)
        docs = httpx.get(f"{url}/api/documents", headers=KEY, timeout=30).json()
    finally:
        _stop(proc)

    assert len(jobs) == len(files), "a job was lost or duplicated"
    items = [d for j in jobs for d in j["documents"]]
    assert sorted(i["filename"] for i in items) == sorted(f.name for f in files)
    assert all(i["status"] in ("ingested", "unchanged") for i in items), (killed_with, items)
    assert sorted(d["filename"] for d in docs) == sorted(f.name for f in files)
    assert all(d["status"] == "ingested" and d["version"] == 1 for d in docs), docs
    assert not [p for p in (data / "uploads").rglob("*") if p.is_file()]  # originals removed after ingest

    with KnowledgeBase(Settings(data_dir=data), embedder=embedder) as kb:
        with kb.engine.connect() as conn:
            n_rows, n_ids = conn.exec_driver_sql("select count(*), count(distinct id) from lx_chunks").one()
            n_versions = conn.exec_driver_sql("select count(*) from lx_document_versions").scalar()
        assert n_rows == n_ids == sum(d["chunks"] for d in docs) == kb.vectors.count("acme")
        assert n_versions == len(files)
        for i, agent in enumerate(AGENTS):
            hits = kb.search("acme", f"Who is the escrow agent, {agent}?", k=3)
            assert hits and hits[0].filename == f"memo_{i}.txt"
