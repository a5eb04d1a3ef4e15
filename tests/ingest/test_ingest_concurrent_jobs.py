"""A job created while another one is ingesting must not fail with "database is locked" (SQLite, WAL)."""
import threading

from ingest.samples import write_sample_corpus


def test_create_job_while_another_job_runs(kb, tmp_path):
    paths = write_sample_corpus(tmp_path / "corpus")
    first = kb.create_job(paths[:2], "acme")
    runner = threading.Thread(target=kb.run_job, args=(first,))
    runner.start()
    created, errors = [], []
    while runner.is_alive() and len(created) < 20:
        try:  # each call reads (open job with this signature?) then writes: the upgrade used to fail
            created.append(kb.create_job([paths[2 + len(created) % 2]], "acme", [f"f{len(created)}.pdf"]))
        except Exception as exc:  # noqa: BLE001 - the test reports whatever broke
            errors.append(repr(exc))
    runner.join()
    assert not errors, errors[:3]
    assert created and kb.get_job(first).status == "done"
