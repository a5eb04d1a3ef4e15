"""Shared fixtures. Tests use real parts: SQLite/Postgres, a Qdrant local store, packaged model weights."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

POSTGRES_URL = os.environ.get("LEXICON_TEST_POSTGRES_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")


@pytest.fixture
def settings(tmp_path):
    """Settings pointing every store at a fresh temporary data directory."""
    from app.settings import Settings

    s = Settings(data_dir=tmp_path / "data")
    s.ensure_dirs()
    return s
