"""Clause search for the rag and long nodes: resolve the documents, then find the clause with the one general
finder (``app.agent.clauses.finder``), read as ``ingest.types.Passage`` objects.

1. ``scope.resolve`` picks the documents the question names and takes the names out of the query.
2. The tenant's taxonomy (built-in kinds and its playbook) names the clause kind the asking part asks about.
3. ``find_units`` ranks whole clause units (numbered sections with their sub-clauses) of those documents;
   a question of no known kind is searched by its own words.
"""
from __future__ import annotations

from app.agent import scope as scope_mod
from app.agent.clauses.finder import find_units
from app.agent.clauses.playbook import taxonomy_for


def find_passages(kb, tenant: str, question: str, k: int = 6, doc_ids: list[str] | None = None,
                  scope: "scope_mod.Scope | None" = None, kind: str | None | bool = False):
    """Clause units best first, as passages (``score``: the fused score; ``text``: the whole unit). ``kind``:
    the kind the question frame read (a name, or None for none); by default the asking part is read here."""
    scope = scope or scope_mod.resolve(kb, tenant, question, doc_ids)
    query = scope.query or question
    kbt = kb.for_tenant(tenant)
    taxonomy = taxonomy_for(kb, tenant)
    kind = taxonomy.match(query, kb.embedder) if kind is False else taxonomy.get(kind)
    return [u.passage() for u in find_units(kbt, query, kind, scope.doc_ids, k, scope.agreements)]
