"""Run a dataset through what users get: ingest into the evaluation tenant, retrieve with the agent's own
``retrieve`` node (top-k), ask ``LexiconService.ask`` (unless retrieval-only), journal raw records."""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.evaluation.journal import Journal, record_key
from app.evaluation.text import squash
from app.evaluation.types import Dataset, EvalItem

TENANT_PREFIX = "eval"
log = logging.getLogger("lexicon.eval")


@dataclass
class RunOptions:
    mode: str = "auto"
    retrieval_only: bool = False
    k: int = 10
    limit: Optional[int] = None
    workers: int = 1  # questions in flight at once (the engine batches them; latencies then include queueing)
    report_only: bool = False  # score what the journal holds, ask nothing new


@dataclass
class RunState:
    doc_ids: dict[str, str] = field(default_factory=dict)  # filename -> doc_id
    hashes: dict[str, str] = field(default_factory=dict)  # filename -> content hash
    failed: dict[str, str] = field(default_factory=dict)  # filename -> error
    retriever: str = "agent retrieve node"
    in_index: int = 0  # documents of the tenant (earlier runs with more --docs leave more distractors)


def tenant_for(dataset: Dataset) -> str:
    return f"{TENANT_PREFIX}-{dataset.kind}"


def ingest(service, dataset: Dataset, tenant: str, progress: bool = True) -> RunState:
    from tqdm import tqdm

    bar = tqdm(total=len(dataset.documents), desc="ingest", unit="doc", disable=not progress, leave=False)

    def callback(ev) -> None:
        if ev.stage == "file_done":
            bar.update(1)
            bar.set_postfix_str(str(getattr(ev, "filename", ""))[:40])

    summary = service.kb.ingest_paths(dataset.documents, tenant, progress=callback)
    bar.close()
    state = RunState()
    for r in summary.results:
        if r.status == "failed" or not r.doc_id:
            state.failed[r.filename] = r.error or "failed"
    for d in service.kb.list_documents(tenant):
        state.in_index += 1
        if d.status == "ingested":
            state.doc_ids[d.filename] = d.id
            state.hashes[d.filename] = d.content_hash
    return state


def make_retriever(service, k: int, state: RunState) -> Callable[[str, str, Optional[list[str]]], list[dict]]:
    """The agent's ``retrieve`` node with ``retrieval_k = k`` (what the agent reads, not a side path)."""
    from app.agent.graph import build_graph
    from app.agent.state import AgentDeps, passage_dict, turn_input

    settings = service.settings.model_copy(update={"retrieval_k": k})
    node = None
    try:
        graph = build_graph(AgentDeps(service.kb, settings, service.chat_model))
        node = graph.builder.nodes["retrieve"].runnable
    except Exception as exc:  # the graph changed shape: measure the knowledge base search instead
        log.warning("no agent retrieve node (%s); using KnowledgeBase.search", exc)
        state.retriever = "KnowledgeBase.search"

    def retrieve(tenant: str, question: str, doc_ids: Optional[list[str]]) -> list[dict]:
        if node is not None:
            out = node.invoke(turn_input(tenant, question, "rag", doc_ids), {"configurable": {}})
            return list((out or {}).get("passages") or [])[:k]
        return [passage_dict(p) for p in service.kb.search(tenant, question, k=k, doc_ids=doc_ids)]

    return retrieve


def _slim(p: dict) -> dict:
    return {"doc_id": p.get("doc_id"), "filename": p.get("filename"), "page": p.get("page"),
            "section": p.get("section"), "text": p.get("text"), "score": p.get("score")}


