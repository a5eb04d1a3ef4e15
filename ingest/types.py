"""Plain result types of the ingest API (see docs/contracts.md, section "ingest")."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass
class DocumentResult:
    filename: str
    status: str  # ingested | unchanged | failed
    doc_id: Optional[str] = None
    error: Optional[str] = None
    pages: int = 0
    chunks: int = 0
    tables: int = 0
    path: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass
class IngestSummary:
    job_id: str
    results: list[DocumentResult]
    seconds: float = 0.0

    @property
    def files(self) -> int:
        return len(self.results)

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def ingested(self) -> int:
        return self.count("ingested")

    @property
    def unchanged(self) -> int:
        return self.count("unchanged")

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def pages(self) -> int:
        return sum(r.pages for r in self.results if r.status == "ingested")

    @property
    def chunks(self) -> int:
        return sum(r.chunks for r in self.results if r.status == "ingested")

    @property
    def tables(self) -> int:
        return sum(r.tables for r in self.results if r.status == "ingested")


@dataclass
class DocumentInfo:
    id: str
    filename: str
    status: str
    error: Optional[str]
    pages: int
    chunks: int
    tables: int
    version: int = 0
    kind: str = ""
    content_hash: str = ""
    updated_at: Any = None
    ingest_version: str = ""  # chunker + embedder it was indexed with (ingest.pipeline.ingest_version)


@dataclass
class Passage:
    chunk_id: str
    doc_id: str
    filename: str
    page: int
    section: str
    text: str
    score: float
    char_start: int
    char_end: int
    quote: str = ""  # the sentence(s) of it that best state what was searched for, where a reader picked them
    # where a text joined from several chunks moves to another page or section: ((offset in text, page, section),
    # ...), so a quote from further in is cited with its own page and section, not the first chunk's
    marks: tuple = ()


@dataclass
class ColumnInfo:
    name: str
    sql_type: str  # REAL | TEXT
    unit: str = ""
    label: str = ""  # the header as printed, e.g. "2024"
    # table catalogue (docs/contracts.md "Table catalogue")
    role: str = "value"  # label | value | text
    period: str = ""  # "2021", "FY2019", "Q4 2024", "2023-06-30" (instant), "6M 2023-06-30"
    period_end: str = ""  # ISO date or ""
    period_months: int = 0  # 12, 3, 6, 9; 0 = instant or unknown
    fiscal_year: int = 0
    fiscal_quarter: int = 0
    scale: str = ""  # "" | thousands | millions | billions
    currency: str = ""


@dataclass
class RowInfo:
    row_num: int
    label: str
    parent: str = ""  # the section row above ("Current assets")
    is_total: bool = False
    unit: str = ""  # per-row override, e.g. "USD per share", "shares", "%"
    scale: str = ""  # per-row override; per-share rows ""


@dataclass
class TableInfo:
    sql_name: str
    doc_id: str
    filename: str
    page: int
    title: str
    columns: list[ColumnInfo]
    n_rows: int
    unit: str = ""
    section: str = ""
    statement: str = ""  # income_statement | balance_sheet | cash_flow | equity | ""
    scale: str = ""
    currency: str = ""
    bbox: Optional[tuple[float, float, float, float]] = None  # PDF points (x0, top, x1, bottom), top-left origin
    label_column: str = ""
    rows: list[RowInfo] = field(default_factory=list)
    periods: list[str] = field(default_factory=list)


@dataclass
class SqlResult:
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = False


@dataclass
class JobItemInfo:
    seq: int
    filename: str
    status: str
    error: Optional[str]
    doc_id: Optional[str]
    pages: int = 0
    chunks: int = 0
    tables: int = 0


@dataclass
class JobInfo:
    id: str
    tenant: str
    status: str  # pending | running | done
    total: int
    done: int
    failed: int
    items: list[JobItemInfo]
    created_at: Any = None
    finished_at: Any = None


@dataclass
class ProgressEvent:
    """Reported while a job runs. stage: job_start | file_start | parsed | embedded | file_done | job_done, and
    ocr_page (one scanned page of ``filename`` read by OCR, ``pages`` its number; from the read-ahead thread,
    so it may come before that file's file_start)."""
    stage: str
    job_id: str
    file_index: int  # 0-based position of the file in the job
    total_files: int
    filename: str = ""
    pages: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    result: Optional[DocumentResult] = None


ProgressCallback = Callable[[ProgressEvent], None]


@dataclass
class VersionInfo:
    """One committed version of a document (uploading a file under an existing name adds one)."""
    version: int
    content_hash: str
    pages: int
    chunks: int
    created_at: Any = None
