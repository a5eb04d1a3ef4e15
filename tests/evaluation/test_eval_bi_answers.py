"""Scoring a BI answer: the statement is scored, not its provenance lines (Rows used / Source / SQL / Not
verified), and numeric spans match as numbers; the summary reports answers per route."""
from __future__ import annotations


def test_answer_statement_drops_provenance_lines():
    from app.evaluation.scoring import answer_statement

    text = ("Revenues: 2019 1,073.3, 2018 1,095 (USD millions).\nSource: table \"Revenue\" (r.html, page 1).\n"
            "SQL: SELECT 1\nNot verified: the row 'X' is not clearly what the question names.")
    assert answer_statement(text) == "Revenues: 2019 1,073.3, 2018 1,095 (USD millions)."
    assert answer_statement("No provenance here.") == "No provenance here."
    # a metric's formula line is its derivation too: the value after its last "=" is not the answer
    metric = ("Average capex as a % of revenue, FY2017 to FY2019: (2.2 + 1.7 + 1.8) / 3 = 1.9%.\nFormula: capex as a "
              "% of revenue = capex / revenue × 100; FY2019: 116 / 6,489 × 100 = 1.8%.")
    assert answer_statement(metric).endswith("= 1.9%.")


def test_tatqa_multi_span_numbers_match_as_numbers_and_provenance_is_not_length():
    from app.evaluation.scoring import score
    from app.evaluation.types import EvalItem

    item = EvalItem(id="q", question="What was the revenues in 2019 and 2018 respectively?", doc="d.html",
                    evidence=[], answers=[], scoring="tatqa",
                    meta={"answer": ["$1,073.3", "$1,095.0"], "scale": "million"})
    rec = {"answer": {"answer": "Revenues: 2019 1,073.3, 2018 1,095 (USD millions).\nSource: table \"Revenue and "
                                "other income by year\" (d.html, page 1).\nSQL: SELECT item, y2019, y2018 FROM t",
                      "supported": True, "citations": []}}
    assert score(item, rec, {})["em"] == 1.0
    rec["answer"]["answer"] = rec["answer"]["answer"].replace("1,095 ", "1,096 ")
    assert score(item, rec, {})["em"] == 0.0


def test_summary_breaks_answers_down_by_route():
    from app.evaluation.metrics import summarize

    base = {"doc_rank": 1, "rank": None, "has_evidence": False}
    rows = [dict(base, route="bi", supported=True, correct=True, not_found=False),
            dict(base, route="bi", supported=True, correct=False, not_found=False),
            dict(base, route="rag", supported=False, correct=False, not_found=True)]
    s = summarize(rows, "jsonl")
    assert s["by_route"]["bi"]["supported_precision"] == 0.5 and s["by_route"]["rag"]["n"] == 1
