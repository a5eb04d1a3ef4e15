"""Shared fixtures. Tests use real parts: SQLite/Postgres, a Qdrant local store, packaged model weights."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the app's embedded engine compiles its decode step on a background thread (a core for 25 s to 2 min): off in
# tests that only need answers; tests/engine/serving/test_compiled_decode.py covers the compiled step
os.environ.setdefault("LEXICON_ENGINE_COMPILE_DECODE", "off")

POSTGRES_URL = os.environ.get("LEXICON_TEST_POSTGRES_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")


@pytest.fixture
def settings(tmp_path):
    """Settings pointing every store at a fresh temporary data directory."""
    from app.settings import Settings

    s = Settings(data_dir=tmp_path / "data")
    s.ensure_dirs()
    return s
