"""Plain helpers shared by the app tests (a module of its own: `from conftest import` is ambiguous when
several test folders each have a conftest)."""
from __future__ import annotations

TENANT = "demo"


def small_settings(data_dir, **extra):
    from app.settings import Settings

    s = Settings(data_dir=data_dir, max_new_tokens=24, engine_max_model_len=4096, engine_memory_gib=1.0,
                 engine_max_num_seqs=4, **extra)
    s.ensure_dirs()
    return s


def passage_texts(service, tenant: str = TENANT) -> dict[str, str]:
    """doc_id -> all chunk text of the document (what citations must quote from)."""
    return {d["id"]: "\n".join(p.text for p in service.kb.document_passages(tenant, d["id"]))
            for d in service.documents(tenant)}
