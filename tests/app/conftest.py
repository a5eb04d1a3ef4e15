"""App test fixtures: one sample-corpus KnowledgeBase / service per test module (real parts throughout)."""
from __future__ import annotations

import pytest

TENANT = "demo"


def small_settings(data_dir, **extra):
    from app.settings import Settings

    s = Settings(data_dir=data_dir, max_new_tokens=24, engine_max_model_len=4096, engine_memory_gib=1.0,
                 engine_max_num_seqs=4, **extra)
    s.ensure_dirs()
    return s


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


def passage_texts(service, tenant: str = TENANT) -> dict[str, str]:
    """doc_id -> all chunk text of the document (what citations must quote from)."""
    return {d["id"]: "\n".join(p.text for p in service.kb.document_passages(tenant, d["id"]))
            for d in service.documents(tenant)}
