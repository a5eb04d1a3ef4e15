"""KnowledgeBase: the one facade over parsing, SQL metadata, typed tables and hybrid vector search.

One per process (one process owns the embedded Qdrant Edge shard). Thread-safe: ingestion is serialised by
a lock, searches and SQL reads run concurrently (the vector store and the embedder have their own locks).
Every read is filtered by tenant twice: in the Qdrant query and again against the SQL rows.
"""
from __future__ import annotations

import json
import threading
import time
from contextlib import closing
from pathlib import Path

from sqlmodel import Session, col, delete, select

from ingest import jobs
from ingest.chunker import ChunkConfig
from ingest.detect import ZipLimits
from ingest.embedder import Embedder, shared_embedder
from ingest.ocr import OcrConfig
from ingest.models import Chunk, Document, DocumentFactsRow, DocumentVersion, TableEntry
from ingest.pipeline import DocumentPipeline, PipelineLimits
from ingest.read_ahead import read_ahead
from ingest.sql_guard import run_readonly
from ingest.store.sql import make_engine
from ingest.tables.catalogue import table_info
from ingest.tables.typed import drop_sql_table
from ingest.tenant_kb import TenantKB
from ingest.types import (
    ColumnInfo, DocumentInfo, DocumentResult, IngestSummary, JobInfo, Passage, ProgressCallback, ProgressEvent,
    SqlResult, TableInfo, VersionInfo,
)
from engine.openmp import release_thread_pool
from ingest.store.vectors import open_vector_store, sparse_query_vector


