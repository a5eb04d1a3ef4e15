"""The run fingerprint keys journaled answers: whatever changes an answer must change it, so a rerun never
re-scores answers another agent gave."""
from __future__ import annotations

from app.evaluation import fingerprint
from app.settings import Settings


def _tree(root, calibration: str) -> None:
    (root / "app" / "data").mkdir(parents=True, exist_ok=True)
    (root / "engine").mkdir(exist_ok=True)
    (root / "app" / "agent.py").write_text("ANSWER = 1\n")
    (root / "app" / "data" / "verifier.json").write_text(calibration)


def test_the_agents_data_and_the_unseen_kinds_switch_key_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(fingerprint, "ROOT", tmp_path)
    _tree(tmp_path, '{"threshold": 0.7}')
    s = Settings(data_dir=tmp_path / "d")
    first = fingerprint.run_fingerprint(s, "ingest", "auto", False, 10)
    assert fingerprint.run_fingerprint(s, "ingest", "auto", False, 10) == first  # stable
    _tree(tmp_path, '{"threshold": 0.8}')  # a recalibrated verifier decides `supported` otherwise
    recalibrated = fingerprint.run_fingerprint(s, "ingest", "auto", False, 10)
    assert recalibrated != first
    unseen = s.model_copy(update={"built_in_clause_kinds": False})
    assert fingerprint.run_fingerprint(unseen, "ingest", "auto", False, 10) != recalibrated
