"""Financial metrics over two statements (issue #13): a definition the question spells out or the library's
standard one, each operand grounded to a row and period column of one filing's statement tables, the formula
stated with every operand's value, row and page. Real HTML filings ingested through the real KnowledgeBase,
answers from the real BI node over real SQLite tables."""
from __future__ import annotations

import pytest

from app_test_helpers import ask_bi, bi_env  # tests/app/app_test_helpers.py

TENANT = "bi-metrics"

ACME = """<html><body><h1>Acme Corp annual report 2019</h1>
<p>Consolidated statements of operations (in millions)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th><th>2017</th></tr>
<tr><td>Net sales</td><td>1,200.0</td><td>1,000.0</td><td>900.0</td></tr>
<tr><td>Cost of sales</td><td>700.0</td><td>650.0</td><td>600.0</td></tr>
<tr><td>Gross profit</td><td>500.0</td><td>350.0</td><td>300.0</td></tr>
<tr><td>Operating income</td><td>300.0</td><td>180.0</td><td>160.0</td></tr>
<tr><td>Interest expense</td><td>(20.0)</td><td>(18.0)</td><td>(15.0)</td></tr>
<tr><td>Income before income taxes</td><td>280.0</td><td>162.0</td><td>145.0</td></tr>
<tr><td>Provision for income taxes</td><td>(70.0)</td><td>(40.0)</td><td>(36.0)</td></tr>
<tr><td>Net income</td><td>210.0</td><td>122.0</td><td>109.0</td></tr>
</table>
<p>Consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>December 31, 2019</th><th>December 31, 2018</th></tr>
<tr><td>Cash and cash equivalents</td><td>150.0</td><td>120.0</td></tr>
<tr><td>Accounts receivable, net</td><td>240.0</td><td>200.0</td></tr>
<tr><td>Merchandise inventories</td><td>410.0</td><td>380.0</td></tr>
<tr><td>Total current assets</td><td>860.0</td><td>700.0</td></tr>
<tr><td>Total assets</td><td>2,400.0</td><td>2,100.0</td></tr>
<tr><td>Accounts payable</td><td>300.0</td><td>280.0</td></tr>
<tr><td>Total current liabilities</td><td>500.0</td><td>470.0</td></tr>
<tr><td>Total stockholders' equity</td><td>1,100.0</td><td>1,000.0</td></tr>
</table>
<p>Consolidated statements of cash flows (in millions)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th><th>2017</th></tr>
<tr><td>Net income</td><td>210.0</td><td>122.0</td><td>109.0</td></tr>
<tr><td>Depreciation and amortization</td><td>60.0</td><td>55.0</td><td>50.0</td></tr>
<tr><td>Accounts payable</td><td>20.0</td><td>(10.0)</td><td>5.0</td></tr>
<tr><td>Net cash provided by operating activities</td><td>330.0</td><td>190.0</td><td>170.0</td></tr>
<tr><td>Purchases of property and equipment</td><td>(90.0)</td><td>(80.0)</td><td>(70.0)</td></tr>
<tr><td>Net cash used in investing activities</td><td>(95.0)</td><td>(85.0)</td><td>(72.0)</td></tr>
<tr><td>Dividends paid</td><td>(42.0)</td><td>(40.0)</td><td>(38.0)</td></tr>
<tr><td>Net cash used in financing activities</td><td>(205.0)</td><td>(95.0)</td><td>(90.0)</td></tr>
</table></body></html>"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from bi_env(tmp_path_factory, TENANT, "ACME_2019_10K.html", ACME, 3)


def ask(env, question):
    return ask_bi(env, TENANT, question)


def head(out) -> str:
    return out["answer"].splitlines()[0]


def test_a_definition_over_two_statements_and_two_periods(env):
    q = ("What is Acme's FY2019 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
         "between FY2018 and FY2019) / (FY2019 COGS + change in inventory between FY2018 and FY2019). Round your "
         "answer to two decimal places. Address the question by using the line items and information shown within "
         "the balance sheet and the P&L statement.")
    out = ask(env, q)
    # 365 * 290 / (700 + 30) = 145.00; accounts payable from the balance sheet, not the cash-flow change
    assert out["route"] == "bi" and out["supported"] is True, out
    assert head(out).endswith("= 145.00 days."), head(out)
    assert "(300 + 280) / 2" in head(out) and "700 + (410 − 380)" in head(out)
    rows = out["answer"].split("Rows used:")[1]
    assert "Accounts payable (2019) 300, balance sheet" in rows and "Cost of sales (2019) 700, income statement" in rows
    assert {c["page"] for c in out["citations"]} and len(out["citations"]) == 2  # one per statement used
    assert "FROM" in out["sql"] and out["rows"][0][0] == pytest.approx(145.0)


def test_library_definitions_when_the_question_only_names_the_metric(env):
    out = ask(env, "What is Acme's FY2019 EBITDA margin? Calculate EBITDA using operating income and D&A (from the "
                   "cash flow statement).")
    assert out["supported"] is True and head(out).endswith("= 30.00%."), out  # (300 + 60) / 1,200 * 100
    out = ask(env, "What was Acme's free cash flow in FY2018?")
    assert out["supported"] is True and "190 − 80 = 110.00" in head(out), out  # capex printed (80.0): its size
    out = ask(env, "What is Acme's FY2019 inventory turnover ratio?")
    assert head(out).endswith("= 1.77."), out  # 700 / ((410 + 380) / 2)
    out = ask(env, "What was Acme's effective tax rate in 2019? Round to one decimal place.")
    assert head(out).endswith("= 25.0%."), out
    out = ask(env, "What is Acme's FY2019 return on equity (ROE)?")
    assert head(out).endswith("= 0.20."), out  # 210 / 1,050


def test_an_operand_the_statements_do_not_have_is_named_and_nothing_is_supported(env):
    q = ("What is Acme's FY2019 cash burn multiple? Cash burn multiple is defined as: net burn / net new "
         "subscription revenue.")
    out = ask(env, q)
    assert out["route"] == "rag" and "net burn" in out["fallback"], out
    # a period the statements do not have
    out = ask(env, "What is Acme's FY2016 days sales outstanding (DSO)?")
    assert out["route"] == "rag" or out["supported"] is False, out


def test_a_metric_over_several_years(env):
    q = ("Are Acme's gross margins historically consistent (not fluctuating more than roughly 2% each year)? If gross "
         "margins are not a relevant metric for a company like this, then please state that and explain why.")
    out = ask(env, q)  # 33.3%, 35.0%, 41.7%: +1.7 then +6.7 points
    assert out["route"] == "bi" and out["supported"] is True, out
    assert head(out).startswith("No, the gross margin has not been consistent"), head(out)
    assert "an increase of 6.7 percentage points between FY2018 and FY2019" in head(out)
    out = ask(env, "What is the FY2017 - FY2019 3 year average net profit margin (as a %) for Acme?")
    assert head(out).endswith("= 13.9%."), out  # (12.11 + 12.2 + 17.5) / 3, one decimal for a %
    out = ask(env, "What is the change in Acme's operating margin from FY2018 to FY2019?")
    assert "= 7.00 percentage points" in head(out) or "= 7.0 percentage points" in head(out), out


def test_which_of_the_listed_items_is_largest(env):
    q = ("Among operations, investing, and financing activities, which brought in the most (or lost the least) cash "
         "flow for Acme in FY2019?")
    out = ask(env, q)
    assert out["route"] == "bi" and out["supported"] is True, out
    assert head(out).startswith("Operating activities (Net cash provided by operating activities) had the most cash "
                                "flow in 2019"), head(out)
    assert "investing activities: Net cash used in investing activities -95" in head(out)
    from app.agent.bi.choice import choice_items
    assert choice_items("Which of cost of sales, SG&A or R&D was the smallest expense in 2019?")[:2] == (
        ["cost of sales", "SG&A", "R&D"], "min")
    assert choice_items("What was the largest expense in 2019?") is None


def test_a_yes_no_question_about_a_change_is_answered_yes_or_no_first(env):
    out = ask(env, "Was there any drop in Acme's cash and cash equivalents between FY2018 and FY2019?")
    assert head(out).startswith("No, there was an increase of 30 (25.0%) between 2018 and 2019."), head(out)
    out = ask(env, "Did Acme's total assets increase between FY2018 and FY2019?")
    assert head(out).startswith("Yes, there was an increase of 300 (14.3%)"), head(out)


def test_a_yes_no_question_answered_by_one_figure(env):
    out = ask(env, "Has Acme paid dividends in FY2019?")  # a figure there and not zero: yes, and the figure
    assert out["route"] == "bi" and head(out).startswith("Yes: Dividends paid, 2019: 42"), head(out)
    from app.agent.bi.format import _holds
    assert _holds("Does Acme have negative working capital in FY2019?", 360.0) == "No: "
    assert _holds("Is Acme's revenue above 1,000 in FY2019?", 1200.0) == ""  # a figure of its own to compare with



def test_which_way_a_metric_moved_is_answered_by_its_catalogue_sense(env):
    # gross margin 35.0% (FY2018) -> 41.7% (FY2019): higher is better for a margin (app/data/metrics.yaml)
    out = ask(env, "Does Acme have an improving gross margin profile as of FY2019?")
    assert out["route"] == "bi", out
    assert head(out).startswith("Yes, the gross margin rose from 35.0% in FY2018 to 41.7% in FY2019"), head(out)
    assert "an improvement" in head(out)
    # quick ratio (120 + 200) / 470 = 0.68 -> (150 + 240) / 500 = 0.78; "improved or declined" is no yes/no
    out = ask(env, "Has Acme's quick ratio improved or declined between FY2019 and FY2018?")
    assert head(out).startswith("The quick ratio rose from 0.68 in FY2018 to 0.78 in FY2019"), head(out)
    out = ask(env, "Did Acme's net profit margin decline between FY2018 and FY2019?")
    assert head(out).startswith("No, the net profit margin rose"), head(out)
    # two years set side by side: both values and the way it went (70 / 280 = 25.0%, 40 / 162 = 24.7%)
    out = ask(env, "How does Acme's effective tax rate in FY2019 compare to FY2018?")
    assert head(out).startswith("The effective tax rate rose from 24.7% in FY2018 to 25.0% in FY2019"), head(out)


def test_a_yes_no_question_about_a_metric_s_sign(env):
    out = ask(env, "Does Acme have positive working capital based on FY2019 data?")
    assert head(out).startswith("Yes, the working capital was positive in FY2019."), head(out)  # 860 - 500
    assert "= 360.00" in head(out)



RELEASE = """<html><body><h1>Initech Corp fourth quarter and fiscal 2023 results</h1>
<p>Condensed consolidated statements of income (unaudited, in millions)</p>
<table>
<tr><th></th><th>Three Months Ended June 30, 2023</th><th>Three Months Ended June 30, 2022</th>
<th>Twelve Months Ended June 30, 2023</th><th>Twelve Months Ended June 30, 2022</th></tr>
<tr><td>Net sales</td><td>3,673</td><td>3,909</td><td>14,694</td><td>14,544</td></tr>
<tr><td>Cost of sales</td><td>(2,951)</td><td>(3,115)</td><td>(11,969)</td><td>(11,724)</td></tr>
<tr><td>Gross profit</td><td>722</td><td>794</td><td>2,725</td><td>2,820</td></tr>
</table></body></html>"""


def test_a_fiscal_year_is_read_from_the_twelve_months_column_not_the_quarter(tmp_path_factory):
    for env in bi_env(tmp_path_factory, "bi-release", "INITECH_2023Q4_8K.html", RELEASE, 1):
        out = ask_bi(env, "bi-release", "What was Initech's gross margin in FY2023?")
        assert head(out).endswith("2,725 / 14,694 × 100 = 18.54%."), head(out)  # not the quarter's 722 / 3,673
        out = ask_bi(env, "bi-release", "Does Initech have an improving gross margin profile as of FY2023?")
        assert head(out).startswith("No, the gross margin fell from 19.4% in FY2022 to 18.5% in FY2023"), head(out)
        assert "(down 0.8 percentage points; a deterioration)" in head(out), head(out)
        from app.evaluation.scoring import text_correct  # an analyst's "No, a decline of 0.8%" agrees with it
        assert text_correct("No. There has been a slight decline in gross margins by 0.8%.", out["answer"],
                            "Does Initech have an improving gross margin profile as of FY2023?")


QUARTER = """<html><body><h1>Globex Corp quarterly report (Form 10-Q) for the quarter ended July 29, 2023</h1>
<p>Condensed consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>July 29, 2023</th><th>January 28, 2023</th><th>July 30, 2022</th></tr>
<tr><td>Cash and cash equivalents</td><td>1,093</td><td>1,874</td><td>840</td></tr>
<tr><td>Merchandise inventories</td><td>5,651</td><td>5,140</td><td>6,043</td></tr>
<tr><td>Total current assets</td><td>8,304</td><td>8,802</td><td>8,344</td></tr>
</table>
<p>Condensed consolidated statements of earnings (in millions)</p>
<table>
<tr><th></th><th>Three Months Ended July 29, 2023</th><th>Three Months Ended July 30, 2022</th>
<th>Six Months Ended July 29, 2023</th><th>Six Months Ended July 30, 2022</th></tr>
<tr><td>Revenue</td><td>9,583</td><td>10,329</td><td>19,050</td><td>20,976</td></tr>
<tr><td>Cost of sales</td><td>7,355</td><td>7,975</td><td>14,642</td><td>16,190</td></tr>
</table></body></html>"""


@pytest.fixture(scope="module")
def quarter_env(tmp_path_factory):
    yield from bi_env(tmp_path_factory, "bi-quarter", "GLOBEX_2024Q2_10Q.html", QUARTER, 2)


def test_a_quarterly_filing_is_read_by_its_fiscal_calendar(quarter_env):
    """'Q2 of FY2024' is the quarter that 'Six Months Ended July 29, 2023' closes; 'FY 2023' the year that ended
    January 28, 2023; the quarter is the three-month column, not the six months to date."""
    out = ask_bi(quarter_env, "bi-quarter", "Was there any drop in Cash & Cash equivalents between FY 2023 and Q2 of "
                                             "FY2024?")
    assert out["route"] == "bi" and out["supported"] is True, out
    assert head(out).startswith("Yes, there was a decline of 781 (41.7%) between 2023 and Q2 2024."), head(out)
    out = ask_bi(quarter_env, "bi-quarter", "What was the revenue in Q2 of FY2024?")
    assert out["rows"] == [["Revenue", 9583.0]] and out["supported"] is True, out


def test_a_table_whose_columns_are_misread_grounds_nothing():
    """A real earnings release's table as the PDF reader left it (Amcor's FY2023 release, page 1): a second table's
    header row ('2022 $ million', 'currency ∆%') inside the body and '∆%' values under the '2023' column; its
    'EBITDA 2023: -5' must not be grounded."""
    from app.agent.bi.grounding import layout_doubts
    from app.agent.bi.table import load_view
    from ingest.types import ColumnInfo, TableInfo

    cols = [ColumnInfo("item", "TEXT", role="label"), ColumnInfo("col_2", "TEXT"),
            ColumnInfo("y2022", "REAL", label="Twelve Months ended June 30, 2022", fiscal_year=2022),
            ColumnInfo("y2023", "REAL", label="Twelve Months ended June 30, 2023", fiscal_year=2023),
            ColumnInfo("col_5", "TEXT")]
    info = TableInfo("t_x", "d", "AMCOR_2023Q4_EARNINGS.pdf", 1, "Net sales 14,544 14,694", cols, 6)
    rows = [[1, "Net income", None, None, 805.0, "1,048"],
            [2, None, "Twelve Months Ended June 30,", None, None, "Comparable"],
            [3, "Adjusted non-GAAP results", "2022 $ million", None, None, "currency ∆%"],
            [4, "Net sales", "14,544", 14694.0, 1.0, "—"],
            [5, "EBITDA", "2,117", 2018.0, -5.0, "1"],
            [6, "EBIT", "1,701", 1608.0, -5.0, "1"]]
    view = load_view(info, rows, ["row_num", "item", "col_2", "y2022", "y2023", "col_5"])
    ebitda = next(r for r in view.rows if r.label == "EBITDA")
    assert ebitda.reheaded == "2022 $ million"
    doubts = layout_doubts(view, [ebitda])
    assert len(doubts) == 2 and "misread" in doubts[0] and "header row inside the table" in doubts[1], doubts
    assert "misread" in layout_doubts(view, [view.rows[0]])[0]  # above the header row: the columns are still off


AMAZON = __import__("pathlib").Path(__file__).resolve().parents[3] / "shared/eval/financebench-dev/pdfs/AMAZON_2017_10K.pdf"


@pytest.mark.slow
@pytest.mark.skipif(not AMAZON.exists(), reason=f"{AMAZON} is absent (a FinanceBench dev filing)")
def test_a_real_filing_days_payable_outstanding_from_two_statements(tmp_path_factory):
    """The real 10-K: accounts payable and inventories from the balance sheet (two year-ends), cost of sales from
    the statement of operations; the cash-flow statement's 'Accounts payable' change is not the operand."""
    env = bi_env(tmp_path_factory, "bi-amazon", AMAZON.name, "", 0, source=AMAZON)
    kb_deps_doc = next(env)
    q = ("What is Amazon's FY2017 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
         "between FY2016 and FY2017) / (FY2017 COGS + change in inventory between FY2016 and FY2017). Round your "
         "answer to two decimal places. Address the question by using the line items and information shown within "
         "the balance sheet and the P&L statement.")
    out = ask_bi(kb_deps_doc, "bi-amazon", q)
    assert out.get("supported") is True and head(out).endswith("= 93.86 days."), out
    rows = out["answer"].split("Rows used:")[1]
    assert "Accounts payable (2017) 34,616, balance sheet" in rows and "Cost of sales (2017) 111,934" in rows, rows
    q = "What is Amazon's FY2017 return on assets (ROA)? Round your answer to two decimal places."
    out = ask_bi(kb_deps_doc, "bi-amazon", q)  # 3,033 / ((131,310 + 83,402) / 2)
    assert out["supported"] is True and head(out).endswith("= 0.03."), out
    env.close()


