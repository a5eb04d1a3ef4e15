"""A job killed mid-way (SIGKILL in a real subprocess) resumes on rerun: nothing lost, nothing duplicated."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingest.knowledge_base import KnowledgeBase
from ingest.samples import write_sample_corpus

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from app.settings import Settings
    from ingest.knowledge_base import KnowledgeBase

    def kill_in_third_file(event):
        # after the third file's vectors are written but before its SQL commit
        if event.stage == "embedded" and event.file_index == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    kb = KnowledgeBase(Settings(data_dir=Path(sys.argv[1])))
    kb.ingest_paths([Path(sys.argv[2])], "acme", progress=kill_in_third_file)
    print("not killed")
""")


def test_killed_job_resumes_without_duplicates(settings, embedder, tmp_path):
    folder = tmp_path / "docs"
    write_sample_corpus(folder)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(settings.data_dir), str(folder)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, proc.stdout + proc.stderr  # really killed mid-job

    with KnowledgeBase(settings, embedder=embedder) as kb:
        (crashed,) = kb.list_jobs("acme")
        assert crashed.status == "running"
        assert [i.status for i in crashed.items] == ["ingested", "ingested", "pending", "pending"]
        assert len(kb.list_documents("acme")) == 2  # the third file's half-done work is not visible
        points_before = kb.vectors.count("acme")
        assert points_before > sum(d.chunks for d in kb.list_documents("acme"))  # orphan points of file 3

        summary = kb.ingest_paths([folder], "acme")
        assert summary.job_id == crashed.id  # the same job, continued
        assert [r.status for r in summary.results] == ["ingested"] * 4
        assert kb.get_job(crashed.id).status == "done" and len(kb.list_jobs("acme")) == 1

        docs = kb.list_documents("acme")
        assert len(docs) == 4 and all(d.version == 1 for d in docs)
        with kb.engine.connect() as conn:
            n_rows, n_ids = conn.exec_driver_sql("select count(*), count(distinct id) from lx_chunks").one()
        assert n_rows == n_ids == sum(d.chunks for d in docs) == kb.vectors.count("acme")
        assert len(kb.list_tables("acme")) == 3
        assert kb.ingest_paths([folder], "acme").unchanged == 4  # a fresh job now only finds unchanged files
