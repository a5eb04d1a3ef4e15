"""BI route on the sample statements (no model: the deterministic planner writes the SQL)."""
from __future__ import annotations

import pytest

from ingest.samples import SAMPLE_FACTS

from app_test_helpers import TENANT, checked, passage_texts, rests_on  # tests/app/app_test_helpers.py

INCOME = SAMPLE_FACTS["annual_report"]["income_statement"]
SEGMENTS = SAMPLE_FACTS["segments"]


def ask_bi(service, question):
    answer = service.ask(TENANT, question, mode="bi")
    assert answer.route == "bi", answer
    assert service._model is None  # BI on the embedded model never loads weights
    return answer


def sql_truth(service, sql):
    return service.kb.run_sql(TENANT, sql).rows


def test_revenue_by_year_equals_the_statement(sample_service):
    a = ask_bi(sample_service, "What was revenue in 2024 and 2023?")
    assert checked(a) and a.sql.upper().startswith("SELECT")
    assert a.rows == [["Revenue", INCOME["Revenue"][2024], INCOME["Revenue"][2023]]]
    assert a.rows == sql_truth(sample_service, a.sql)
    assert "63,918.7" in a.answer and "55,732.4" in a.answer
    # the chart runs oldest -> newest, its series named by the row label
    assert a.chart["data"][0]["y"] == [INCOME["Revenue"][2023], INCOME["Revenue"][2024]]
    assert a.chart["data"][0]["x"] == ["2023", "2024"] and a.chart["data"][0]["name"] == "Revenue"


def test_growth_is_computed_in_sql(sample_service):
    a = ask_bi(sample_service, "By how much did net income grow in 2024 compared to 2023?")
    expected = round((INCOME["Net income (loss)"][2024] / INCOME["Net income (loss)"][2023] - 1) * 100, 2)
    label, new, old, pct = a.rows[0]
    assert label == "Net income (loss)" and (new, old) == (INCOME["Net income (loss)"][2024], INCOME["Net income (loss)"][2023])
    assert pct == pytest.approx(expected, abs=0.01)
    assert f"{expected:.2f}".rstrip("0") in a.answer
    # "(loss)" is the label's alternative wording: "net income" names the row, so the program is grounded
    assert checked(a), a.answer


def test_segment_quarter_and_breakdown(sample_service):
    a = ask_bi(sample_service, "What was Software revenue in Q3 2024?")
    assert a.rows == [["Software", SEGMENTS["revenue"]["Software"][2]]]
    b = ask_bi(sample_service, "What is the FY 2024 revenue by segment?")
    assert {r[0]: r[1] for r in b.rows} == SEGMENTS["fy_total"]


def test_a_quarter_named_without_its_year_is_the_tables_quarter_and_a_segment_names_no_file(sample_service):
    """The segment sheet holds the quarters of one year: "in Q3" and "in the fourth quarter" are its Q3 and Q4.
    "the Services segment" names a row, not master_services_agreement.pdf (whose file name says "services")."""
    a = sample_service.ask(TENANT, "How much revenue did the Services segment generate in Q3?")
    assert a.route == "bi" and a.rows == [["Services", SEGMENTS["revenue"]["Services"][2]]], a
    assert a.supported is True, a.answer
    b = sample_service.ask(TENANT, "What was Software revenue in the fourth quarter?")
    assert b.rows == [["Software", SEGMENTS["revenue"]["Software"][3]]] and b.supported is True, b.answer


def test_total_over_segments_matches_sample_facts(sample_service):
    a = ask_bi(sample_service, "What was the total revenue of Software and Services in Q4 2024?")
    assert a.rows[0][0] == pytest.approx(SEGMENTS["revenue"]["Software"][3] + SEGMENTS["revenue"]["Services"][3])


def test_bi_citation_quotes_the_table_page(sample_service):
    a = ask_bi(sample_service, "What was operating income in 2022?")
    assert a.rows == [["Operating income (loss)", INCOME["Operating income (loss)"][2022]]]
    texts = passage_texts(sample_service)
    c = rests_on(a)[0]
    assert c.filename == SAMPLE_FACTS["annual_report"]["filename"]
    assert c.page == SAMPLE_FACTS["annual_report"]["income_statement_page"]
    assert c.quote in texts[c.doc_id] and "Operating income" in c.quote


def test_auto_mode_routes_numbers_to_bi_and_unmatched_numbers_elsewhere(sample_service):
    assert sample_service.ask(TENANT, "What was gross profit in 2023?").route == "bi"
    kpis = sample_service.kpis(TENANT)
    assert any(k["label"].startswith("Revenue") and k["value"] == INCOME["Revenue"][2024] for k in kpis)


def test_long_table_year_and_metric_columns(sample_service, tmp_path):
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Income statement"
    ws.append(["Year", "Revenue (USD)"])
    for row in [(2022, 900000), (2023, 1100000), (2024, 1250000)]:
        ws.append(list(row))
    wb.save(tmp_path / "income.xlsx")
    job = sample_service.ingest_paths("long-tenant", [tmp_path / "income.xlsx"])
    assert job["failed"] == 0
    a = sample_service.ask("long-tenant", "What was the revenue in each year?", mode="bi")
    assert [[int(y), v] for y, v in a.rows] == [[2022, 900000], [2023, 1100000], [2024, 1250000]]
    assert "2024: Revenue (USD) 1,250,000" in a.answer and a.chart["data"][0]["y"] == [900000, 1100000, 1250000]
    g = sample_service.ask("long-tenant", "What was revenue growth in 2024?", mode="bi")
    assert g.rows[0][3] == pytest.approx(round((1250000 / 1100000 - 1) * 100, 2))
    assert sample_service.kpis("long-tenant")[0]["value"] == 1250000
    assert sample_service.ask(TENANT, "What was the revenue in each year?", mode="bi").rows[0][0] == "Revenue"


def test_a_line_item_named_by_a_clause_kinds_word_is_answered_from_the_table(sample_service, tmp_path):
    """"audit" names the clause kind audit rights by one word; a table with an "Audit fees" row answers the
    question as a figure, while a question naming the kind in full is still a clause question."""
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Principal accountant fees"
    ws.append(["Fee category", "2023", "2022"])
    for row in [("Audit fees", 1840, 1710), ("Audit-related fees", 120, 95), ("Tax fees", 310, 288)]:
        ws.append(list(row))
    wb.save(tmp_path / "accountant_fees.xlsx")
    assert sample_service.ingest_paths("fees-tenant", [tmp_path / "accountant_fees.xlsx"])["failed"] == 0
    a = sample_service.ask("fees-tenant", "What were the audit fees in 2023?")
    assert a.route == "bi" and a.rows[0][-1] == 1840, a
    from app.agent.frame import read_question

    kbt = sample_service.kb.for_tenant("fees-tenant")
    frame = read_question(kbt, "Does the agreement give audit rights over the books and records?", scratch={})
    assert frame.clause_kind == "audit rights" and not frame.bi_planned
    assert read_question(kbt, "What were the audit fees in 2023?", scratch={}).clause_kind is None
    # one word and no contract in view (no contract word, no document naming parties): the question's own words
    assert read_question(kbt, "What do the audit fees comprise?", scratch={}).clause_kind is None
    assert read_question(kbt, "What audit may either party carry out?", scratch={}).clause_kind == "audit rights"