def test_formulas_as_analysts_write_them():
    from app.agent.bi.formula import Ref, parse, show, terms
    from app.agent.bi.metrics import definitions, metric_for

    t = parse("365 * (average accounts payable between FY2016 and FY2017) / (FY2017 COGS + change in inventory "
              "between FY2016 and FY2017)")
    assert [(x.name, x.agg, [p.year for p in x.periods]) for x in terms(t)] == [
        ("accounts payable", "average", [2016, 2017]), ("COGS", "value", [2017]), ("inventory", "change", [2016, 2017])]
    assert show(parse("total current assets less total current liabilities")) == \
        "total current assets − total current liabilities"
    t = parse("(cash and cash equivalents + [short-term investments] + accounts receivable) / current liabilities")
    assert [x.optional for x in terms(t)] == [False, True, False, False]  # "short-term" is a word, not a minus
    assert isinstance(parse("DIO + DSO - DPO", frozenset({"dio", "dso", "dpo"})).left.left, Ref)
    q = ("What is the FY2019 cash conversion cycle (CCC) for X? CCC is defined as: DIO + DSO - DPO. DIO is defined "
         "as: 365 * (average inventory between FY2018 and FY2019) / (FY2019 COGS). DSO is defined as: 365 * (average "
         "accounts receivable between FY2018 and FY2019) / (FY2019 Revenue). DPO is defined as: 365 * (average "
         "accounts payable between FY2018 and FY2019) / (FY2019 COGS + change in inventory between FY2018 and FY2019).")
    assert [n for n, _ in definitions(q)] == ["CCC", "DIO", "DSO", "DPO"]
    m = metric_for(q)  # the question's own sub-definitions, expanded
    assert m.defined and m.unit == "days" and len(terms(m.formulas[0])) == 7
    assert metric_for("What was AMCOR's Adjusted Non GAAP EBITDA for FY 2023?") is None  # the company's own measure
    assert metric_for("What is the FY2019 ROA (as a %)?").unit == "percent"
    assert metric_for("Which segment had the highest operating margin in 2019?") is None  # not the company's


