"""Captions around real statements: the statement's own title printed across the table (not a column name,
and it names the statement), sentences that merely mention a statement (not a statement), tables whose
columns are segments (not a primary statement), caption rows inside the header, wrapped labels, row scales."""
from __future__ import annotations

from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from ingest.parsers import RawTable
from ingest.parsers.pdf import parse_pdf
from ingest.tables.rows import classify_statement, statement_title
from ingest.tables.typed import build_typed_table


def test_statement_titles_are_caption_lines_not_sentences():
    assert statement_title("CONSOLIDATED STATEMENTS OF CASH FLOWS") == "cash_flow"
    assert statement_title("Condensed Consolidated Balance Sheets (Unaudited)") == "balance_sheet"
    assert statement_title("U.S. GAAP Condensed Consolidated Statements of Income (Unaudited)") == "income_statement"
    assert statement_title("Consolidated Statements of Equity") == "equity"
    assert statement_title("Consolidated Statements of Changes in Shareholders' Equity") == "equity"
    # a PDF text layer that dropped the space after a function word still names its statement
    assert statement_title("Consolidated Statement ofCash Flows") == "cash_flow"
    assert statement_title("CONSOLIDATED STATEMENTS OFINCOME") == "income_statement"
    for sentence in ["The following tables provide the effects of derivative instruments on the consolidated "
                     "statements of income:",
                     "Supplemental balance sheet information related to our leases was as follows ($ in millions):",
                     "Effects of our derivative instruments on our Consolidated Statements of Earnings",
                     "Balance sheets:", "ANALYSIS OF THE CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS",
                     "NOTE 9 - OTHER CONSOLIDATED BALANCE SHEET COMPONENTS", "Balance Sheets for Obligor Group",
                     "available-for-sale securities and gains (losses) from changes on certain balance sheet amounts."]:
        assert statement_title(sentence) == "", sentence


def test_row_items_make_a_statement_only_when_columns_are_periods():
    labels = ["Net sales", "Gross profit", "Operating income", "Income taxes", "Net income"] + [f"Item {i}" for i in
                                                                                                range(6)]
    assert classify_statement("", "", labels, has_periods=3) == "income_statement"
    assert classify_statement("", "", labels, has_periods=0) == ""  # columns are segments: a note's table
    assert classify_statement("", "", labels, has_periods=5) == ""  # five years of selected data
    assert classify_statement("", "Historical results are not necessarily indicative of future results.", labels,
                              has_periods=3) == ""
    assert classify_statement("", "The computation of earnings per share is as follows:", labels,
                              ["(in thousands, except per share data)"], has_periods=3) == ""
    assert classify_statement("", "The following table provides the effects on the consolidated statements of "
                              "income:", labels[:4], has_periods=2) == ""


def test_title_printed_across_the_columns_names_the_statement():
    """A borderless cash-flow statement whose company name and title were read as header cells spanning the
    value columns (the page's running head 'Table of Contents' was taken for its title)."""
    rows = [
        ["AMAZON.COM, INC.", None, None, None],
        ["CONSOLIDATED STATEMENTS OF CASH FLOWS", "CONSOLIDATED STATEMENTS OF CASH FLOWS", None, None],
        ["(in millions)", None, None, None],
        [None, "Year Ended December 31,", "Year Ended December 31,", "Year Ended December 31,"],
        [None, "2015", "2016", "2017"],
        ["CASH AND CASH EQUIVALENTS, BEGINNING OF PERIOD", "$14,557", "$15,890", "$19,334"],
        ["OPERATING ACTIVITIES:", None, None, None],
        ["Net income", "596", "2,371", "3,033"],
        ["Net cash provided by (used in) operating activities", "12,039", "17,272", "18,434"],
    ]
    t = build_typed_table(RawTable(37, "Table of Contents", rows, context="Table of Contents", header_rows=5))
    assert t.statement == "cash_flow" and t.title == "CONSOLIDATED STATEMENTS OF CASH FLOWS"
    assert t.scale == "millions"
    values = [c for c in t.columns if c.role == "value"]
    assert [c.period for c in values] == ["2015", "2016", "2017"]
    assert all("STATEMENTS" not in c.label.upper() for c in t.columns)
    assert t.rows[1][:2] == ["Net income", 596.0]


def test_company_and_title_rows_over_an_equity_statement():
    rows = [
        [None, "Amcor plc and Subsidiaries", "Amcor plc and Subsidiaries", "Amcor plc and Subsidiaries"],
        [None, "Condensed Consolidated Statements of Equity", "Condensed Consolidated Statements of Equity",
         "Condensed Consolidated Statements of Equity"],
        [None, "Ordinary", "Retained", "Total"],
        ["($ in millions)", "Shares", "Earnings", "Equity"],
        ["Balance as of September 30, 2021", "15", "473", "4,705"],
        ["Net income", "", "225", "229"],
        ["Dividends declared", "", "(360)", "(360)"],
        ["Net sales", "1", "2", "3"], ["Gross profit", "1", "2", "3"], ["Operating income", "1", "2", "3"],
        ["Income tax expense", "1", "2", "3"], ["Other", "1", "2", "3"], ["More", "1", "2", "3"],
    ]
    t = build_typed_table(RawTable(9, "", rows, header_rows=4))
    assert t.statement == "equity"  # not an income statement from its row items
    assert [c.label for c in t.columns[1:]] == ["Ordinary Shares", "Retained Earnings", "Total Equity"]


