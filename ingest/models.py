"""SQLModel metadata: tenants, documents, their versions, chunks, the table catalogue and ingestion jobs.

Physical SQL tables extracted from financial statements are not declared here: they are created per
document version by ``ingest.tables.typed`` and listed in ``TableEntry`` (the catalogue the BI agent reads).
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Tenant(SQLModel, table=True):
    __tablename__ = "lx_tenants"
    id: str = Field(primary_key=True, max_length=128)
    created_at: datetime = Field(default_factory=utcnow)


class Document(SQLModel, table=True):
    __tablename__ = "lx_documents"
    id: str = Field(primary_key=True, max_length=40)  # deterministic from (tenant, filename)
    tenant: str = Field(index=True, max_length=128)
    filename: str  # the user's name in full (NFC), any length: only data, never a path on disk
    kind: str = Field(default="", max_length=16)  # pdf | docx | html | text | xlsx | csv
    status: str = Field(default="ingested", max_length=16)  # ingested | failed
    error: Optional[str] = None  # last failure; kept next to an older good version when an update fails
    content_hash: str = Field(default="", max_length=64)
    ingest_version: str = Field(default="", max_length=200)  # chunker + embedder it was ingested with
    version: int = 0  # the committed version; 0 = none yet
    pages: int = 0
    n_chunks: int = 0
    n_tables: int = 0
    size_bytes: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class DocumentVersion(SQLModel, table=True):
    __tablename__ = "lx_document_versions"
    id: Optional[int] = Field(default=None, primary_key=True)
    doc_id: str = Field(index=True, max_length=40)
    version: int
    content_hash: str = Field(max_length=64)
    ingest_version: str = Field(default="", max_length=200)  # see ingest.pipeline.DocumentPipeline.ingest_version
    pages: int = 0
    n_chunks: int = 0
    created_at: datetime = Field(default_factory=utcnow)


class Chunk(SQLModel, table=True):
    __tablename__ = "lx_chunks"
    id: str = Field(primary_key=True, max_length=40)  # also the Qdrant point id
    doc_id: str = Field(index=True, max_length=40)
    tenant: str = Field(index=True, max_length=128)
    version: int
    ord: int  # position in the document
    page: int
    section: str = ""
    text: str
    char_start: int  # offsets into the document's extracted text (pages joined by "\n\n")
    char_end: int


class TableEntry(SQLModel, table=True):
    __tablename__ = "lx_tables"
    sql_name: str = Field(primary_key=True, max_length=63)
    tenant: str = Field(index=True, max_length=128)
    doc_id: str = Field(index=True, max_length=40)
    version: int
    page: int
    title: str = ""
    unit: str = ""  # table-level unit such as "USD thousands"
    columns_json: str  # [{"name", "label", "sql_type", "unit", "role", "period", ...}]
    n_rows: int = 0
    meta_json: Optional[str] = None  # section, statement, scale, currency, bbox, rows (ingest.tables.catalogue)
    vector_texts: Optional[str] = None  # JSON list: the texts the BI planner embeds (ingest.tables.vectors)
    vectors: Optional[bytes] = None  # their embeddings, float16, in that order


class DocumentFactsRow(SQLModel, table=True):
    """What a document is, read once per version (``ingest.facts``): profile, filing, fiscal calendar, column
    periods as JSON, the section tree as JSON of its own; ``words``: the words of its whole text, space-delimited with a space at each
    end (``LIKE '% word %'`` finds the documents naming a word)."""
    __tablename__ = "lx_document_facts"
    doc_id: str = Field(primary_key=True, max_length=40)
    tenant: str = Field(index=True, max_length=128)
    version: int
    content_hash: str = Field(default="", max_length=64)
    facts_version: str = Field(default="", max_length=16)  # ingest.facts.FACTS_VERSION it was computed by
    facts_json: str
    sections_json: str = ""  # the section tree (ingest.facts.sections), read only where it is used
    words: str = ""


class Job(SQLModel, table=True):
    __tablename__ = "lx_jobs"
    id: str = Field(primary_key=True, max_length=40)
    tenant: str = Field(index=True, max_length=128)
    signature: str = Field(index=True, max_length=64)  # hash of the file list, to find a job to resume
    status: str = Field(default="pending", max_length=16)  # pending | running | done | failed
    total: int = 0
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None


class JobItem(SQLModel, table=True):
    __tablename__ = "lx_job_items"
    id: Optional[int] = Field(default=None, primary_key=True)
    job_id: str = Field(index=True, max_length=40)
    seq: int
    path: str
    filename: str  # as lx_documents.filename
    status: str = Field(default="pending", max_length=16)  # pending | ingested | unchanged | failed
    error: Optional[str] = None
    doc_id: Optional[str] = Field(default=None, max_length=40)
    pages: int = 0
    chunks: int = 0
    tables: int = 0