def test_a_margin_the_statement_does_not_print_is_computed(env):
    out = ask(env, "What is Acme's FY2019 gross margin?")
    assert out["supported"] is True and head(out).endswith("= 41.67%."), out  # 500 / 1,200


def test_compound_annual_growth_of_a_line_item(env):
    q = "What is Acme's 2 year total revenue CAGR from FY2017 to FY2019 (in units of percents and round to one decimal place)?"
    out = ask(env, q)  # (1,200 / 900)^(1/2) - 1
    assert out["route"] == "bi" and out["supported"] is True, out
    assert head(out) == "revenue CAGR, FY2017 to FY2019: (1,200 / 900)^(1/2) − 1 = 15.5%.", head(out)


SPLIT_COSTS = """<html><body><h1>Wayne Aerospace annual report 2022</h1>
<p>Consolidated statements of operations (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th><th>2020</th></tr>
<tr><td>Sales of products</td><td>55,893</td><td>51,386</td><td>47,142</td></tr>
<tr><td>Sales of services</td><td>10,715</td><td>10,900</td><td>11,016</td></tr>
<tr><td>Total revenues</td><td>66,608</td><td>62,286</td><td>58,158</td></tr>
<tr><td>Cost of products</td><td>(54,061)</td><td>(51,322)</td><td>(59,258)</td></tr>
<tr><td>Cost of services</td><td>(9,049)</td><td>(7,947)</td><td>(9,232)</td></tr>
<tr><td>Loss from operations</td><td>(3,547)</td><td>(2,902)</td><td>(12,767)</td></tr>
</table></body></html>"""