def test_caption_row_inside_the_header_and_year_sections():
    rows = [
        [None, "December 31", "September 30", "June 30"],
        [None, "(in thousands, except for per share data)", "(in thousands, except for per share data)",
         "(in thousands, except for per share data)"],
        ["Total revenues", "$1,823,333", "$1,738,355", "$1,644,694"],
        ["Net income", "43,178", "29,432", "26,335"],
    ]
    t = build_typed_table(RawTable(63, "Selected Quarterly Financial Data (Unaudited)", rows, header_rows=2))
    assert [c.label for c in t.columns[1:]] == ["December 31", "September 30", "June 30"]
    assert t.scale == "thousands" and t.columns[1].name == "december_31"


def test_wrapped_section_label_and_a_row_scale_in_the_label():
    rows = [
        [None, "2021", "2020"],
        ["Net sales", "$192,052", "$163,220"],
        ["NET INCOME PER COMMON SHARE ATTRIBUTABLE TO", None, None],
        ["COSTCO:", None, None],
        ["Basic", "$11.30", "$9.05"],
        ["Diluted", "$11.27", "$9.02"],
        ["Shares used in calculation (000’s)", None, None],
        ["Basic", "443,089", "442,297"],
    ]
    t = build_typed_table(RawTable(36, "CONSOLIDATED STATEMENTS OF INCOME", rows,
                                   context="(amounts in millions, except per share data)"))
    metas = t.row_meta
    assert t.scale == "millions"
    assert metas[1].parent == "NET INCOME PER COMMON SHARE ATTRIBUTABLE TO COSTCO"
    assert (metas[1].unit, metas[1].scale) == ("per share", "")
    assert (metas[3].label, metas[3].unit, metas[3].scale) == ("Basic", "shares", "thousands")


