"""Document ingestion: parse, chunk with provenance, extract tables to SQL, embed, index.

Entry point: ``ingest.knowledge_base.KnowledgeBase(settings)`` (see docs/contracts.md, "ingest").

Flow for one file (``ingest.pipeline``): size limits -> content hash (unchanged files are skipped) ->
``detect`` (real type from the bytes; zip-bomb guard for DOCX/XLSX) -> ``parsers`` (pages with heading
spans, raw tables) -> ``chunker`` (headings, numbered clauses, paragraphs; token budget + overlap; page,
section and exact character offsets) -> ``tables`` (typed SQL tables + catalogue) -> ``embedder`` +
``store.vectors`` (Qdrant dense + BM25 sparse, RRF) -> one SQL transaction that makes the new version visible.
A job parses the next files on a read-ahead thread while the current one is embedded and stored.
``jobs`` makes a batch resumable; ``sql_guard`` keeps ``run_sql`` read-only and inside one tenant.

Stores: SQLite under ``data_dir`` or Postgres by ``database_url``; vectors in Qdrant Edge under ``data_dir``
(``store.edge``: the Qdrant engine in-process, one process per data dir) or a Qdrant server by ``qdrant_url``
(``store.server``), the same layout; an old qdrant-client local store is migrated once (``store.migrate``).
"""
