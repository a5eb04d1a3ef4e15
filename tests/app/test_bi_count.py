"""Count questions answered from a real ingested table: the periods of a row, or the rows of a period column,
meeting a condition; the count is computed by the program's SQL, run through the read-only validator."""
from __future__ import annotations

import pytest

from app_test_helpers import ask_bi, bi_env  # tests/app/app_test_helpers.py

TENANT = "bi-count"

REPORT = """<html><body><h1>Initech annual report 2019</h1>
<p>Net sales by region (in thousands)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th><th>2017</th></tr>
<tr><td>Americas</td><td>190,500</td><td>254,000</td><td>210,300</td></tr>
<tr><td>EMEA</td><td>120,000</td><td>110,000</td><td>95,000</td></tr>
<tr><td>APAC</td><td>60,000</td><td>58,000</td><td>40,000</td></tr>
<tr><td>Total net sales</td><td>370,500</td><td>422,000</td><td>345,300</td></tr>
</table></body></html>"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from bi_env(tmp_path_factory, TENANT, "initech_2019.html", REPORT, 1)


def ask(env, question):
    out = ask_bi(env, TENANT, question)
    assert out["route"] == "bi", out
    res = env[0].run_sql(TENANT, out["sql"])
    return out, res.rows[0][res.columns.index("count")]


def test_periods_of_a_row_meeting_a_condition(env):
    out, n = ask(env, "How many years did net sales from Americas exceed $200,000 thousand?")
    assert n == 2 and out["answer"].startswith("Count of Americas")
    assert "count = 2" in out["answer"] and "2018" in out["answer"] and out["supported"] is True
    out, n = ask(env, "How many years did EMEA net sales exceed $115 million?")  # the question's scale, converted
    assert n == 1 and "> 115,000" in out["answer"]


def test_rows_of_a_period_column_meeting_a_condition(env):
    out, n = ask(env, "How many regions in 2019 had net sales above $100,000 thousand?")
    assert n == 2  # Americas and EMEA; the total row is not a region
    assert "Americas" in out["answer"] and "EMEA" in out["answer"]
    out, n = ask(env, "How many regions in 2017 had net sales below 50,000?")
    assert n == 1 and "APAC" in out["answer"]


def test_a_threshold_at_a_scale_the_table_does_not_state_is_a_guess(tmp_path_factory):
    """"More than 5 million" over a table that states no unit: 4,804 may be thousands or millions, so the count
    is stated as found, not supported; where the table states its unit the threshold is converted."""
    bare = REPORT.replace("Net sales by region (in thousands)", "Net sales by region")
    gen = bi_env(tmp_path_factory, "bi-count-bare", "initrode_2019.html", bare, 1)
    env = next(gen)
    try:
        out = ask_bi(env, "bi-count-bare", "How many years did EMEA net sales exceed $115 million?")
        assert out["route"] == "bi" and out["supported"] is False, out["answer"]
        out = ask_bi(env, "bi-count-bare", "How many years did EMEA net sales exceed 115,000?")
        assert out["supported"] is True, out["answer"]
    finally:
        next(gen, None)