def run_item(service, retrieve, tenant: str, item: EvalItem, state: RunState, opts: RunOptions) -> dict:
    rec: dict = {"id": item.id, "doc": item.doc, "question": item.question}
    doc_id = state.doc_ids.get(item.doc)
    if doc_id is None:
        rec["error"] = f"document not ingested: {state.failed.get(item.doc, 'missing')}"
        rec["retrieved"] = []
        if not opts.retrieval_only:
            rec["answer"] = {"answer": "", "supported": False, "citations": [], "route": "none"}
        return rec
    doc_ids = [doc_id] if item.scoped else None
    t0 = time.perf_counter()
    rec["retrieved"] = [_slim(p) for p in retrieve(tenant, item.question, doc_ids)]
    rec["retrieval_s"] = round(time.perf_counter() - t0, 4)
    if opts.retrieval_only:
        return rec
    t0 = time.perf_counter()
    try:
        ans = service.ask(tenant, item.question, mode=opts.mode, doc_ids=doc_ids)
        rec["answer"] = {"answer": ans.answer, "supported": ans.supported, "route": ans.route, "sql": ans.sql,
                         "verdict": ans.verdict,
                         "citations": [c.model_dump() if hasattr(c, "model_dump") else dict(c) for c in ans.citations]}
    except Exception as exc:  # counted as an error and a wrong answer, never hidden
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["answer"] = {"answer": "", "supported": False, "citations": [], "route": "error"}
    rec["answer_s"] = round(time.perf_counter() - t0, 4)
    return rec


def run(service, dataset: Dataset, items: list[EvalItem], journal: Journal, fingerprint: str, opts: RunOptions,
        progress: bool = True) -> tuple[dict[str, dict], RunState]:
    """-> ({item id: record}, state); records already in the journal under the same key are reused."""
    from tqdm import tqdm

    tenant = tenant_for(dataset)
    state = ingest(service, dataset, tenant, progress)
    retrieve = make_retriever(service, opts.k, state)
    out: dict[str, dict] = {}
    todo = []
    for item in items:
        key = record_key(item.id, state.hashes.get(item.doc, ""), fingerprint)
        if key in journal.records:
            out[item.id] = journal.records[key]
        else:
            todo.append((item, key))
    if opts.report_only:
        todo = []
    bar = tqdm(total=len(todo), desc="questions", unit="q", disable=not progress)
    lock = threading.Lock()

    def one(pair) -> None:
        item, key = pair
        rec = run_item(service, retrieve, tenant, item, state, opts)
        rec["key"] = key
        with lock:
            journal.append(rec)
            out[item.id] = rec
            bar.update(1)

    if opts.workers > 1:
        with ThreadPoolExecutor(opts.workers, thread_name_prefix="lexicon-eval") as pool:
            list(pool.map(one, todo))
    else:
        for pair in todo:
            one(pair)
    bar.close()
    return out, state


class DocumentTexts:
    """Ingested text per document filename, read lazily: whitespace-squashed (``get``, for verbatim quote
    checks) and as chunks (``chunks``, to tell whether the evidence is in the index at all)."""

    def __init__(self, service, tenant: str, state: RunState):
        self.service, self.tenant, self.state = service, tenant, state
        self._chunks: dict[str, list[dict]] = {}
        self._squashed: dict[str, str] = {}

    def chunks(self, filename: str) -> list[dict]:
        if filename not in self._chunks:
            doc_id = self.state.doc_ids.get(filename)
            passages = self.service.kb.document_passages(self.tenant, doc_id) if doc_id else []
            self._chunks[filename] = [{"filename": filename, "page": p.page, "text": p.text} for p in passages]
        return self._chunks[filename]

    def get(self, filename: str, default=None) -> Optional[str]:
        if filename not in self._squashed:
            if filename not in self.state.doc_ids:
                return default
            self._squashed[filename] = merge_overlapping([squash(c["text"]) for c in self.chunks(filename)])
        return self._squashed[filename]


def merge_overlapping(parts: list[str], longest: int = 1500) -> str:
    """Consecutive chunks repeat their overlap: join them so a quote across a chunk boundary is found."""
    acc = ""
    for part in parts:
        if not part:
            continue
        tail = acc[-longest:]
        cut, i = 0, tail.find(part[0])
        while i != -1:
            if len(tail) - i < 20:  # a few shared characters are chance, not the chunk overlap
                break
            if part.startswith(tail[i:]):
                cut = len(tail) - i
                break
            i = tail.find(part[0], i + 1)
        acc += part[cut:]
    return acc


def document_texts(service, tenant: str, state: RunState) -> DocumentTexts:
    return DocumentTexts(service, tenant, state)
