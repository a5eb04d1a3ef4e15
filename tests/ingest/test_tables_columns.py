"""Borderless columns in real PDFs (generated with reportlab): a group header over two period columns does not
fuse them, a text column between labels and numbers keeps its own header, and a scale stated once higher up
the page reaches a table whose own caption states none."""
from __future__ import annotations

from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from ingest.parsers.pdf import parse_pdf
from ingest.tables.typed import build_typed_table


def draw_rows(c, y: float, rows, xs, label_x: float = 40, step: float = 12) -> float:
    """Rows of (label, cells) drawn top-down: the label left at ``label_x``, each cell right-aligned at its x
    (an empty or None cell left blank); returns the y below the last row."""
    for label, cells in rows:
        c.drawString(label_x, y, label)
        for x, v in zip(xs, cells or ()):
            if v:
                c.drawRightString(x, y, v)
        y -= step
    return y


def finish(c, path):
    c.showPage()
    c.save()
    return path


def write_grouped_pdf(path):
    """Derivative gains by the line of the income statement they hit: label, a text column, then two period
    groups of two columns each, amounts printed with a '$' far left of the number."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 8)
    c.drawString(40, 750, "The following table shows the gains and losses of our derivative instruments:")
    c.drawCentredString(215, 722, "Location of Gain / (Loss)")
    c.drawCentredString(345, 710, "Three Months Ended December 31,")
    c.drawCentredString(510, 710, "Six Months Ended December 31,")
    c.drawString(40, 698, "($ in millions)")
    values = (340, 420, 505, 585)
    for x, year in zip(values, ("2022", "2021", "2022", "2021")):
        c.drawRightString(x - 20, 698, year)
    rows = [("Commodity contracts", "Cost of sales", ("$(4)", "$6", "$(2)", "$12")),
            ("Forward exchange contracts", "Net sales", ("(1)", "—", "(1)", "—")),
            ("Treasury locks", "Interest expense", ("—", "—", "(1)", "(1)")),
            ("Total", "", ("$(5)", "$6", "$(4)", "$11"))]
    y = 682
    for label, location, cells in rows:
        c.drawString(40, y, label)
        c.drawCentredString(215, y, location)
        for x, v in zip(values, cells):
            if v.startswith("$"):
                c.drawString(x - 74, y, "$")
                v = v[1:]
            c.drawRightString(x, y, v)
        y -= 12
    c.showPage()
    c.save()
    return path


def test_group_headers_span_their_period_columns_without_fusing_them(tmp_path):
    parsed = parse_pdf(write_grouped_pdf(tmp_path / "derivatives.pdf"))
    typed = [build_typed_table(r) for r in parsed.tables]
    assert len(typed) == 1
    t = typed[0]
    values = [c for c in t.columns if c.role == "value"]
    assert [c.period for c in values] == ["3M 2022-12-31", "3M 2021-12-31", "6M 2022-12-31", "6M 2021-12-31"]
    text = [c for c in t.columns if c.role == "text"]
    assert len(text) == 1 and text[0].label == "Location of Gain / (Loss)"
    assert all("Location" not in c.label for c in values)  # its header is not spread over the numbers
    rows = {r[0]: r[1:] for r in t.rows}
    assert rows["Commodity contracts"] == ["Cost of sales", -4.0, 6.0, -2.0, 12.0]
    assert rows["Total"][1:] == [-5.0, 6.0, -4.0, 11.0]
    assert t.scale == "millions"


def write_scale_above_pdf(path):
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 9)
    c.drawString(72, 750, "NOTES TO CONDENSED CONSOLIDATED FINANCIAL STATEMENTS")
    c.drawString(72, 738, "(MILLIONS, EXCEPT PER SHARE DATA)")
    prose = ["Revenues by product are presented below. The amounts of the prior period were recast to the new",
             "segments; products are grouped by their primary indication. Alliance revenues are recorded net",
             "of the partner's share. Products sold under collaboration agreements are included where we",
             "record the sale. Amounts may not add due to rounding, and percentages are computed on the",
             "unrounded amounts. See the Revenues section of MD&A for an analysis of the changes."]
    y = 714
    for line in prose:
        c.drawString(72, y, line)
        y -= 12
    y -= 16
    c.drawRightString(420, y, "2023")
    c.drawRightString(500, y, "2022")
    y -= 14
    draw_rows(c, y, [("Ruxience", ("100", "113")), ("Xalkori", ("86", "118")), ("Retacrit", ("87", "106")),
                     ("Aromasin", ("72", "59"))], (420, 500), label_x=72)
    return finish(c, path)


def test_scale_stated_once_higher_up_the_page_reaches_the_table(tmp_path):
    parsed = parse_pdf(write_scale_above_pdf(tmp_path / "notes.pdf"))
    typed = [build_typed_table(r) for r in parsed.tables]
    assert len(typed) == 1
    t = typed[0]
    assert t.scale == "millions"
    assert [c.unit for c in t.columns if c.role == "value"] == ["millions", "millions"]
    assert t.rows[0] == ["Ruxience", 100.0, 113.0]


def write_section_under_header_pdf(path):
    """A cash-flow statement whose first rows are section headings right under the column headers."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 9)
    c.drawString(72, 750, "Table of Contents")
    c.drawString(72, 736, "Condensed Consolidated Statements of Cash Flows")
    c.drawString(72, 724, "$ in millions (unaudited)")
    c.drawCentredString(460, 700, "Six Months Ended")
    c.drawRightString(440, 688, "July 29, 2023")
    c.drawRightString(520, 688, "July 30, 2022")
    y = 674
    draw_rows(c, y, [("Cash flows", None), ("Operating activities", None), ("Net earnings", ("$518", "$647")),
                     ("Depreciation and amortization", ("473", "453")), ("Restructuring charges", ("(16)", "35")),
                     ("Total cash provided by operating activities", ("1,024", "1,187"))], (440, 520), label_x=72)
    return finish(c, path)