def test_a_line_item_printed_as_its_parts_is_their_sum(tmp_path_factory):
    """No row is cost of goods sold or gross profit: the catalogue's parts of cost of goods sold (cost of products +
    cost of services) give it, so the gross margin is computed from rows the statement prints."""
    for env in bi_env(tmp_path_factory, "bi-parts", "WAYNE_2022_10K.html", SPLIT_COSTS, 1):
        out = ask_bi(env, "bi-parts", "Does Wayne have an improving gross margin profile as of FY2022?")
        assert head(out).startswith("Yes, the gross margin rose from 4.8% in FY2021 to 5.3% in FY2022"), head(out)
        assert "Cost of products" in out["answer"] and "Cost of services" in out["answer"], out["answer"]
        out = ask_bi(env, "bi-parts", "What was Wayne's FY2022 gross margin?")
        assert head(out).endswith("(66,608 − (54,061 + 9,049)) / 66,608 × 100 = 5.25%."), head(out)


CARD_ISSUER = """<html><body><h1>Gotham Card Company annual report 2022</h1>
<p>Consolidated statements of income (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Discount revenue</td><td>30,739</td><td>24,563</td></tr>
<tr><td>Net interest income</td><td>9,895</td><td>7,674</td></tr>
<tr><td>Total revenues net of interest expense</td><td>52,862</td><td>42,380</td></tr>
<tr><td>Provisions for credit losses</td><td>2,182</td><td>(1,419)</td></tr>
<tr><td>Total expenses</td><td>40,164</td><td>33,416</td></tr>
<tr><td>Pretax income</td><td>10,516</td><td>10,383</td></tr>
<tr><td>Net income</td><td>7,514</td><td>8,060</td></tr>
</table></body></html>"""
NOT_USEFUL = " If {m} is not a useful metric for a company like this, then state that and explain why."


