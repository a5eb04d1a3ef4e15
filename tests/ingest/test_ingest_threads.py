"""One KnowledgeBase shared by threads: searches and SQL run while another thread ingests."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from ingest.samples import SAMPLE_FACTS

pytestmark = pytest.mark.slow


def test_concurrent_reads_during_ingest(kb, corpus, tmp_path):
    kb.ingest_paths(corpus[:3], "acme")
    income = next(t for t in kb.list_tables("acme") if t.filename == SAMPLE_FACTS["annual_report"]["filename"])
    extra = tmp_path / "extra.md"
    extra.write_text("# Extra\n\n" + "\n\n".join(f"{i}. Clause {i}\nText of clause {i} about audits." for i in range(1, 40)))

    def reader(i: int):
        hits = kb.search("acme", "liability cap" if i % 2 else "governing law", k=3)
        rows = kb.run_sql("acme", f"select count(*) from {income.sql_name}").rows
        return len(hits), rows[0][0]

    with ThreadPoolExecutor(max_workers=4) as pool:
        writer = pool.submit(kb.ingest_paths, [extra, corpus[3]], "acme")
        results = list(pool.map(reader, range(12)))
        summary = writer.result(timeout=300)
    assert all(n == 3 and count == 6 for n, count in results)
    assert [r.status for r in summary.results] == ["ingested", "ingested"]
    assert kb.vectors.count("acme") == sum(d.chunks for d in kb.list_documents("acme"))
