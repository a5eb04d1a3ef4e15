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


def bi_env(tmp_path_factory, tenant: str, filename: str, html: str, n_tables: int, source=None):
    """A real KnowledgeBase holding one ingested HTML report (or the file ``source``; ``n_tables`` 0: any
    number), and agent deps whose model raises (the BI route must not need one): yields (kb, deps, doc_id)
    for a module-scoped fixture."""
    from app.agent.state import AgentDeps
    from ingest.knowledge_base import KnowledgeBase

    settings = small_settings(tmp_path_factory.mktemp(tenant))
    kb = KnowledgeBase(settings)
    path = source or settings.data_dir / filename
    if source is None:
        path.write_text(html)
    res = kb.ingest_file(path, tenant)
    assert res.status == "ingested" and (res.tables == n_tables or (n_tables == 0 and res.tables)), res

    def no_model():
        raise AssertionError("the BI route must not need a model")

    yield kb, AgentDeps(kb, settings, no_model), res.doc_id
    kb.close()


def ask_bi(env, tenant: str, question: str) -> dict:
    """The real BI node's answer to ``question`` over the document of ``bi_env``."""
    from app.agent.nodes_bi import make_bi_node
    from app.agent.state import turn_input

    kb, deps, doc = env
    return make_bi_node(deps)(turn_input(tenant, question, "bi", [doc]))


class _Cite(dict):
    """A citation readable as c["quote"] and as c.quote."""
    __getattr__ = dict.get


def _get(a, key):
    return a.get(key) if isinstance(a, dict) else getattr(a, key)


def checked(a) -> bool:
    """The answering route's own check held (a grounded BI program, a span verified in its sentence): what a
    route's test asserts; whether it is `supported` is the calibrated verifier's call (app/data/verifier.json)."""
    best = ((_get(a, "verdict") or {}).get("candidates") or [{}])[0]
    return bool((best.get("features") or {}).get("check"))


def rests_on(a) -> list:
    """The quotes the answer rests on: its citations when supported, else the found answer's own (related)."""
    if _get(a, "supported"):
        return [_Cite(c if isinstance(c, dict) else c.model_dump()) for c in _get(a, "citations")]
    best = ((_get(a, "verdict") or {}).get("candidates") or [{}])[0]
    return [_Cite(c) for c in best.get("citations") or []]


def statement(a) -> str:
    """The answer's own text, without the "Not verified:" line and the related passages after it."""
    return (_get(a, "answer") or "").split("\nNot verified:")[0]
