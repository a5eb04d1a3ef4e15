"""Ingest fixtures: one real embedder per test session, a real KnowledgeBase per test, generated files."""
from __future__ import annotations

import pytest

from app.settings import packaged_embedding_model


@pytest.fixture(scope="session")
def embedder():
    """The packaged all-MiniLM-L6-v2, loaded once for the whole session."""
    from ingest.embedder import shared_embedder

    e = shared_embedder(packaged_embedding_model())
    _ = e.dim  # load now, not inside the first timed-out test
    return e


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    from ingest.samples import write_sample_corpus

    return write_sample_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture
def kb(settings, embedder):
    from ingest.knowledge_base import KnowledgeBase

    base = KnowledgeBase(settings, embedder=embedder)
    yield base
    base.close()

