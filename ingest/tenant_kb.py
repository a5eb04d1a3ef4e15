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

    @property
    def embedder(self):
        return self.kb.embedder
