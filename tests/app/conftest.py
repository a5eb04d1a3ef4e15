"""App test fixtures: one sample-corpus KnowledgeBase / service per test module (real parts throughout)."""
from __future__ import annotations

import pytest

from app_test_helpers import TENANT, small_settings  # tests/app/app_test_helpers.py


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory):
    return small_settings(tmp_path_factory.mktemp("app-data"))


@pytest.fixture(scope="module")
def sample_service(module_settings):
    """A LexiconService with the shipped sample corpus ingested for tenant "demo" (model loads on first use)."""
    from app.service import LexiconService
    from ingest.samples import write_sample_corpus

    service = LexiconService(module_settings)
    paths = write_sample_corpus(module_settings.data_dir / "samples")
    job = service.ingest_paths(TENANT, paths)
    assert job["failed"] == 0, job
    yield service
    service.close()
