"""Statement pages of real filings (../shared/eval/financebench-dev; skipped when absent): each primary statement
is found, classified from its own title and given its period columns; tables in the notes that merely mention
a statement are not statements. One page at a time, so the test stays quick."""
from __future__ import annotations

from pathlib import Path

import pytest

from ingest.tables.pdf import page_tables
from ingest.tables.typed import build_typed_table

FILINGS = Path(__file__).resolve().parents[3] / "shared" / "eval" / "financebench-dev" / "pdfs"
needs_filings = pytest.mark.skipif(not FILINGS.is_dir(), reason=f"{FILINGS} is absent (the FinanceBench dev filings)")


def _typed(doc: str, page: int):
    import pdfplumber

    with pdfplumber.open(str(FILINGS / f"{doc}.pdf")) as pdf:
        raws, _ = page_tables(pdf.pages[page - 1], page)
    return [t for t in (build_typed_table(r) for r in raws) if t is not None]


@needs_filings
@pytest.mark.parametrize("doc, page, kind, periods, scale", [
    # title read inside the grid under a running head "Table of Contents"
    ("AMAZON_2017_10K", 37, "cash_flow", ["2015", "2016", "2017"], "millions"),
    # section rows "Assets" / "Current assets" between the dates and the first row
    ("BESTBUY_2019_10K", 52, "balance_sheet", ["2019-02-02", "2018-02-03"], "millions"),
    # "Operating activities" under the column headers of a 10-Q cash-flow statement
    ("BESTBUY_2024Q2_10Q", 6, "cash_flow", ["6M 2023-07-29", "6M 2022-07-30"], "millions"),
    ("AMCOR_2023Q2_10Q", 8, "cash_flow", ["6M 2022-12-31", "6M 2021-12-31"], "millions"),
])
def test_primary_statements_have_their_kind_and_periods(doc, page, kind, periods, scale):
    typed = [t for t in _typed(doc, page) if t.statement == kind]
    assert typed, [(t.title, t.statement) for t in _typed(doc, page)]
    t = max(typed, key=lambda t: len(t.rows))
    assert t.periods == periods and t.scale == scale


@needs_filings
@pytest.mark.parametrize("doc, page", [
    ("AMCOR_2023Q2_10Q", 22),  # effects of derivatives "on the ... statements of income"
    ("BESTBUY_2024Q2_10Q", 11),  # a "Statement of Earnings Location" column
    ("COSTCO_2021_10K", 64),  # segment columns with income-statement rows
])
def test_note_tables_that_mention_a_statement_are_not_statements(doc, page):
    typed = _typed(doc, page)
    assert typed and not [t.title for t in typed if t.statement in ("income_statement", "balance_sheet", "cash_flow")]


@needs_filings
def test_group_headers_do_not_fuse_period_columns_on_a_real_page():
    typed = _typed("AMCOR_2023Q2_10Q", 22)
    first = typed[0]
    assert [c.period for c in first.columns if c.role == "value"] == [
        "3M 2022-12-31", "3M 2021-12-31", "6M 2022-12-31", "6M 2021-12-31"]
    assert first.rows[0][:3] == ["Commodity contracts", "Cost of sales", -4.0]
