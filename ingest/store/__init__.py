"""Storage: the SQL engine (``sql``: SQLite or Postgres) and the vector store (``vectors``: the interface and
``open_vector_store``; ``points``: the types both engines share; ``edge``: Qdrant Edge in-process, with
``edge_config`` and ``optimize``; ``server``: a Qdrant server; ``migrate``: the old local store moved into Edge).
Modules are imported by their full path; nothing is re-exported here."""
