"""Document facts in SQL (``lx_document_facts``): written with each new version at ingest; for a document
ingested before facts existed (or computed by an older ``FACTS_VERSION``), computed on its first read from its
stored chunks and table catalogue and written, once. Every read is filtered by tenant.
"""
from __future__ import annotations

import json
import logging
from typing import Optional

import sqlalchemy as sa
from sqlmodel import Session, col, select

from ingest.facts import FACTS_VERSION, ChunkText, DocumentFacts, TableColumns, compute
from ingest.models import Chunk, Document, DocumentFactsRow, TableEntry

log = logging.getLogger(__name__)


def facts_row(facts: DocumentFacts, tenant: str, content_hash: str, words: set[str]) -> DocumentFactsRow:
    return DocumentFactsRow(doc_id=facts.doc_id, tenant=tenant, version=facts.version, content_hash=content_hash,
                            facts_version=FACTS_VERSION, facts_json=facts.to_json(), sections_json=facts.sections_json,
                            words=vocabulary_text(words))


def vocabulary_text(words: set[str]) -> str:
    return " " + " ".join(sorted(w for w in words if " " not in w)) + " "


def read_facts(engine, tenant: str, doc_ids: Optional[list[str]] = None,
               sections: bool = False) -> dict[str, DocumentFacts]:
    """doc_id -> facts of the tenant's ingested documents (those of ``doc_ids`` when given), in file-name order:
    one query; documents without current facts have them computed and stored here. ``sections``: read the
    section trees too (otherwise ``DocumentFacts.sections`` is empty for stored facts)."""
    with Session(engine) as s:
        q = (select(Document.id, Document.filename, Document.version, Document.content_hash,
                    DocumentFactsRow.version, DocumentFactsRow.content_hash, DocumentFactsRow.facts_version,
                    DocumentFactsRow.facts_json, DocumentFactsRow.sections_json if sections else sa.literal(""))
             .join(DocumentFactsRow, DocumentFactsRow.doc_id == Document.id, isouter=True)
             .where(Document.tenant == tenant, Document.status == "ingested", Document.version > 0))
        if doc_ids:
            q = q.where(col(Document.id).in_(list(doc_ids)))
        rows = s.exec(q.order_by(Document.filename)).all()
    out: dict[str, DocumentFacts] = {}
    for doc_id, filename, version, content_hash, f_version, f_hash, f_facts_version, facts_json, sections_json in rows:
        if (f_version, f_hash, f_facts_version) == (version, content_hash, FACTS_VERSION):
            out[doc_id] = DocumentFacts.from_json(doc_id, filename, version, facts_json, sections_json or "[]")
        else:
            out[doc_id] = compute_stored(engine, doc_id)
    return out


def compute_stored(engine, doc_id: str) -> DocumentFacts:
    """The facts of an already stored document version, from its chunks and catalogue entries; written back
    (a failure to write is logged: the facts are still returned)."""
    with Session(engine) as s:
        doc = s.get(Document, doc_id)
        chunks = s.exec(select(Chunk).where(Chunk.doc_id == doc.id, Chunk.version == doc.version)
                        .order_by(Chunk.ord)).all()
        entries = s.exec(select(TableEntry).where(TableEntry.doc_id == doc.id, TableEntry.version == doc.version)
                         .order_by(TableEntry.sql_name)).all()
        texts = [ChunkText(c.ord, c.page, c.section, c.text) for c in chunks]
        tables = [table_columns(e.sql_name, e.columns_json, e.meta_json) for e in entries]
    facts, words = compute(doc.id, doc.filename, doc.version, texts, tables)
    try:
        with Session(engine) as s:
            current = s.get(Document, doc.id)
            if current is not None and current.version == doc.version and current.content_hash == doc.content_hash:
                s.merge(facts_row(facts, doc.tenant, doc.content_hash, words))
                s.commit()
    except Exception:  # noqa: BLE001 - a read-only or busy database: computed again next time
        log.exception("could not store the facts of %s", doc.filename)
    return facts


def table_columns(sql_name: str, columns_json: str, meta_json: Optional[str]) -> TableColumns:
    meta = json.loads(meta_json or "{}")
    return TableColumns(sql_name, json.loads(columns_json or "[]"), list(meta.get("rows") or []))


def docs_with_words(engine, tenant: str, words: list[str], doc_ids: Optional[list[str]] = None) -> dict[str, set[str]]:
    """word -> the tenant's documents (among ``doc_ids``) whose text has that word (``ingest.facts.profile``
    vocabulary: lower-cased name words and initial pairs). Facts must have been read first (``read_facts``)."""
    out: dict[str, set[str]] = {}
    with Session(engine) as s:
        for w in dict.fromkeys(words):
            if not w or " " in w:
                out[w] = set()
                continue
            pattern = "% " + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + " %"
            q = (select(DocumentFactsRow.doc_id).join(Document, Document.id == DocumentFactsRow.doc_id)
                 .where(DocumentFactsRow.tenant == tenant, Document.tenant == tenant,
                        Document.version == DocumentFactsRow.version,
                        col(DocumentFactsRow.words).like(pattern, escape="\\")))
            if doc_ids:
                q = q.where(col(DocumentFactsRow.doc_id).in_(list(doc_ids)))
            out[w] = set(s.exec(q).all())
    return out


def add_facts_columns(engine) -> None:
    """A facts table created before ``sections_json`` existed gets the column, empty (such rows are computed
    again on their next read: their ``facts_version`` is older)."""
    if "sections_json" not in {c["name"] for c in sa.inspect(engine).get_columns("lx_document_facts")}:
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE lx_document_facts ADD COLUMN sections_json TEXT NOT NULL DEFAULT ''")
