"""Which item is the extreme one: a question that ranks the rows of a table ("which region had the biggest drop",
"which one had the highest notional value", "what was the largest liability") is answered by the row, over the
rows of the kind asked. A real HTML filing ingested through the real KnowledgeBase, answered by the real BI node
over SQLite."""
from __future__ import annotations

import pytest

from app_test_helpers import ask_bi, bi_env  # tests/app/app_test_helpers.py

TENANT = "bi-ranking"

GLOBEX = """<html><body><h1>Globex Corp annual report 2022</h1>
<p>Consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>December 31, 2022</th><th>December 31, 2021</th></tr>
<tr><td>Assets</td><td></td><td></td></tr>
<tr><td>Cash and cash equivalents</td><td>900.0</td><td>800.0</td></tr>
<tr><td>Loans to customers</td><td>5,100.0</td><td>4,700.0</td></tr>
<tr><td>Other assets</td><td>400.0</td><td>380.0</td></tr>
<tr><td>Total assets</td><td>6,400.0</td><td>5,880.0</td></tr>
<tr><td>Liabilities</td><td></td><td></td></tr>
<tr><td>Customer deposits</td><td>3,300.0</td><td>2,900.0</td></tr>
<tr><td>Accounts payable</td><td>450.0</td><td>500.0</td></tr>
<tr><td>Long-term debt</td><td>1,200.0</td><td>1,250.0</td></tr>
<tr><td>Total liabilities</td><td>4,950.0</td><td>4,650.0</td></tr>
</table>
<p>The following summarizes revenues by geographic area (in millions):</p>
<table>
<tr><th></th><th>2022</th><th>2021</th><th>% Change</th></tr>
<tr><td>United States</td><td>1,900.0</td><td>2,000.0</td><td>(5)</td></tr>
<tr><td>Europe</td><td>700.0</td><td>1,000.0</td><td>(30)</td></tr>
<tr><td>Asia Pacific</td><td>660.0</td><td>600.0</td><td>10</td></tr>
</table>
<p>The following table sets forth the notional amounts of our outstanding derivative instruments (in millions):</p>
<table>
<tr><th>At December 31,</th><th>2022</th><th>2021</th></tr>
<tr><td>Interest rate swaps</td><td>1,500.0</td><td>1,400.0</td></tr>
<tr><td>Cross currency swaps</td><td>2,700.0</td><td>2,600.0</td></tr>
<tr><td>Foreign exchange forwards</td><td>90.0</td><td>120.0</td></tr>
</table>
<p>Contractual obligations (in millions)</p>
<table>
<tr><th></th><th>Total</th><th>2023</th><th>2024-2025</th><th>Thereafter</th></tr>
<tr><td>Operating leases</td><td>194.0</td><td>41.0</td><td>71.0</td><td>82.0</td></tr>
<tr><td>Capital leases</td><td>65.0</td><td>27.0</td><td>30.0</td><td>8.0</td></tr>
</table>
<p>Inventories (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Raw materials</td><td>120.0</td><td>110.0</td></tr>
<tr><td>Work-in-process</td><td>35.0</td><td>30.0</td></tr>
<tr><td>Total inventories</td><td>155.0</td><td>140.0</td></tr>
</table>
<p>Cost of revenues (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Cost of license and subscription revenue</td><td>310.0</td><td>100.0</td></tr>
<tr><td>Cost of services revenue</td><td>90.0</td><td>80.0</td></tr>
</table>
<p>Stock-based compensation (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Stock-based compensation expense</td><td>640.0</td><td>600.0</td></tr>
<tr><td>Income tax benefit</td><td>(116.0)</td><td>(110.0)</td></tr>
<tr><td>Net stock-based compensation cost</td><td>524.0</td><td>490.0</td></tr>
</table></body></html>"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from bi_env(tmp_path_factory, TENANT, "GLOBEX_2022_10K.html", GLOBEX, 7)


def head(out) -> str:
    return out["answer"].splitlines()[0]


def test_the_largest_item_of_a_statement_section(env):
    # the rows of the "Liabilities" section, not the total row the word "liability" also names
    out = ask_bi(env, TENANT, "What was the largest liability in Globex's balance sheet in 2022?")
    assert out["route"] == "bi" and head(out).startswith("Customer deposits (highest 2022"), head(out)
    assert "Total liabilities" not in head(out)
    out = ask_bi(env, TENANT, "What was the smallest asset in Globex's balance sheet in 2021?")
    assert head(out).startswith("Other assets (lowest 2021"), head(out)


def test_which_one_after_a_lead_in_clause(env):
    q = ("Among all of the derivative instruments that Globex used to manage its exposure to interest rates, which "
         "one had the highest notional value in FY 2022?")
    out = ask_bi(env, TENANT, q)
    assert head(out).startswith("Cross currency swaps (highest 2022: Cross currency swaps 2,700"), head(out)


def test_the_biggest_drop_ranks_the_rows_by_their_change(env):
    q = "For Globex, which geographic region had the biggest drop in 2022 revenues (on a percentage basis)?"
    out = ask_bi(env, TENANT, q)
    assert head(out).startswith("Europe (lowest"), head(out)  # -30%, not the largest revenue (United States)
    # the verifier's check of the operation: a ranking by a percent change column computes the change asked
    from app.agent.bi.question import operation_unmet
    assert out["op"] == "min_by_pct_change" and not operation_unmet(q, out["op"]), out["op"]
    assert operation_unmet(q, "min") == {"change", "percent"}
    out = ask_bi(env, TENANT, "Which region had the largest increase in revenues in 2022?")
    assert head(out).startswith("Asia Pacific (highest"), head(out)


def test_a_summary_is_asked_by_its_words_not_by_substrings():
    from app.agent.frame import wants_long

    assert wants_long("Summarize the whole agreement.") and wants_long("Give me an overview of the dossier.")
    assert wants_long("What are the key points of all of the filings?")
    assert not wants_long("Among all of the derivative instruments, which one had the highest notional value?")
    assert not wants_long("Which segment has dragged down the company's overall growth in 2022?")
    assert not wants_long("What charges does the table summarize for the fiscal 2019 program?")
    assert not wants_long("Is there an entire agreement clause?")


def test_the_total_column_when_the_question_asks_the_total_and_no_period(env):
    # "Total" beside period columns holds the whole row: "the total capital leases" is that column, not the
    # first period's; a period asked still picks its own column
    out = ask_bi(env, TENANT, "What is the total capital leases of Globex?")
    assert head(out).startswith("Capital leases, Total: 65"), head(out)
    out = ask_bi(env, TENANT, "What were Globex's capital leases due in 2023?")
    assert "27" in head(out) and "65" not in head(out), head(out)


def test_one_item_named_by_two_words_is_not_two_rows(env):
    # "work-in-process inventory in 2022 and 2021": the "and" joins the years; "inventory" qualifies the item and
    # does not ask for the total row too; an "and" between two items' words still asks for both
    out = ask_bi(env, TENANT, "What are the respective values of Globex's work-in-process inventory in 2022 and 2021?")
    assert head(out).startswith("Work-in-process: 2022 35"), head(out)
    assert "Total inventories" not in out["answer"]
    out = ask_bi(env, TENANT, "What were Globex's raw materials and work-in-process inventories in 2022?")
    assert "Raw materials" in out["answer"] and "Work-in-process" in out["answer"], out["answer"]


def test_a_row_headed_by_a_word_the_question_does_not_say_is_a_doubt(env):
    # "Cost of license and subscription revenue" is a cost: it answers "license and subscription revenue" only
    # as found, with the reason; asked for the cost it is grounded
    out = ask_bi(env, TENANT, "What was Globex's license and subscription revenue in 2022?")
    doubts = " ".join(c.get("doubts") or "" for c in out["candidates"]) if "candidates" in out else str(out)
    assert "is a cost, which the question does not name" in doubts, out
    out = ask_bi(env, TENANT, "What was Globex's cost of license and subscription revenue in 2022?")
    assert head(out).startswith("Cost of license and subscription revenue, 2022: 310"), head(out)
    assert "which the question does not name" not in str(out)


def test_a_neighbouring_row_that_says_other_words_than_the_question_is_a_doubt(env):
    # the question says "capitalized", the row "net": the item beside the one asked, found but not grounded
    out = ask_bi(env, TENANT, "What was Globex's capitalized stock-based compensation cost in 2022?")
    assert "a neighbouring item" in str(out.get("doubts") or out), out
    out = ask_bi(env, TENANT, "What was Globex's net stock-based compensation cost in 2022?")
    assert head(out).startswith("Net stock-based compensation cost, 2022: 524"), head(out)
    assert "neighbouring" not in str(out)
