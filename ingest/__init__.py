"""Document ingestion: parse, chunk with provenance, extract tables to SQL, embed, index.

Entry point: ``ingest.knowledge_base.KnowledgeBase(settings)`` (see docs/contracts.md, "ingest").

Flow for one file (``ingest.pipeline``): size limits -> content hash (unchanged files are skipped) ->
``detect`` (real type from the bytes; zip-bomb guard for DOCX/XLSX) -> ``parsers`` (pages with heading
spans, raw tables) -> ``chunker`` (headings, numbered clauses, paragraphs; token budget + overlap; page,
section and exact character offsets) -> ``tables`` (typed SQL tables + catalogue) -> ``embedder`` +
``vectors`` (Qdrant dense + BM25 sparse, RRF) -> one SQL transaction that makes the new version visible.
``jobs`` makes a batch resumable; ``sql_guard`` keeps ``run_sql`` read-only and inside one tenant.

Stores: SQLite under ``data_dir`` or Postgres by ``database_url``; Qdrant local store under ``data_dir``
(one process; Qdrant's local mode scans payloads in Python, so it suits up to ~20k chunks — use a Qdrant
server via ``qdrant_url`` beyond that, see bench/bench_ingest.py) or a server by URL.
"""