class KnowledgeBase:
    def __init__(self, settings, embedder: Embedder | None = None):
        self.settings = settings
        settings.ensure_dirs()
        self.engine = make_engine(settings.resolved_database_url)
        self.embedder = embedder or shared_embedder(settings.resolved_embedding_model)
        # Qdrant Edge under data_dir (an old qdrant-client local store there is migrated once), or a server
        self.vectors = open_vector_store(settings.qdrant_collection, self.embedder.dim, url=settings.qdrant_url,
                                         data_dir=settings.data_dir, migrate_from=settings.qdrant_path)
        limits = PipelineLimits(
            max_file_bytes=settings.max_file_mb * 2**20,
            zip=ZipLimits(max_uncompressed_bytes=settings.max_uncompressed_mb * 2**20),
            chunk=ChunkConfig(settings.chunk_tokens, settings.chunk_overlap),
            ocr=OcrConfig(cache_dir=settings.data_dir / "ocr"),  # scanned pages; cache per tenant (ingest/ocr.py)
        )
        self.pipeline = DocumentPipeline(self.engine, self.vectors, self.embedder, limits)
        self._write_lock = threading.RLock()
        self._closed = False
        # values readers derive from stored rows (e.g. the agent's parsed table views), keyed by versioned names
        self.derived: dict = {}

    # ---- ingestion -------------------------------------------------------------------------------
    def create_job(self, paths: list[Path], tenant: str, filenames: list[str] | None = None) -> str:
        """Commit a job for these files (or find the unfinished one for the same files) and return its id."""
        items = jobs.expand_paths(list(paths)) if filenames is None else list(zip(map(Path, paths), filenames))
        return jobs.create_or_resume(self.engine, tenant, items)

    def run_job(self, job_id: str, progress: ProgressCallback | None = None) -> IngestSummary:
        """Process a job's pending files; safe to call again after a crash."""
        report = progress or (lambda _e: None)
        start = time.perf_counter()
        with self._write_lock:
            info = jobs.job_info(self.engine, job_id)
            if info is None:
                raise KeyError(f"no job {job_id}")
            tenant, total = info.tenant, info.total
            jobs.set_job_status(self.engine, job_id, "running")
            report(ProgressEvent("job_start", job_id, info.done, total))
            pending = jobs.pending_items(self.engine, job_id)
            self.pipeline.on_ocr_page = lambda name, page: report(ProgressEvent("ocr_page", job_id, 0, total, name, page))
            try:
                # the next files are parsed on a read-ahead thread while this one is embedded and stored
                prepared = closing(read_ahead(self.pipeline, [(Path(i.path), i.filename) for i in pending], tenant))
                with prepared:
                    for item, prep in zip(pending, prepared.thing):
                        report(ProgressEvent("file_start", job_id, item.seq, total, item.filename))

                        def on_stage(stage, pages, chunks, embedded, _item=item):
                            report(ProgressEvent(stage, job_id, _item.seq, total, _item.filename, pages, chunks,
                                                 embedded))

                        result = self.pipeline.finish(prep, on_stage)
                        jobs.record_item(self.engine, item.id, result)
                        report(ProgressEvent("file_done", job_id, item.seq, total, item.filename, result.pages,
                                             result.chunks, result.chunks, result))
                self.vectors.optimize()  # HNSW for what this job added (see ingest/store/edge.py)
            finally:
                release_thread_pool()  # the embedder kept this thread's OpenMP pool between batches
            jobs.set_job_status(self.engine, job_id, "done")
        results = [DocumentResult(i.filename, i.status, i.doc_id, i.error, i.pages, i.chunks, i.tables, i.path)
                   for i in jobs.all_items(self.engine, job_id)]
        summary = IngestSummary(job_id, results, time.perf_counter() - start)
        report(ProgressEvent("job_done", job_id, total, total))
        return summary

    def resume_unfinished_jobs(self, progress: ProgressCallback | None = None) -> list[IngestSummary]:
        """Finish every job a crash or kill left open (all tenants, oldest first); call once at start."""
        return [self.run_job(job_id, progress) for job_id in jobs.open_job_ids(self.engine)]

    def ingest_paths(self, paths, tenant: str, progress: ProgressCallback | None = None) -> IngestSummary:
        return self.run_job(self.create_job([Path(p) for p in paths], tenant), progress)

    def ingest_file(self, path, tenant: str, filename: str | None = None) -> DocumentResult:
        path = Path(path)
        job_id = self.create_job([path], tenant, [filename or path.name])
        return self.run_job(job_id).results[0]

    # ---- documents -------------------------------------------------------------------------------
    def list_documents(self, tenant: str) -> list[DocumentInfo]:
        with Session(self.engine) as s:
            docs = s.exec(select(Document).where(Document.tenant == tenant).order_by(Document.filename)).all()
            return [DocumentInfo(d.id, d.filename, d.status, d.error, d.pages, d.n_chunks, d.n_tables, d.version,
                                 d.kind, d.content_hash, d.updated_at, d.ingest_version) for d in docs]

    def document_versions(self, tenant: str, doc_id: str) -> list[VersionInfo] | None:
        """The document's committed versions, oldest first; None for an unknown or another tenant's id."""
        with Session(self.engine) as s:
            doc = s.get(Document, doc_id)
            if doc is None or doc.tenant != tenant:
                return None
            rows = s.exec(select(DocumentVersion).where(DocumentVersion.doc_id == doc_id)
                          .order_by(DocumentVersion.version)).all()
            return [VersionInfo(v.version, v.content_hash, v.pages, v.n_chunks, v.created_at) for v in rows]

    def delete_document(self, tenant: str, doc_id: str) -> bool:
        with self._write_lock:
            with Session(self.engine) as s:
                doc = s.get(Document, doc_id)
                if doc is None or doc.tenant != tenant:
                    return False
                conn = s.connection()
                for entry in s.exec(select(TableEntry).where(TableEntry.doc_id == doc_id)).all():
                    drop_sql_table(conn, entry.sql_name)
                    s.delete(entry)
                s.exec(delete(Chunk).where(Chunk.doc_id == doc_id))
                s.exec(delete(DocumentVersion).where(DocumentVersion.doc_id == doc_id))
                s.exec(delete(DocumentFactsRow).where(DocumentFactsRow.doc_id == doc_id))
                s.delete(doc)
                s.commit()
            # after the commit: points without SQL rows are never returned, so a crash here is harmless
            self.vectors.delete_document(tenant, doc_id)
            return True

    # ---- retrieval -------------------------------------------------------------------------------
    def for_tenant(self, tenant: str) -> "TenantKB":
        """Every read bound to ``tenant`` (the agent's face of the knowledge base)."""
        return TenantKB(self, tenant)

    def search(self, tenant: str, query: str, k: int = 6, doc_ids: list[str] | None = None,
               sparse_query: str | None = None, weights: tuple[float, float] | None = None) -> list[Passage]:
        """Hybrid search: ``query`` embedded (dense) and ``sparse_query`` (default: ``query``) as BM25 terms,
        fused by RRF with (dense, sparse) ``weights`` (default equal), within the tenant (and ``doc_ids``)."""
        if not query or not query.strip() or k <= 0:
            return []
        dense = self.embedder.encode([query])[0]
        sparse = sparse_query_vector(query if sparse_query is None else sparse_query)
        hits = self.vectors.search(tenant, dense, sparse, limit=k * 2, doc_ids=doc_ids, weights=weights)
        if not hits:
            return []
        with Session(self.engine) as s:
            rows = s.exec(select(Chunk, Document).where(col(Chunk.id).in_([h[0] for h in hits]),
                                                        Chunk.tenant == tenant, Document.id == Chunk.doc_id,
                                                        Document.version == Chunk.version)).all()
        by_id = {c.id: (c, d) for c, d in rows}
        out = []
        for pid, score in hits:
            if pid in by_id:  # points of uncommitted or replaced versions have no row here
                c, d = by_id[pid]
                out.append(_passage(c, d.filename, score))
        return out[:k]

    def document_passages(self, tenant: str, doc_id: str) -> list[Passage]:
        with Session(self.engine) as s:
            doc = s.get(Document, doc_id)
            if doc is None or doc.tenant != tenant:
                return []
            chunks = s.exec(select(Chunk).where(Chunk.doc_id == doc_id, Chunk.version == doc.version)
                            .order_by(Chunk.ord)).all()
            return [_passage(c, doc.filename, 1.0) for c in chunks]

    # ---- tables ----------------------------------------------------------------------------------
    def list_tables(self, tenant: str) -> list[TableInfo]:
        from sqlalchemy.orm import defer

        with Session(self.engine) as s:  # the stored vectors stay on disk: ``table_vectors`` reads those asked
            rows = s.exec(select(TableEntry, Document).where(TableEntry.tenant == tenant,
                                                             Document.id == TableEntry.doc_id)
                          .options(defer(TableEntry.vectors), defer(TableEntry.vector_texts))
                          .order_by(Document.filename, TableEntry.page, TableEntry.sql_name)).all()
        return [table_info(t, d.filename) for t, d in rows]

    def table_vectors(self, tenant: str, sql_names: list[str]) -> dict:
        """text -> embedding of what the BI planner embeds for these tables of the tenant (stored at ingest;
        a table catalogued before they existed is embedded here, once)."""
        from ingest.tables.vectors import stored_vectors

        return stored_vectors(self.engine, self.embedder, tenant, sql_names) if sql_names else {}

    def read_tables(self, tenant: str, sql_names: list[str]) -> dict[str, SqlResult]:
        """Every row of each of these catalogued tables of the tenant (``SELECT * ... ORDER BY row_num``), in
        one connection; a name that is not the tenant's table is left out. For the planner reading whole tables:
        ``run_sql`` checks each statement against the tenant's catalogue, once per call."""
        with Session(self.engine) as s:
            mine = set(s.exec(select(TableEntry.sql_name).where(TableEntry.tenant == tenant,
                                                                col(TableEntry.sql_name).in_(list(sql_names)))).all())
        out: dict[str, SqlResult] = {}
        with self.engine.connect() as conn:
            for name in sql_names:
                if name in mine:  # a catalogue name (lower-case letters, digits, "_"), quoted
                    res = conn.exec_driver_sql(f'SELECT * FROM "{name}" ORDER BY row_num')
                    out[name] = SqlResult(list(res.keys()), [list(r) for r in res.fetchall()])
        return out

    def run_sql(self, tenant: str, sql: str) -> SqlResult:
        with Session(self.engine) as s:
            allowed = set(s.exec(select(TableEntry.sql_name).where(TableEntry.tenant == tenant)).all())
        return run_readonly(self.engine, sql, allowed)

    # ---- jobs ------------------------------------------------------------------------------------
    def get_job(self, job_id: str) -> JobInfo | None:
        return jobs.job_info(self.engine, job_id)

    def list_jobs(self, tenant: str) -> list[JobInfo]:
        return [j for j in (jobs.job_info(self.engine, i) for i in jobs.list_job_ids(self.engine, tenant)) if j]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.vectors.close()
        self.engine.dispose()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _passage(c: Chunk, filename: str, score: float) -> Passage:
    return Passage(c.id, c.doc_id, filename, c.page, c.section, c.text, score, c.char_start, c.char_end)
