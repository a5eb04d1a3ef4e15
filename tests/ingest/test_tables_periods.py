"""Column periods as analysts print them, normalised; and table rows/scales from HTML, XLSX-like and ruled
grids through the one normaliser."""
from __future__ import annotations

import pytest

from ingest.parsers import RawTable
from ingest.tables.periods import parse_period
from ingest.tables.typed import build_typed_table


@pytest.mark.parametrize("header, context, key, end, months, year, quarter", [
    ("Years Ended December 31, 2021", "", "2021", "2021-12-31", 12, 2021, 0),
    ("2021", "", "2021", "", 0, 2021, 0),
    ("2020", "Years Ended December 31,", "2020", "2020-12-31", 12, 2020, 0),
    ("Fiscal 2018", "", "FY2018", "", 12, 2018, 0),
    ("FY19", "", "FY2019", "", 12, 2019, 0),
    ("Q4 2024", "", "Q4 2024", "", 3, 2024, 4),
    ("Fourth Quarter 2024", "", "Q4 2024", "", 3, 2024, 4),
    ("Three Months Ended June 30, 2023", "", "3M 2023-06-30", "2023-06-30", 3, 2023, 0),
    ("Six Months Ended December 31, 2022", "", "6M 2022-12-31", "2022-12-31", 6, 2022, 0),
    ("July 27, 2019", "", "2019-07-27", "2019-07-27", 0, 2019, 0),
    ("June 30, 2023", "Twelve Months Ended", "2023-06-30", "2023-06-30", 0, 2023, 0),
    ("Year Ended December 28, 2018", "", "2018", "2018-12-28", 12, 2018, 0),
    ("As of December 31, 2023", "", "2023-12-31", "2023-12-31", 0, 2023, 0),
    ("Dec. 31, 2020", "", "2020-12-31", "2020-12-31", 0, 2020, 0),
    ("31 December 2023", "", "2023-12-31", "2023-12-31", 0, 2023, 0),
    ("Year ended 31 December 2023", "", "2023", "2023-12-31", 12, 2023, 0),
    ("2023", "Six months ended 30 June", "6M 2023-06-30", "2023-06-30", 6, 2023, 0),
    ("H1 2023", "", "H1 2023", "", 6, 2023, 0),
    ("First half 2022", "", "H1 2022", "", 6, 2022, 0),
    ("Q3 FY24", "", "Q3 2024", "", 3, 2024, 3),
])
def test_periods_are_read_from_headers(header, context, key, end, months, year, quarter):
    p = parse_period(header, context)
    assert p is not None and (p.key, p.end, p.months, p.year, p.quarter) == (key, end, months, year, quarter)


@pytest.mark.parametrize("header", ["% Change", "2021 vs 2020", "2019-2020", "Revenue", "Increase (decrease)", ""])
def test_change_columns_and_labels_name_no_period(header):
    assert parse_period(header) is None


def test_html_like_statement_rows_sections_totals_and_per_share():
    raw = RawTable(1, "Consolidated Statements of Income", [
        ["(in thousands, except share and per share data)", "Fiscal 2019", "Fiscal 2018"],
        ["Net revenue", "$ 5,100", "$ 4,800"],
        ["Operating expenses:", "", ""],
        ["Research and development", "1,000", "900"],
        ["Sales and marketing", "2,000", "1,900"],
        ["Total operating expenses", "3,000", "2,800"],
        ["Net income per share — diluted", "$ 1.25", "$ 1.10"],
        ["Weighted-average shares used — diluted", "1,650,000", "1,600,000"],
    ], context="Consolidated Statements of Income")
    t = build_typed_table(raw)
    assert t.statement == "income_statement" and t.scale == "thousands"
    assert [c.name for c in t.columns] == ["item", "fiscal_2019", "fiscal_2018"]
    assert [c.period for c in t.columns[1:]] == ["FY2019", "FY2018"]
    meta = {m.label: m for m in t.row_meta}
    assert "Operating expenses:" not in meta and meta["Sales and marketing"].parent == "Operating expenses"
    assert meta["Total operating expenses"].is_total and meta["Total operating expenses"].parent == "Operating expenses"
    assert meta["Net income per share — diluted"].unit == "per share" and meta["Net income per share — diluted"].scale == ""
    shares = meta["Weighted-average shares used — diluted"]
    assert shares.unit == "shares" and shares.scale == ""  # "except share ... data": counts are not in thousands


def test_merged_rows_are_split_so_numbers_stay_numbers():
    raw = RawTable(2, "Segment results", [
        ["Segment", "2024", "2023"],
        ["Software\nServices\nHardware", "9,120\n4,210\n1,502", "8,870\n4,001\n1,611"],
        ["Total", "14,832", "14,482"],
    ])
    t = build_typed_table(raw)
    assert [c.sql_type for c in t.columns] == ["TEXT", "REAL", "REAL"]
    assert t.rows == [["Software", 9120.0, 8870.0], ["Services", 4210.0, 4001.0], ["Hardware", 1502.0, 1611.0],
                      ["Total", 14832.0, 14482.0]]
    assert [m.is_total for m in t.row_meta] == [False, False, False, True]


def test_ruled_grid_with_currency_cells_and_headers_in_the_caption():
    raw = RawTable(5, "", [
        ["Net sales", "$", "3,642", "$", "3,507"],
        ["Cost of sales", "(2,980)", "", "(2,862)", ""],
        ["Gross profit", "662", "", "645", ""],
    ], context="Three Months Ended December 31, ($ in millions, except per share data) 2022 2021", source="ruled")
    t = build_typed_table(raw)
    assert [c.period for c in t.columns[1:]] == ["3M 2022-12-31", "3M 2021-12-31"]
    assert t.rows[1] == ["Cost of sales", -2980.0, -2862.0] and t.scale == "millions" and t.currency == "USD"


def test_duration_over_the_row_labels_makes_dated_columns_periods():
    raw = RawTable(40, "Consolidated Statements of Earnings", [
        ["Fiscal Years Ended", "January 28, 2023", "January 29, 2022"],
        ["Revenue", "$46,298", "$51,761"],
        ["Cost of sales", "36,386", "40,121"],
    ], context="$ and shares in millions, except per share amounts", header_rows=1)
    t = build_typed_table(raw)
    values = [c for c in t.columns if c.role == "value"]
    assert [(c.period, c.period_end, c.period_months, c.fiscal_year) for c in values] == [
        ("2023", "2023-01-28", 12, 2023), ("2022", "2022-01-29", 12, 2022)]
    sheet = build_typed_table(RawTable(39, "Consolidated Balance Sheets", [
        [None, "January 28, 2023", "January 29, 2022"], ["Cash", "$1,874", "$2,936"], ["Total assets", "15,803", "17,504"],
    ], context="$ in millions", header_rows=1))
    assert [c.period for c in sheet.columns[1:]] == ["2023-01-28", "2022-01-29"]  # instants stay instants