def test_a_metric_whose_line_items_no_statement_prints_is_said_not_to_apply(tmp_path_factory, env):
    """Invited to say so, a metric none of whose formulas the statements can ground (a card issuer prints no cost of
    goods sold, gross profit or operating income) is answered as not a useful metric, naming the missing rows, and
    not supported; where the statements print the rows the metric is computed as before."""
    for card in bi_env(tmp_path_factory, "bi-card", "GOTHAM_2022_10K.html", CARD_ISSUER, 1):
        for m, q in (("operating margin", "Does Gotham have an improving operating margin profile as of 2022?"),
                     ("gross margin", "What drove gross margin change as of the FY2022 for Gotham?")):
            out = ask_bi(card, "bi-card", q + NOT_USEFUL.format(m=m))
            assert out["route"] == "bi" and out["supported"] is False, out
            assert head(out).startswith(f"{m[0].upper()}{m[1:]} is not a useful metric for this company: its income "
                                        "statement print"), head(out)
            assert out["citations"] and "Not verified" in out["answer"], out
        out = ask_bi(card, "bi-card", "What was Gotham's operating margin in 2022?")  # not invited: no such answer
        assert "not a useful metric" not in (out.get("answer") or ""), out
    out = ask(env, "Does Acme have an improving gross margin profile as of FY2019?" + NOT_USEFUL.format(m="gross margin"))
    assert head(out).startswith("Yes, the gross margin rose"), head(out)


