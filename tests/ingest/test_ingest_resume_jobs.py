"""KnowledgeBase.resume_unfinished_jobs: every open job of every tenant is finished, oldest first, exactly once."""
from __future__ import annotations

from ingest.samples import write_sample_corpus


def test_resume_unfinished_jobs_runs_every_open_job_once(kb, tmp_path):
    files = write_sample_corpus(tmp_path / "docs")
    done = kb.ingest_paths(files[:1], "acme")  # a finished job is left alone
    first = kb.create_job(files[1:3], "acme")  # committed, never run (as after a crash before the worker ran)
    second = kb.create_job(files[3:], "globex")
    assert {j.status for j in kb.list_jobs("acme") + kb.list_jobs("globex")} == {"done", "pending"}

    summaries = kb.resume_unfinished_jobs()
    assert [s.job_id for s in summaries] == [first, second]
    assert [r.status for s in summaries for r in s.results] == ["ingested"] * (len(files) - 1)
    assert all(kb.get_job(j).status == "done" for j in (done.job_id, first, second))
    assert kb.resume_unfinished_jobs() == []
    assert len(kb.list_documents("acme")) == 3 and len(kb.list_documents("globex")) == len(files) - 3
    assert kb.vectors.count("globex") == sum(d.chunks for d in kb.list_documents("globex"))
