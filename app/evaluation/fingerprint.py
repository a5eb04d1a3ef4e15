"""Code/config fingerprints that key cached indexes and journaled answers.

- ``ingest_fingerprint``: the ingest code (``ingest/**/*.py``) and the chunking/embedding settings. The
  evaluation index lives in a folder named after it, so a change to parsing or chunking re-ingests into a
  fresh index instead of silently reusing chunks the unchanged-file check would keep.
- ``run_fingerprint``: the ingest fingerprint plus the agent code (``app/**/*.py`` except this package, the
  API and the UI), the agent's data files (``app/data``), the engine code when answers are generated, the
  agent/model settings and the run options.
Scoring code is not part of either: journaled records hold raw outputs and are re-scored on every run.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_SKIP = ("app/evaluation/", "app/api/", "app/server.py", "app/cli.py", "app/batch.py")


def _hash_tree(h, folder: str, skip: tuple[str, ...] = (), pattern: str = "*.py") -> None:
    base = ROOT / folder
    for path in sorted(base.rglob(pattern)):
        rel = path.relative_to(ROOT).as_posix()
        if any(rel.startswith(s) for s in skip) or "__pycache__" in rel:
            continue
        h.update(rel.encode())
        h.update(path.read_bytes())


def ingest_fingerprint(settings, extra: str = "") -> str:
    h = hashlib.sha256()
    _hash_tree(h, "ingest")
    h.update(f"{settings.chunk_tokens}|{settings.chunk_overlap}|{settings.embedding_model}|{extra}".encode())
    return h.hexdigest()[:12]


def run_fingerprint(settings, ingest_fp: str, mode: str, retrieval_only: bool, k: int) -> str:
    h = hashlib.sha256(ingest_fp.encode())
    _hash_tree(h, "app", APP_SKIP)
    _hash_tree(h, "app/data", pattern="*.*")  # the clause kinds, vocabulary and calibration the agent reads
    if not retrieval_only:
        _hash_tree(h, "engine")
        h.update(f"{settings.llm_model}|{settings.llm_base_url}|{settings.llm_model_name}|{settings.max_new_tokens}|"
                 f"{settings.engine_dtype}|{settings.engine_max_model_len}".encode())
    h.update(f"{settings.retrieval_k}|{mode}|{retrieval_only}|{k}|{settings.built_in_clause_kinds}".encode())
    return h.hexdigest()[:12]
