"""Clause search: resolve the documents, then look inside them for what is asked.

1. ``scope.resolve`` picks the documents the question names and takes the names out of the query.
2. The de-named query (plus, for a known clause type, its usual wordings) goes to the hybrid dense+sparse
   search, restricted to those documents.
3. Within a small scope every chunk of the documents is a candidate too, so a clause the embedding misses is
   still found by its wording. Each candidate's score fuses its search rank, the clause type's wordings in its
   text, a heading/section that names the clause type, and the query's content words in its section label.
"""
from __future__ import annotations

from dataclasses import replace

from app.agent import clause_types, scope as scope_mod
from app.agent.text import content_words

SEARCH_K = 30
SCAN_MAX_DOCS = 5  # scan every chunk of the scoped documents when there are at most this many
W_RANK, W_TEXT, W_HEAD, W_SECTION, W_OPENING = 1.0, 0.55, 0.6, 0.25, 1.2


def _rank_score(rank: int) -> float:
    return 1.0 / (1.0 + rank / 4.0)


def find_passages(kb, tenant: str, question: str, k: int = 6, doc_ids: list[str] | None = None,
                  scope: "scope_mod.Scope | None" = None):
    """Passages best first (``ingest.types.Passage`` with ``score`` set to the fused score)."""
    scope = scope or scope_mod.resolve(kb, tenant, question, doc_ids)
    query = scope.query or question
    ctype = clause_types.detect(query)
    docs = scope.doc_ids
    ranks: dict[str, float] = {}
    passages: dict[str, object] = {}
    queries = [query] + ([f"{ctype.expansion} {query}"] if ctype else [])
    for qi, q in enumerate(queries):
        for rank, p in enumerate(kb.search(tenant, q, k=SEARCH_K, doc_ids=docs)):
            passages.setdefault(p.chunk_id, p)
            ranks[p.chunk_id] = ranks.get(p.chunk_id, 0.0) + _rank_score(rank) / len(queries)
    opening: dict[str, int] = {}  # chunk -> position in its document (scanned documents only)
    if docs and len(docs) <= SCAN_MAX_DOCS:
        for d in docs:
            for pos, p in enumerate(kb.document_passages(tenant, d)):
                passages.setdefault(p.chunk_id, p)
                opening[p.chunk_id] = pos
    qwords = content_words(query)
    scored = []
    for cid, p in passages.items():
        s = W_RANK * ranks.get(cid, 0.0)
        if ctype is not None:
            s += W_TEXT * ctype.text_score(p.text)
            if ctype.heading_match(p.section or "") or ctype.heading_match(p.text[:80]):
                s += W_HEAD
            if ctype.slot in ("parties", "date") and opening.get(cid, 99) < 2:
                s += W_OPENING * (1.0 if opening[cid] == 0 else 0.5)
        elif qwords and p.section:
            s += W_SECTION * len(qwords & content_words(p.section)) / len(qwords)
        scored.append((s, -opening.get(cid, 0), cid))
    scored.sort(key=lambda x: (-x[0], -x[1]))
    return [replace(passages[cid], score=float(s)) for s, _, cid in scored[:k]]
