"""``TenantKB``: the knowledge base as one tenant sees it (``kb.for_tenant(t)``).

The agent holds one of these per question instead of passing ``(kb, tenant, ...)`` through every call: every
read it offers is bound to its tenant, so no node can ask for another tenant's documents by mistake.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TenantKB:
    kb: Any  # ingest.knowledge_base.KnowledgeBase
    tenant: str

    def search(self, query: str, k: int = 6, doc_ids: list[str] | None = None, sparse_query: str | None = None,
               weights: tuple[float, float] | None = None):
        return self.kb.search(self.tenant, query, k=k, doc_ids=doc_ids, sparse_query=sparse_query, weights=weights)

    def document_passages(self, doc_id: str):
        return self.kb.document_passages(self.tenant, doc_id)

    def list_documents(self):
        return self.kb.list_documents(self.tenant)

    def list_tables(self):
        return self.kb.list_tables(self.tenant)

    def run_sql(self, sql: str):
        return self.kb.run_sql(self.tenant, sql)

    def facts(self, doc_ids: list[str] | None = None, sections: bool = False):
        """doc_id -> ``ingest.facts.DocumentFacts`` of the tenant's ingested documents (of ``doc_ids`` when
        given), in file-name order: one query; facts a document lacks are computed and stored on this read.
        ``sections``: with the section trees (left out by default: most reads need only the rest)."""
        from ingest.facts.store import read_facts

        return read_facts(self.kb.engine, self.tenant, doc_ids, sections)

    def document_facts(self, doc_id: str):
        """The facts of one of the tenant's documents (its section tree included), None for an unknown, failed
        or another tenant's id."""
        return self.facts([doc_id], sections=True).get(doc_id)

    def docs_with_words(self, words: list[str], doc_ids: list[str] | None = None) -> dict[str, set[str]]:
        """word -> the tenant's documents (among ``doc_ids``) whose text has it (``ingest.facts.profile``)."""
        from ingest.facts.store import docs_with_words

        return docs_with_words(self.kb.engine, self.tenant, words, doc_ids)

    @property
    def embedder(self):
        return self.kb.embedder