def test_a_yes_no_judgement_by_the_catalogue_s_threshold(env):
    """"Is it capital intensive?", "a healthy liquidity profile?": the catalogue's judgements (a metric, a threshold,
    the convention) answer yes or no with the metric's value, the convention and the metrics stated beside it."""
    out = ask(env, "Is Acme a capital-intensive business based on FY2019 data?")
    assert out["route"] == "bi" and out["supported"] is True, out
    assert head(out).startswith("No, the capital expenditure as a % of revenue was 7.50% in FY2019, below 10%"), head(out)
    assert "Capital intensity ratio, FY2019: total assets / revenue = 2,400 / 1,200 = 2.00." in head(out), head(out)
    out = ask(env, "Does Acme have a reasonably healthy liquidity profile based on its quick ratio for FY2019?")
    assert head(out).startswith("No, the quick ratio was 0.78 in FY2019, below 1"), head(out)
    out = ask(env, "Does Acme have a healthy liquidity position based on its current ratio in FY2019?")
    assert head(out).startswith("Yes, the current ratio was 1.72 in FY2019, at or above 1"), head(out)


def test_one_line_item_as_a_share_of_another_needs_no_catalogue_entry(env):
    """"Cost of goods sold as a % of revenue" is no metric of the catalogue: two of its line items, one over the
    other in percent, averaged over the years asked."""
    out = ask(env, "What is Acme's two year average of cost of goods sold as a % of revenue from FY2018 to FY2019?")
    assert out["route"] == "bi", out
    assert "(58.3 + 65.0) / 2 = 61.7%" in head(out) or "(65.0 + 58.3) / 2 = 61.7%" in head(out), head(out)