def write_wrapped_cash_flow_pdf(path):
    """A borderless cash-flow statement whose titles are centred over the page and one of whose labels is
    too long for its line: it wraps into a line of its own, which must not cut the statement in two."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 9)
    c.drawString(72, 750, "Table of Contents")
    c.setFont("Helvetica-Bold", 10)
    for y, text in ((730, "GLOBEX CORPORATION"), (716, "CONSOLIDATED STATEMENTS OF CASH FLOWS"),
                    (702, "(in millions)")):
        c.drawCentredString(306, y, text)
    c.setFont("Helvetica", 9)
    c.drawCentredString(470, 684, "Year Ended December 31,")
    cols = (420, 480, 540)
    for x, year in zip(cols, ("2021", "2020", "2019")):
        c.drawRightString(x, 670, year)
    rows = [
        ("Net income", ("1,058", "815", "612")),
        ("Depreciation and amortization", ("586", "625", "601")),
        ("Deferred income taxes", ("(41)", "(12)", "18")),
        ("Changes in operating assets and liabilities, excluding effect of acquisitions, divestitures, and", None),
        ("    currency", ("(265)", "(207)", "(120)")),
        ("Net cash provided by operating activities", ("1,261", "1,526", "1,111")),
        ("Purchases of property, plant and equipment", ("(526)", "(527)", "(480)")),
        ("Net cash used in investing activities", ("(496)", "(509)", "(470)")),
    ]
    y = 656
    for label, values in rows:
        c.drawString(72, y, label)
        for x, v in zip(cols, values or ()):
            c.drawRightString(x, y, v)
        y -= 14
    c.showPage()
    c.save()
    return path


def test_wrapped_label_keeps_the_statement_whole_with_its_title(tmp_path):
    parsed = parse_pdf(write_wrapped_cash_flow_pdf(tmp_path / "globex.pdf"))
    typed = [build_typed_table(r) for r in parsed.tables]
    assert len(typed) == 1, [t.title for t in typed]
    t = typed[0]
    assert t.statement == "cash_flow" and t.scale == "millions"
    assert [c.period for c in t.columns if c.role == "value"] == ["2021", "2020", "2019"]
    rows = {r[0]: r[1:] for r in t.rows}
    label = "Changes in operating assets and liabilities, excluding effect of acquisitions, divestitures, and currency"
    assert rows[label] == [-265.0, -207.0, -120.0]
    assert rows["Net cash used in investing activities"] == [-496.0, -509.0, -470.0]


def test_footnote_marks_and_currency_dashes_leave_numbers_numbers():
    """Selected financial data with footnote marks in cells of their own and a row of marks under the years."""
    rows = [
        ["Year Ended June 30,", "2016", None, "2015", None, "2014 (d)"],
        [None, "(a)", "(a)", "(a)", "(a)", "(a)"],
        ["Revenue", "$85,320", None, "$93,580", None, "$86,833"],
        [None, None, "(a)", None, None, None],
        ["Gross margin", "$52,540", None, "$60,542", None, "$59,755"],
        ["Operating income", "20,182", "(b)", "18,161", "(c)", "27,759"],
        ["Restructuring", "$-", None, "$ —", None, "(1)"],
    ]
    t = build_typed_table(RawTable(28, "FINANCIAL HIGHLIGHTS", rows, context="(In millions, except per share data)",
                                   header_rows=2))
    values = [c for c in t.columns if c.role == "value"]
    assert [c.period for c in values] == ["2016", "2015", "2014"]
    assert all(c.sql_type == "REAL" and c.period_months == 12 for c in values)
    assert [r[0] for r in t.rows] == ["Revenue", "Gross margin", "Operating income", "Restructuring"]
    assert t.rows[0][1:] == [85320.0, 93580.0, 86833.0] and t.rows[3][1:] == [None, None, -1.0]
    assert t.statement == ""  # highlights: the income statement is elsewhere


def test_a_column_header_naming_a_statement_is_no_statement_title():
    rows = [
        [None, None, "Gain (Loss) Recognized", "Gain (Loss) Recognized"],
        [None, None, "Three Months Ended", "Three Months Ended"],
        [None, "Statement of Earnings", None, None],
        [None, "Location", "July 29, 2023", "July 30, 2022"],
        ["Interest rate swap contracts", "Interest expense", "$(10)", "$14"],
        ["Total", None, "$-", "$-"],
    ]
    t = build_typed_table(RawTable(11, "Effects of our derivative instruments on our Condensed Consolidated Statements "
                                       "of Earnings were as follows ($ in millions):", rows, header_rows=4))
    assert t.statement == ""
    assert t.columns[1].label == "Statement of Earnings Location"
    assert [c.period for c in t.columns[2:]] == ["3M 2023-07-29", "3M 2022-07-30"]


def test_a_per_share_column_is_not_in_millions():
    rows = [
        [None, "EBITDA", "Net Income", "EPS (Diluted US cents)"],
        ["Net income attributable to Amcor", "805", "805", "52.9"],
        ["Adjusted", "2,018", "1,048", "70.5"],
    ]
    t = build_typed_table(RawTable(11, "Reconciliation", rows, context="($ million)", header_rows=1))
    cols = {c.label: c for c in t.columns}
    assert cols["EBITDA"].scale == "millions" and cols["EBITDA"].unit == "USD millions"
    assert cols["EPS (Diluted US cents)"].scale == "" and cols["EPS (Diluted US cents)"].unit == "cents per share"


def test_selected_data_headings_printed_across_the_columns_are_captions():
    rows = [["ITEM 6. SELECTED FINANCIAL DATA"] * 4, [None, "FINANCIAL HIGHLIGHTS", None, "FINANCIAL HIGHLIGHTS"],
            ["(In millions, except per share data)", None, None, None], ["Year Ended June 30,", "2016", "2015", "2014"]]
    rows += [[item, "1", "2", "3"] for item in ("Revenue", "Gross margin", "Operating income", "Net income",
                                                 "Diluted earnings per share", "Total assets", "Long-term debt",
                                                 "Total liabilities", "Total stockholders' equity", "Cash dividends")]
    t = build_typed_table(RawTable(28, "trading plan.", rows, header_rows=4))
    assert t.statement == "" and t.scale == "millions"
    assert [c.label for c in t.columns[1:]] == ["2016", "2015", "2014"]


def test_percent_rows_in_an_amount_column_and_percent_columns():
    rows = [
        [None, "Q2 2023 Amount", "Q2 2023 Percent to Sales"],
        ["Sales to customers", "$21,519", "100.0 %"],
        ["Cost of products sold", "6,462", "30.0"],
        ["Net earnings", "5,144", "23.9"],
        ["Effective tax rate", "15.1 %", ""],
    ]
    t = build_typed_table(RawTable(12, "Condensed Consolidated Statement of Earnings", rows,
                                   context="(Unaudited; in Millions Except Per Share Figures)", header_rows=1))
    assert [c.unit for c in t.columns[1:]] == ["USD millions", "%"]
    meta = {m.label: m for m in t.row_meta}
    assert (meta["Effective tax rate"].unit, meta["Effective tax rate"].scale) == ("%", "")
    assert meta["Net earnings"].unit == "" and meta["Net earnings"].scale == "millions"


def test_a_thousands_unit_printed_under_the_periods():
    """'$’000' (and '£'000') under each period: the values are thousands, not dollars."""
    rows = [
        [None, "30 June 2019", "30 June 2018", "Change"],
        [None, "$’000", "$’000", "%"],
        ["Net profit/(loss) after tax", "(9,819)", "6,639", "(248%)"],
        ["Underlying EBITDA", "85,123", "62,575", "36%"],
    ]
    t = build_typed_table(RawTable(1, "Financial results", rows, header_rows=2))
    assert t.scale == "thousands", (t.scale, [c.label for c in t.columns])
    from ingest.tables.rows import find_scale
    assert find_scale("£'000") == find_scale("(’000)") == "thousands" and find_scale("$ 1,000") == ""
