"""One file -> one committed document version (or a recorded failure).

Order of writes, chosen so a crash at any point loses nothing committed and leaves nothing visible
half-done: (1) leftover points of earlier uncommitted attempts are deleted, (2) the new version's
points are upserted into Qdrant (invisible: search only returns chunks that exist in SQL), (3) one SQL
transaction swaps chunks, tables (DDL included) and the document row, (4) the old version's points are
deleted. Ids are deterministic (document from tenant+filename, points from document+version+position),
so a rerun after a crash overwrites rather than duplicates.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import sqlalchemy as sa
from sqlmodel import Session, delete, select

from engine.openmp import oversubscribed
from ingest import chunker
from ingest.chunker import ChunkConfig, TextChunk, chunk_pages
from ingest.detect import ZipLimits, check_zip_bomb, detect_kind
from ingest.embedder import Embedder
from ingest.errors import IngestError
from ingest.facts import at_ingest
from ingest.facts.store import facts_row
from ingest.tables.vectors import embed_document_tables
from ingest.ocr import OcrConfig, tenant_cache
from ingest.models import Chunk, Document, DocumentVersion, TableEntry, Tenant, utcnow
from ingest.parsers import ParsedDocument, parse_file_staged
from ingest.tables.typed import TypedTable, build_typed_table, create_sql_table, drop_sql_table, sql_table_name
from ingest.types import DocumentResult
from ingest.store.vectors import SparseVec, VectorPoint, VectorStore, sparse_document_vector

log = logging.getLogger(__name__)
EMBED_BATCH = 64
READ_AHEAD = 2  # files parsed ahead of the embedder
ID_NAMESPACE = uuid.UUID("6f1c8e2a-5d0b-4c3e-9a57-1e2f3a4b5c6d")


@dataclass
class PipelineLimits:
    max_file_bytes: int
    zip: ZipLimits
    chunk: ChunkConfig
    ocr: OcrConfig = field(default_factory=OcrConfig)  # its cache_dir is the root; each tenant has a folder under it


def document_id(tenant: str, filename: str) -> str:
    return uuid.uuid5(ID_NAMESPACE, f"{tenant}\x00{filename}").hex


def point_id(doc_id: str, version: int, ord_: int) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, f"{doc_id}:{version}:{ord_}"))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_size(path: Path, limits: PipelineLimits) -> None:
    """Before anything reads the whole file (hashing included). Raises IngestError."""
    if not path.is_file():
        raise IngestError(f"file not found: {path}")
    size = path.stat().st_size
    if size == 0:
        raise IngestError("the file is empty (0 bytes)")
    if size > limits.max_file_bytes:
        raise IngestError(
            f"the file is {size / 2**20:.1f} MB, over the {limits.max_file_bytes / 2**20:.0f} MB limit"
        )


def read_and_parse(path: Path, limits: PipelineLimits, ocr: OcrConfig | None = None) -> tuple[str, ParsedDocument]:
    """Checks the real type, guards zip containers, then parses. Raises IngestError."""
    kind, parsed, rest = read_and_parse_staged(path, limits, ocr)
    if rest is not None:
        rest()
    return kind, parsed


def read_and_parse_staged(path: Path, limits: PipelineLimits, ocr: OcrConfig | None = None,
                          on_ocr_page: Callable[[int], None] | None = None
                          ) -> tuple[str, ParsedDocument, Callable[[], None] | None]:
    """``read_and_parse`` up to the page text (what chunking needs, scanned pages OCR'd); the third item, when
    not None, finishes the parse in place (the tables that need pdfplumber, see
    ``ingest.parsers.parse_file_staged``). ``ocr``: default ``limits.ocr`` (the pipeline passes the tenant's)."""
    kind = detect_kind(path)
    if kind in ("docx", "xlsx"):
        check_zip_bomb(path, limits.zip)
    parsed, rest = parse_file_staged(path, kind, ocr or limits.ocr, on_ocr_page)
    _clean(parsed)
    if rest is None:
        return kind, parsed, None

    def finish() -> None:
        rest()
        _clean(parsed)

    return kind, parsed, finish


def _clean(parsed: ParsedDocument) -> None:
    for page in parsed.pages:
        page.text = clean_text(page.text)
    for table in parsed.tables:
        table.rows = [[clean_text(c) if isinstance(c, str) else c for c in row] for row in table.rows]


UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def clean_text(text: str) -> str:
    """NULs and lone surrogates (seen in damaged PDFs) cannot be stored in Postgres; same-length swap keeps offsets."""
    return UNSTORABLE.sub("\ufffd", text) if UNSTORABLE.search(text) else text


@dataclass
class Prepared:
    """A file parsed and chunked, not yet embedded or stored (what the read-ahead thread hands over)."""
    path: Path
    tenant: str
    filename: str
    doc_id: str
    committed_version: int
    kind: str = ""
    digest: str = ""
    size: int = 0
    parsed: ParsedDocument | None = None
    chunks: list[TextChunk] | None = None
    sparse: list[SparseVec] | None = None
    tables: list[TypedTable] | None = None
    result: DocumentResult | None = None  # set when the file needs no further work (unchanged, or failed)
    rest: Callable[[], None] | None = None  # the parse's slow remainder (tables), run by ``complete``
    done: threading.Event = field(default_factory=threading.Event)  # set once tables (and final chunks) are in
    late_error: str | None = None  # what went wrong in ``complete``
    lock: threading.Lock = field(default_factory=threading.Lock)


class DocumentPipeline:
    def __init__(self, engine: sa.Engine, vectors: VectorStore, embedder: Embedder, limits: PipelineLimits):
        self.engine, self.vectors, self.embedder, self.limits = engine, vectors, embedder, limits
        # (filename, page number) as each scanned page of a file is OCR'd, from the read-ahead thread
        self.on_ocr_page: Callable[[str, int], None] | None = None

    def ingest(self, path: Path, tenant: str, filename: str,
               on_stage: Callable[[str, int, int, int], None] | None = None) -> DocumentResult:
        return self.finish(self.prepare(path, tenant, filename), on_stage)

    def prepare(self, path: Path, tenant: str, filename: str, staged: bool = False) -> Prepared:
        """Everything before the first write: size, hash (unchanged files stop here), parse, chunk, tables,
        sparse vectors. Pure Python work that runs on the read-ahead thread, beside the embedder. ``staged``:
        stop after the chunks and leave the slow part of the parse (tables) to ``complete``, which the
        read-ahead thread runs while this file's chunks are embedded."""
        doc_id = document_id(tenant, filename)
        with Session(self.engine) as s:
            existing = s.get(Document, doc_id)
            committed_version = existing.version if existing else 0
            old_hash = existing.content_hash if existing and existing.status == "ingested" else None
            same_ingest = existing is not None and existing.ingest_version == self.ingest_version()
        prep = Prepared(Path(path), tenant, filename, doc_id, committed_version)
        try:
            check_size(prep.path, self.limits)
            prep.digest = file_sha256(prep.path)
            # the same bytes chunked and embedded the same way: nothing to do (a new chunker or embedder re-ingests)
            if old_hash and prep.digest == old_hash and committed_version > 0 and same_ingest:
                prep.result = DocumentResult(filename, "unchanged", doc_id, None, path=str(path))
                return prep
            prep.size = prep.path.stat().st_size
            hook = self.on_ocr_page
            prep.kind, prep.parsed, prep.rest = read_and_parse_staged(
                prep.path, self.limits, tenant_cache(self.limits.ocr, tenant),
                (lambda n: hook(filename, n)) if hook else None)
            self._chunk(prep)
        except IngestError as exc:
            prep.result = DocumentResult(filename, "failed", doc_id, str(exc), path=str(path))
        except Exception as exc:  # noqa: BLE001 - one bad file must never stop the job
            log.exception("ingesting %s failed", filename)
            prep.result = DocumentResult(filename, "failed", doc_id,
                                         f"internal error while ingesting: {type(exc).__name__}: {exc}", path=str(path))
        if prep.result is not None or not staged:
            self.complete(prep)
        return prep

    def _chunk(self, prep: Prepared) -> None:
        chunks = chunk_pages(prep.parsed.pages, self.limits.chunk)
        if not chunks:
            raise IngestError("no text could be extracted from the file")
        sparse = [sparse_document_vector(embedding_text(c)) for c in chunks]
        with prep.lock:  # ``finish`` reads the pair while ``complete`` may replace it
            prep.chunks, prep.sparse = chunks, sparse

    def complete(self, prep: Prepared) -> None:
        """The rest of a staged ``prepare``: the remaining tables (a sideways page read upright changes its
        text, and so the chunks), typed tables. Sets ``prep.done``; errors go to ``prep.late_error``."""
        try:
            if prep.result is None:
                if prep.rest is not None:
                    texts = [p.text for p in prep.parsed.pages]
                    prep.rest()
                    if texts != [p.text for p in prep.parsed.pages]:
                        self._chunk(prep)
                prep.tables = [t for t in (build_typed_table(raw) for raw in prep.parsed.tables) if t is not None]
        except IngestError as exc:
            prep.late_error = str(exc)
        except Exception as exc:  # noqa: BLE001 - one bad file must never stop the job
            log.exception("ingesting %s failed", prep.filename)
            prep.late_error = f"internal error while ingesting: {type(exc).__name__}: {exc}"
        finally:
            prep.rest = None
            prep.done.set()

    def finish(self, prep: Prepared, on_stage: Callable[[str, int, int, int], None] | None = None) -> DocumentResult:
        """Embed, write the points, commit the SQL side (or record the failure)."""
        stage = on_stage or (lambda *_: None)
        tenant, doc_id, filename, committed_version = prep.tenant, prep.doc_id, prep.filename, prep.committed_version
        result = prep.result
        if result is not None and result.status == "unchanged":
            with Session(self.engine) as s:
                doc = s.get(Document, doc_id)
                if doc.error:  # an earlier failed update of this file is now moot
                    doc.error = None
                    s.add(doc)
                    s.commit()
                unchanged = DocumentResult(filename, "unchanged", doc_id, None, doc.pages, doc.n_chunks, doc.n_tables,
                                           str(prep.path))
            self._embed_tables(tenant, doc_id, filename, only_missing=True)  # catalogued before they existed
            return unchanged
        if result is None and self._committed_version(doc_id) != committed_version:
            # the same document was committed after this file was read ahead (a name twice in one job)
            return self.finish(self.prepare(prep.path, tenant, filename), on_stage)
        if result is None:
            result = DocumentResult(filename=filename, status="failed", doc_id=doc_id, path=str(prep.path))
            try:
                with prep.lock:
                    parsed, chunks, sparse = prep.parsed, prep.chunks, prep.sparse
                stage("parsed", len(parsed.pages), len(chunks), 0)
                version = committed_version + 1
                self.vectors.delete_document(tenant, doc_id, keep_version=committed_version or -1)
                self._index(tenant, doc_id, version, chunks, sparse, stage)  # the tables are found meanwhile
                prep.done.wait()
                if prep.late_error:
                    raise IngestError(prep.late_error)
                if prep.chunks is not chunks:  # a sideways page read upright: its chunks are new
                    chunks = prep.chunks
                    self.vectors.delete_document(tenant, doc_id, keep_version=committed_version or -1)
                    self._index(tenant, doc_id, version, chunks, prep.sparse, stage)
                facts = at_ingest(doc_id, filename, version, chunks, prep.tables)  # read once, stored with it
                self._commit(tenant, doc_id, filename, prep.kind, prep.digest, prep.size, version, parsed, chunks,
                             prep.tables, facts)
                self.vectors.delete_document(tenant, doc_id, keep_version=version)
                self._embed_tables(tenant, doc_id, filename, only_missing=False)
                result = DocumentResult(filename, "ingested", doc_id, None, len(parsed.pages), len(chunks),
                                        len(prep.tables), str(prep.path), parsed.warnings)
            except IngestError as exc:
                result.error = str(exc)
            except Exception as exc:  # noqa: BLE001 - one bad file must never stop the job
                log.exception("ingesting %s failed", filename)
                result.error = f"internal error while ingesting: {type(exc).__name__}: {exc}"
        if result.status == "failed":
            self._record_failure(tenant, doc_id, filename, result.error or "unknown error")
            try:  # points of the attempt that failed are invisible anyway; don't let them pile up
                self.vectors.delete_document(tenant, doc_id, keep_version=committed_version or -1)
            except Exception:  # noqa: BLE001 - the next ingest of this file cleans them too
                log.exception("could not remove the points of a failed attempt for %s", filename)
        return result

    def _embed_tables(self, tenant: str, doc_id: str, filename: str, only_missing: bool) -> None:
        """The BI planner's table vectors (``ingest.tables.vectors``); a failure leaves them to the first read."""
        try:
            embed_document_tables(self.engine, self.embedder, tenant, doc_id, filename, only_missing)
        except Exception:  # noqa: BLE001 - the document is committed; its tables are embedded when first read
            log.exception("could not embed the tables of %s", filename)

    def ingest_version(self) -> str:
        """What a document's chunks and vectors depend on besides its bytes: chunker version and settings,
        embedding model. Stored per document version; a file whose stored value differs is re-ingested."""
        cfg = self.limits.chunk
        return (f"chunker {chunker.CHUNKER_VERSION} ({cfg.max_tokens}/{cfg.overlap} tokens); "
                f"embedder {self.embedder.model_path.name}")

    def _committed_version(self, doc_id: str) -> int:
        with Session(self.engine) as s:
            doc = s.get(Document, doc_id)
            return doc.version if doc else 0

    def _index(self, tenant: str, doc_id: str, version: int, chunks: list[TextChunk], sparse: list[SparseVec],
               stage) -> None:
        batch = EMBED_BATCH
        for s in range(0, len(chunks), batch):
            part = chunks[s:s + batch]
            dense = self.embedder.encode([embedding_text(c) for c in part], release_pool=False,
                                         busy_cores=self._busy_cores())
            self.vectors.upsert([
                VectorPoint(point_id(doc_id, version, c.ord), dense[i], sparse[s + i],
                            {"tenant": tenant, "doc_id": doc_id, "version": version, "ord": c.ord})
                for i, c in enumerate(part)
            ])
            stage("embedded", 0, len(chunks), s + len(part))

    def _busy_cores(self) -> int:
        """Cores the embedder's OpenMP team leaves to other work (see Embedder.encode): all but one while the
        machine is oversubscribed (1-minute load average over the CPU count + 1, i.e. more than this pipeline's
        own threads), where a team waits at every barrier for a member the OS has parked: bench_ingest at load 21
        on 2 cores, 100 chunks took 23 s with a team of 2 and 15 s with one thread. Otherwise none, also while
        the read-ahead thread parses: since the ruled-table search reads pdfium's paths, parsing is 15-21% of
        embedding's CPU, and a team of one for the whole of a parse cost more than the parse takes from it (quiet
        machine, 2 filings: pipeline 0.70x of embedding alone with the core given up, 0.91x without; 4 filings:
        0.79x and 0.74x, the same pipeline wall time)."""
        return (os.cpu_count() or 1) if oversubscribed() else 0

    def _commit(self, tenant, doc_id, filename, kind, digest, size, version, parsed, chunks, tables, facts) -> None:
        with Session(self.engine) as s:
            conn = s.connection()
            if s.get(Tenant, tenant) is None:
                s.add(Tenant(id=tenant))
            for entry in s.exec(select(TableEntry).where(TableEntry.doc_id == doc_id)).all():
                drop_sql_table(conn, entry.sql_name)
                s.delete(entry)
            s.exec(delete(Chunk).where(Chunk.doc_id == doc_id))
            s.add_all([Chunk(id=point_id(doc_id, version, c.ord), doc_id=doc_id, tenant=tenant, version=version,
                             ord=c.ord, page=c.page, section=c.section[:500], text=c.text, char_start=c.char_start,
                             char_end=c.char_end) for c in chunks])
            for idx, table in enumerate(tables, start=1):
                name = sql_table_name(table.title, doc_id, version, idx)
                drop_sql_table(conn, name)  # a leftover of a crashed attempt on engines without DDL rollback
                create_sql_table(conn, name, table)
                s.add(_catalogue_entry(name, tenant, doc_id, version, table))
            doc = s.get(Document, doc_id) or Document(id=doc_id, tenant=tenant, filename=filename)
            doc.kind, doc.status, doc.error, doc.content_hash, doc.version = kind, "ingested", None, digest, version
            doc.ingest_version = self.ingest_version()
            doc.pages, doc.n_chunks, doc.n_tables, doc.size_bytes, doc.updated_at = (
                len(parsed.pages), len(chunks), len(tables), size, utcnow())
            s.add(doc)
            s.add(DocumentVersion(doc_id=doc_id, version=version, content_hash=digest, pages=len(parsed.pages),
                                  n_chunks=len(chunks), ingest_version=doc.ingest_version))
            s.merge(facts_row(facts[0], tenant, digest, facts[1]))
            s.commit()

    def _record_failure(self, tenant: str, doc_id: str, filename: str, error: str) -> None:
        """A failed new file gets a 'failed' row; a failed update keeps the good version and notes the error."""
        try:
            with Session(self.engine) as s:
                if s.get(Tenant, tenant) is None:
                    s.add(Tenant(id=tenant))
                doc = s.get(Document, doc_id)
                if doc is None:
                    doc = Document(id=doc_id, tenant=tenant, filename=filename, status="failed")
                doc.error = error if doc.version == 0 else f"update failed, previous version kept: {error}"
                doc.updated_at = utcnow()
                s.add(doc)
                s.commit()
        except Exception:  # noqa: BLE001 - the job item still records the error
            log.exception("could not record the failure of %s", filename)


def _catalogue_entry(name: str, tenant: str, doc_id: str, version: int, table: TypedTable) -> TableEntry:
    return TableEntry(sql_name=name, tenant=tenant, doc_id=doc_id, version=version, page=table.page,
                      title=table.title[:500], unit=table.unit, columns_json=table.columns_json(),
                      n_rows=len(table.rows), meta_json=table.meta_json())


def embedding_text(chunk: TextChunk) -> str:
    if chunk.section and chunk.section.lower() not in chunk.text[: len(chunk.section) + 20].lower():
        return f"{chunk.section}\n{chunk.text}"
    return chunk.text