TELECOM = """<html><body><h1>Zeta Telecom annual report 2022</h1>
<p>Consolidated statements of income (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Total operating revenues</td><td>136,835</td><td>133,613</td></tr>
<tr><td>Operating income</td><td>30,467</td><td>32,448</td></tr>
<tr><td>Net income</td><td>21,748</td><td>22,618</td></tr>
</table>
<p>Consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Total assets</td><td>379,680</td><td>366,596</td></tr>
</table>
<p>Adjustments to reconcile net income to net cash provided by operating activities (in millions)</p>
<table>
<tr><th></th><th>2022</th><th>2021</th></tr>
<tr><td>Depreciation and amortization expense</td><td>17,099</td><td>16,206</td></tr>
<tr><td>Capital expenditures (including capitalized software)</td><td>(23,087)</td><td>(20,286)</td></tr>
</table></body></html>"""


def test_an_operand_read_from_a_statement_page_not_recognised_as_one(tmp_path_factory):
    """The cash-flow statement's page is titled by its first caption ("Adjustments to reconcile ..."), so it is not
    recognised as a statement: its "Capital expenditures (including capitalized software)" is still the item."""
    for env in bi_env(tmp_path_factory, "bi-telecom", "ZETA_2022_10K.html", TELECOM, 3):
        out = ask_bi(env, "bi-telecom", "Is Zeta a capital intensive business based on FY 2022 data?")
        assert head(out).startswith("Yes, the capital expenditure as a % of revenue was 16.87% in FY2022"), head(out)
        assert "total assets / revenue = 379,680 / 136,835 = 2.77" in head(out), head(out)


HOLDCO = """<html><body><h1>Holdco plc annual report 2023</h1>
<p>Consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>June 30, 2023</th><th>June 30, 2022</th></tr>
<tr><td>Cash and cash equivalents</td><td>689.0</td><td>775.0</td></tr>
<tr><td>Trade receivables, net of allowance for credit losses of $21 and $25, respectively</td><td>1,875.0</td>
<td>1,935.0</td></tr>
<tr><td>Inventories</td><td>2,213.0</td><td>2,439.0</td></tr>
<tr><td>Total current assets</td><td>5,308.0</td><td>5,853.0</td></tr>
<tr><td>Trade payables</td><td>2,690.0</td><td>3,073.0</td></tr>
<tr><td>Total current liabilities</td><td>4,476.0</td><td>5,103.0</td></tr>
</table>
<p>Schedule I: condensed financial information of the registrant.</p>
<p>Consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>June 30, 2023</th><th>June 30, 2022</th></tr>
<tr><td>Cash and cash equivalents</td><td>54.0</td><td>68.0</td></tr>
<tr><td>Receivables, net</td><td>342.0</td><td>662.0</td></tr>
<tr><td>Total current assets</td><td>477.0</td><td>820.0</td></tr>
<tr><td>Payables</td><td>153.0</td><td>162.0</td></tr>
<tr><td>Total current liabilities</td><td>1,145.0</td><td>1,275.0</td></tr>
</table></body></html>"""