def test_section_row_under_the_headers_keeps_them_in_the_table(tmp_path):
    parsed = parse_pdf(write_section_under_header_pdf(tmp_path / "cash.pdf"))
    typed = [build_typed_table(r) for r in parsed.tables]
    assert len(typed) == 1
    t = typed[0]
    assert t.statement == "cash_flow" and t.title == "Condensed Consolidated Statements of Cash Flows"
    assert [c.period for c in t.columns if c.role == "value"] == ["6M 2023-07-29", "6M 2022-07-30"]
    assert t.row_meta[0].label == "Net earnings" and t.row_meta[0].parent == "Operating activities"


def write_stacked_headers_pdf(path):
    """A non-GAAP reconciliation: one period group over four columns whose own headers are stacked words
    ("EPS" / "(Diluted" / "US" / "cents)") with a footnote mark "(1)" on a line of its own."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 8)
    c.drawString(40, 750, "Reconciliation of non-GAAP measures")
    cols = (300, 360, 420, 480)
    c.drawCentredString(400, 730, "Twelve Months Ended June 30, 2023")
    c.drawRightString(cols[3], 720, "EPS")
    c.drawRightString(cols[3], 711, "(Diluted")
    c.drawRightString(cols[2], 702, "Net")
    c.drawRightString(cols[3], 702, "US")
    c.drawRightString(cols[3] + 8, 694, "(1)")
    c.drawString(40, 686, "($ million)")
    for x, text in zip(cols, ("EBITDA", "EBIT", "Income", "cents)")):
        c.drawRightString(x, 686, text)
    draw_rows(c, 672, [("Net income attributable to Amcor", ("1,048", "1,048", "1,048", "70.5")),
                     ("Tax expense", ("193", "193", "", "")), ("Interest expense, net", ("259", "259", "", "")),
                     ("EBITDA, EBIT, Net income and EPS", ("2,080", "1,510", "1,048", "70.5"))], cols, label_x=40)
    return finish(c, path)


def test_stacked_column_headers_stay_over_their_own_column(tmp_path):
    parsed = parse_pdf(write_stacked_headers_pdf(tmp_path / "reconciliation.pdf"))
    typed = [build_typed_table(r) for r in parsed.tables]
    assert len(typed) == 1
    t = typed[0]
    values = [c for c in t.columns if c.role == "value"]
    assert [c.label for c in values] == ["Twelve Months Ended June 30, 2023 EBITDA", "Twelve Months Ended June 30, 2023 EBIT",
                                         "Twelve Months Ended June 30, 2023 Net Income",
                                         "Twelve Months Ended June 30, 2023 EPS (Diluted US cents)"]
    assert all(c.period_months == 12 and c.period_end == "2023-06-30" for c in values)
    assert [c.unit for c in values] == ["USD millions"] * 3 + ["cents per share"]
    assert t.rows[0][1:] == [1048.0, 1048.0, 1048.0, 70.5]


def write_year_over_groups_pdf(path):
    """A quarterly statement: one year centred over Q1 / Q2 / SIX MONTHS groups, each an amount and a percent
    column, beside the caption printed over the row labels."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 8)
    c.drawString(40, 750, "Condensed Consolidated Statement of Earnings")
    c.drawString(40, 736, "(Unaudited; in Millions Except Per Share Figures)")
    c.drawCentredString(440, 736, "2023")
    cols = (300, 350, 420, 470, 540, 590)
    for (a, b), text in zip(((cols[0], cols[1]), (cols[2], cols[3]), (cols[4], cols[5])), ("Q1", "Q2", "SIX MONTHS")):
        c.drawCentredString((a + b) / 2 - 15, 724, text)
    for x in cols[1::2]:
        c.drawRightString(x, 714, "Percent")
    for x, text in zip(cols, ("Amount", "to Sales") * 3):
        c.drawRightString(x, 704, text)
    draw_rows(c, 690, [("Sales to customers", ("$20,894", "100.0 %", "$21,519", "100.0 %", "$42,413", "100.0 %")),
                     ("Cost of products sold", ("6,687", "32.0", "6,462", "30.0", "13,149", "31.0")),
                     ("Gross Profit", ("14,207", "68.0", "15,057", "70.0", "29,264", "69.0"))], cols, label_x=40)
    return finish(c, path)


