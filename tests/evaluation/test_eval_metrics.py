"""Aggregation: recall@k from ranks, supported precision over supported answers only, TAT-QA breakdowns."""
from __future__ import annotations

from app.evaluation.metrics import percentile, summarize


def row(rank, correct=None, supported=None, category="c", **kw):
    r = {"has_evidence": True, "rank": rank, "doc_rank": 1, "category": category, "retrieval_s": 0.1}
    if supported is not None:
        r.update(supported=supported, correct=correct, not_found=not supported, answer_s=1.0, citations=1,
                 citations_precise=int(bool(correct)), citations_verbatim=1)
    r.update(kw)
    return r


def test_recall_and_answer_rates():
    rows = [row(1, True, True), row(3, False, True), row(None, False, False), row(7, True, True)]
    s = summarize(rows, "jsonl")
    assert s["retrieval"]["recall@1"] == 0.25 and s["retrieval"]["recall@5"] == 0.5
    assert s["retrieval"]["recall@10"] == 0.75 and s["retrieval"]["doc_hit@1"] == 1.0
    a = s["answers"]
    assert a["accuracy"] == 0.5 and a["supported_rate"] == 0.75
    assert a["supported_precision"] == round(2 / 3, 4) and a["not_found_rate"] == 0.25
    assert a["citation_precision"] == 0.5 and a["citation_verbatim"] == 1.0


def test_tatqa_breakdowns_and_preamble_split():
    rows = [row(1, True, True, "arithmetic", answer_from="table", em=1.0, f1=1.0, em_tol=1.0),
            row(1, False, True, "arithmetic", answer_from="table", em=0.0, f1=0.0, em_tol=1.0),
            row(2, True, True, "span", answer_from="text", em=1.0, f1=0.5, em_tol=1.0)]
    s = summarize(rows, "tatqa")
    assert s["arithmetic_from_table"]["n"] == 2 and s["arithmetic_from_table"]["em"] == 0.5
    assert s["by_answer_from"]["text"]["f1"] == 0.5 and s["answers"]["em_tol1pct"] == 1.0
    cuad = summarize([row(1, category="Parties"), row(None, category="Governing Law")], "cuad")
    assert cuad["retrieval"]["recall@1"] == 0.5 and cuad["retrieval_clauses_only"]["recall@10"] == 0.0


def test_percentile():
    assert percentile([3, 1, 2, 4], 0.5) == 2.5 and percentile([], 0.5) is None