def test_a_ratio_reads_all_its_terms_from_the_first_statement_that_holds_them(tmp_path_factory):
    """The parent company's own balance sheet, printed later, names its receivables more plainly; the quick ratio
    still reads cash, receivables and current liabilities from the consolidated one, not a mix of the two."""
    gen = bi_env(tmp_path_factory, "bi-holdco", "HOLDCO_2023_10K.html", HOLDCO, 2)
    env = next(gen)
    try:
        out = ask_bi(env, "bi-holdco", "What was Holdco's quick ratio in FY2023?")
        # (689 + 1,875) / 4,476 = 0.57; the mix (689 + 342) / 4,476 = 0.23
        assert "0.57" in head(out) and "342" not in out["answer"], out["answer"]
    finally:
        next(gen, None)


SEGMENTS = """<html><body><h1>Stride Inc annual report fiscal 2021</h1>
<p>North America (in millions)</p>
<table>
<tr><th></th><th>Fiscal 2021</th><th>Fiscal 2020</th></tr>
<tr><td>Footwear</td><td>11,644</td><td>9,329</td></tr>
<tr><td>Apparel</td><td>5,028</td><td>4,639</td></tr>
<tr><td>Total revenues</td><td>17,179</td><td>14,484</td></tr>
</table>
<p>Consolidated statements of income (in millions)</p>
<table>
<tr><th></th><th>Fiscal 2021</th><th>Fiscal 2020</th></tr>
<tr><td>Revenues</td><td>44,538</td><td>37,403</td></tr>
<tr><td>Cost of sales</td><td>24,576</td><td>21,162</td></tr>
<tr><td>Gross profit</td><td>19,962</td><td>16,241</td></tr>
<tr><td>Net income</td><td>5,727</td><td>2,539</td></tr>
</table></body></html>"""


def test_a_companys_total_is_read_from_its_statement_not_a_segments_total(tmp_path_factory):
    """A segment's table prints "Total revenues", the words asked, where the income statement prints "Revenues":
    the company's total revenue is the statement's; the segment's is read only when the question names it."""
    gen = bi_env(tmp_path_factory, "bi-segments", "STRIDE_2021_10K.html", SEGMENTS, 2)
    env = next(gen)
    try:
        out = ask_bi(env, "bi-segments", "What was Stride's total revenue in fiscal 2021?")
        assert "44,538" in head(out) and "17,179" not in out["answer"], out["answer"]
        out = ask_bi(env, "bi-segments", "What was Stride's North America revenue in fiscal 2021?")
        assert "17,179" in head(out), out["answer"]
    finally:
        next(gen, None)


WAREHOUSE = """<html><body><h1>Bulkmart annual report fiscal 2021</h1>
<p>Consolidated statements of income (in millions)</p>
<table>
<tr><th></th><th>Fiscal 2021</th><th>Fiscal 2020</th></tr>
<tr><td>REVENUE</td><td></td><td></td></tr>
<tr><td>Net sales</td><td>192,052</td><td>163,220</td></tr>
<tr><td>Membership fees</td><td>3,877</td><td>3,541</td></tr>
<tr><td>Total revenue</td><td>195,929</td><td>166,761</td></tr>
<tr><td>OPERATING EXPENSES</td><td></td><td></td></tr>
<tr><td>Merchandise costs</td><td>170,684</td><td>144,939</td></tr>
</table></body></html>"""


def test_a_row_the_question_names_outranks_its_synonym_under_a_section_of_that_name(tmp_path_factory):
    """"Net sales" is revenue by the synonyms and sits under "REVENUE": the section word is the one the synonym
    already answered, so it does not lift the row over "Total revenue", which the question names."""
    gen = bi_env(tmp_path_factory, "bi-warehouse", "BULKMART_2021_10K.html", WAREHOUSE, 1)
    env = next(gen)
    try:
        out = ask_bi(env, "bi-warehouse", "What was Bulkmart's total revenue in fiscal 2021?")
        assert "195,929" in head(out), out["answer"]
        out = ask_bi(env, "bi-warehouse", "What were Bulkmart's net sales in fiscal 2021?")
        assert "192,052" in head(out), out["answer"]
    finally:
        next(gen, None)