def test_a_year_over_period_groups_reaches_every_column(tmp_path):
    parsed = parse_pdf(write_year_over_groups_pdf(tmp_path / "quarterly.pdf"))
    typed = [build_typed_table(r) for r in parsed.tables]
    assert len(typed) == 1
    t = typed[0]
    values = [c for c in t.columns if c.role == "value"]
    assert [c.period for c in values] == ["Q1 2023", "Q1 2023", "Q2 2023", "Q2 2023", "6M 2023", "6M 2023"]
    assert [c.unit for c in values] == ["USD millions", "%"] * 3
    assert t.statement == "income_statement" and t.rows[0][1:3] == [20894.0, 100.0]


def test_a_first_value_column_read_into_the_labels_is_split_off():
    """A statement as a PDF grid left it (a cash-flow statement's first page: the 2020 values glued to the row
    labels, "2020" over the label column): the values become the 2020 column again, the labels plain."""
    from ingest.parsers import RawTable

    rows = [["2020", "Fiscal Year 2019", "Fiscal Year 2018"],
            ["Cash Flows - Operating Activities", None, None],
            ["Net earnings, including earnings attributable to noncontrolling interests $ 2,210.8", "1,786.2", "2,163.0"],
            ["Depreciation and amortization 594.7", "620.1", "618.8"],
            ["Deferred income taxes (29.6)", "93.5", "(504.3)"],
            ["Divestitures loss -", "30.0", None],
            ["Net cash provided by operating activities 3,676.2", "2,807.0", "2,841.0"]]
    t = build_typed_table(RawTable(52, "Consolidated Statements of Cash Flows", rows, header_rows=1))
    years = [c.fiscal_year for c in t.columns if c.role == "value"]
    assert years == [2020, 2019, 2018], [(c.label, c.fiscal_year) for c in t.columns]
    by_label = {r[0]: r[1:4] for r in t.rows}
    assert by_label["Net cash provided by operating activities"] == [3676.2, 2807.0, 2841.0], t.rows
    assert by_label["Deferred income taxes"] == [-29.6, 93.5, -504.3]
    assert by_label["Divestitures loss"][1:] == [30.0, None]
    # labels that end in a number under a label column with no period over it are left alone
    t = build_typed_table(RawTable(3, "Debt", [["", "2020", "2019"], ["Notes due 2026", "500", "500"],
                                               ["Notes due 2028", "700", "700"]], header_rows=1))
    assert [r[0] for r in t.rows] == ["Notes due 2026", "Notes due 2028"]


def test_a_section_total_printed_without_its_label_is_named_by_its_section():
    """The revenues' total under a rule with no label (a casino operator's statement of operations): the row that
    sums the section's rows is "Total revenues"; an unlabelled row that does not sum them keeps no name."""
    from ingest.parsers import RawTable

    rows = [["", "2020", "2019"], ["Revenues", None, None], ["Casino", "2,871,720", "6,517,759"],
            ["Rooms", "830,382", "2,322,579"], ["Food and beverage", "696,040", "2,145,247"],
            [None, "4,398,142", "10,985,585"], ["Expenses", None, None], ["Casino", "1,701,783", "3,623,899"],
            ["Rooms", "419,156", "829,677"], [None, "9", "9"], ["Operating income", "100", "200"]]
    t = build_typed_table(RawTable(65, "Consolidated statements of operations", rows, header_rows=1))
    labels = [r[0] for r in t.rows]
    assert labels[3] == "Total revenues" and t.row_meta[3].is_total, labels
    assert labels[6] is None and not t.row_meta[6].is_total, labels
