"""The table catalogue as the BI planner searches it: scope first (the documents the caller passed or the
question names), then the tables ranked by a dense (all-MiniLM-L6-v2) + lexical match of the question
against each table's description (title, section, row labels, column headers and periods, unit).

A table outside the scope is never a candidate: a question that names a company or a file is answered from
that document's tables only.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from app.agent.bi.table import TableView, load_view
from app.agent.text import content_words
from ingest.tables.vectors import table_texts

_NAME_STOP = {"10k", "10q", "8k", "annual", "report", "quarterly", "form", "filing", "pdf", "html", "docx", "xlsx",
              "csv", "txt", "the", "inc", "corp", "ltd", "plc", "llc", "and", "statement", "statements", "financial",
              "earnings", "sample", "data", "document", "extract", "table", "tables", "q1", "q2", "q3", "q4", "fy"}


class VectorCache:
    """Embeddings of short texts (row labels, table descriptions), bounded LRU, thread-safe."""

    def __init__(self, embedder, size: int = 50_000):
        self.embedder = embedder
        self.size = size
        self._lock = threading.Lock()
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()

    def has(self, text: str) -> bool:
        with self._lock:
            return text in self._vecs

    def put(self, texts: list[str], vecs: list) -> None:
        with self._lock:
            for t, v in zip(texts, vecs):
                self._vecs[t] = np.asarray(v, dtype=np.float32)
            while len(self._vecs) > self.size:
                self._vecs.popitem(last=False)

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vecs))
        if missing:
            vecs = self.embedder.encode(missing)
            with self._lock:
                for t, v in zip(missing, vecs):
                    self._vecs[t] = v
                while len(self._vecs) > self.size:
                    self._vecs.popitem(last=False)
        with self._lock:
            return np.stack([self._vecs[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)


_CACHES: dict[int, VectorCache] = {}


def vector_cache(embedder) -> VectorCache:
    key = id(embedder)
    if key not in _CACHES:
        _CACHES[key] = VectorCache(embedder)
    return _CACHES[key]


def name_tokens(filename: str) -> set[str]:
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", filename or "")
    toks = {t.lower() for t in re.split(r"[^A-Za-z0-9]+", stem) if t}
    return {t for t in toks if len(t) > 2 and not t.isdigit() and t not in _NAME_STOP}


def scope_tables(tables: list, question: str, doc_ids: Optional[list[str]]) -> tuple[list, str]:
    """(tables in scope, why). Passed doc_ids restrict first; then a question naming some documents (file
    name words such as a company) restricts to those."""
    if doc_ids:
        tables = [t for t in tables if t.doc_id in set(doc_ids)]
    docs: dict[str, set[str]] = {}
    for t in tables:
        docs.setdefault(t.doc_id, name_tokens(t.filename))
    if len(docs) < 2:
        return tables, "documents passed" if doc_ids else "all documents"
    # names are proper nouns: capitalised words ("Adobe's", "PepsiCo", "3M") other than the first word
    words = re.findall(r"[A-Za-z0-9]+", question)
    qtok = {w.lower() for w in words[1:] if w[0].isupper() or (any(c.isdigit() for c in w) and not w.isdigit())}
    # a token names a document when it is in that document's name but not in every document's name
    common = set.intersection(*docs.values()) if docs else set()
    named = {d for d, toks in docs.items() if (toks - common) & qtok}
    if named:
        return [t for t in tables if t.doc_id in named], "documents named in the question"
    return tables, "documents passed" if doc_ids else "all documents"


def tables_in_scope(kb, tenant: str, tables: list, question: str, doc_ids: Optional[list[str]],
                    cs=None) -> tuple[list, str]:
    """``scope_tables`` after the companies the question names (``company_scope``, or ``cs`` computed): a
    named company no document in scope is about leaves no table; a matched one keeps only its documents'."""
    from app.agent.company_scope import company_scope

    if cs is not None or (kb is not None and tenant):
        cs = cs if cs is not None else company_scope(kb, tenant, question, doc_ids)
        if cs.out_of_scope:
            return [], f"no document in scope is about {', '.join(cs.missing)}"
        if cs.doc_ids:
            return [t for t in tables if t.doc_id in set(cs.doc_ids)], "documents of the company named"
    return scope_tables(tables, question, doc_ids)


@dataclass
class Candidate:
    view: TableView
    score: float  # catalogue-search score of the table


def describe(view: TableView) -> str:
    """The table as one text (``ingest.tables.vectors``: the text its stored vector was embedded from), made once
    per view (views are kept by the knowledge base; each question reads it twice: stored vectors, ranking)."""
    if not view.description:
        view.description = table_texts(view.info)[0]
    return view.description


def load_views(kb, tenant: str, tables: list, cache: dict) -> list[TableView]:
    missing = [t for t in tables if (tenant, t.sql_name) not in cache]
    if missing:
        read = _read(kb, tenant, missing)
        for t in missing:
            res = read.get(t.sql_name)
            try:
                cache[(tenant, t.sql_name)] = load_view(t, res.rows, res.columns) if res is not None else None
            except Exception:  # a table we cannot read is not a candidate
                cache[(tenant, t.sql_name)] = None
    out = [cache[(tenant, t.sql_name)] for t in tables if cache[(tenant, t.sql_name)] is not None]
    _read_stored_vectors(kb, tenant, out)
    return out


def _read(kb, tenant: str, tables: list) -> dict:
    """sql_name -> SqlResult: the knowledge base's batch read when it has one, else one statement a table."""
    reader = getattr(kb, "read_tables", None)
    if reader is not None:
        return reader(tenant, [t.sql_name for t in tables])
    out = {}
    for t in tables:
        try:
            out[t.sql_name] = kb.run_sql(tenant, f'SELECT * FROM "{t.sql_name}" ORDER BY row_num')
        except Exception:  # a table we cannot read is not a candidate
            pass
    return out


def _read_stored_vectors(kb, tenant: str, views: list[TableView]) -> None:
    """The vectors ingest stored for these tables, into the embedder's cache (only the tables not there yet)."""
    reader = getattr(kb, "table_vectors", None)
    embedder = getattr(kb, "embedder", None)
    if reader is None or embedder is None:
        return
    vcache = vector_cache(embedder)
    names = [v.info.sql_name for v in views if not vcache.has(describe(v))]
    if names:
        stored = reader(tenant, names)
        vcache.put(list(stored), list(stored.values()))


def rank_tables(views: list[TableView], phrase: str, vcache: Optional[VectorCache], top: int = 6,
                statements: Optional[list[str]] = None) -> list[Candidate]:
    """Tables by 0.5 * dense cosine + 0.5 * share of the question's words found in the description, + 0.25
    for a table of a statement the question names as its source ("based on the balance sheet")."""
    if not views:
        return []
    words = content_words(phrase)
    descs = [describe(v) for v in views]
    lex = np.array([len(words & content_words(d)) / max(1, len(words)) for d in descs])
    if vcache is not None:
        vecs = vcache.encode([phrase] + descs)
        dense = vecs[1:] @ vecs[0]
    else:
        dense = np.zeros(len(views))
    score = 0.5 * dense + 0.5 * lex
    if statements:
        score = score + 0.25 * np.array([getattr(v.info, "statement", "") in statements for v in views])
    order = np.argsort(-score)[:top]
    return [Candidate(views[i], float(score[i])) for i in order]
