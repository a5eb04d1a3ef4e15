"""Threads in the Postgres checkpointer (the real server), in a throwaway schema."""
from __future__ import annotations

import uuid

import pytest

from app_test_helpers import TENANT  # tests/app/app_test_helpers.py

pytestmark = pytest.mark.postgres
PG = "postgresql://root@127.0.0.1:5432/test"


@pytest.fixture
def pg_checkpoint_url():
    import psycopg

    schema = f"lexicon_threads_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"postgresql+psycopg://root@127.0.0.1:5432/test?options=-csearch_path%3D{schema}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_threads_persist_in_postgres_across_services(sample_service, module_settings, pg_checkpoint_url):
    from app.service import LexiconService

    settings = module_settings.model_copy(update={"checkpoint_url": pg_checkpoint_url})
    first = LexiconService(settings, kb=sample_service.kb)
    try:
        a = first.ask(TENANT, "What was revenue in 2024?", mode="bi", thread_id="pg-thread")
        b = first.ask(TENANT, "What was gross profit in 2023?", mode="bi", thread_id="pg-thread")
        assert type(first.checkpointer).__name__ == "PostgresSaver"
    finally:
        first._close_checkpointer()
    second = LexiconService(settings, kb=sample_service.kb)
    try:
        history = second.thread_history(TENANT, "pg-thread")
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
        assert history[1]["answer"]["rows"] == a.rows and history[3]["answer"]["rows"] == b.rows
        assert second.threads(TENANT) == ["pg-thread"] and second.threads("other") == []
        with pytest.raises(KeyError):
            second.thread_history("other", "pg-thread")
    finally:
        second._close_checkpointer()
