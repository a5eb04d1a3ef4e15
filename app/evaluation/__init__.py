"""``lexicon eval``: measure the retriever and the agent on a dataset folder.

Layout: ``types`` (what an adapter yields), ``adapters/`` (CUAD, FinanceBench, TAT-QA, user JSONL),
``text`` / ``numbers`` / ``tatqa_metric`` (matching), ``scoring`` (one question), ``metrics`` (aggregate),
``runner`` (ingest, ask, resumable journal), ``report`` (table + JSON), ``command`` (the CLI entry).
See docs/eval.md.
"""
