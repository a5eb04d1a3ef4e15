"""`lexicon ingest`: progress + summary, exit 1 when any file failed, 0 when all went in."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

from ingest.cli_command import ingest_command
from ingest.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.slow


def test_cli_summary_and_exit_codes(settings, embedder, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\n1. Scope\nAlpha services are delivered monthly.\n")
    (docs / "b.txt").write_text("Beta agreement. Payment within 30 days.")
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=False)
    assert ingest_command(settings, [docs], "acme", console=console) == 0
    text = out.getvalue()
    assert "2 files: 2 ingested, 0 unchanged, 0 failed" in text and "a.md" in text

    (docs / "c.pdf").write_text("not a pdf")
    out.seek(0)
    out.truncate(0)
    assert ingest_command(settings, [docs], "acme", console=console) == 1
    text = out.getvalue()
    assert "3 files: 0 ingested, 2 unchanged, 1 failed" in text and "extension .pdf" in text

    assert ingest_command(settings, [tmp_path / "missing.txt"], "acme", console=console) == 1
    assert "file not found" in out.getvalue()
    (tmp_path / "emptydir").mkdir()
    assert ingest_command(settings, [tmp_path / "emptydir"], "acme", console=console) == 2
    with KnowledgeBase(settings, embedder=embedder) as kb:
        assert {d.filename: d.status for d in kb.list_documents("acme")} == {
            "a.md": "ingested", "b.txt": "ingested", "c.pdf": "failed", "missing.txt": "failed"}
