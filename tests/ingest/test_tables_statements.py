"""Borderless financial statements in real PDFs (generated here with reportlab) read as an analyst reads them:
periods from multi-row headers, parentheses negatives and dashes, section rows as parents, totals,
"in millions, except per share data", a sideways page turned upright, and the catalogue the BI planner reads."""
from __future__ import annotations

import pytest
from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

from ingest.parsers.pdf import parse_pdf
from ingest.tables.typed import build_typed_table

W, H = letter
INCOME = [  # (label, indent, values 2021/2020/2019)
    ("Revenues:", 0, None),
    ("Product", 12, ("$ 1,200", "$ 1,100", "$ 1,000")),
    ("Services", 12, ("300", "250", "200")),
    ("Total revenues", 0, ("1,500", "1,350", "1,200")),
    ("Cost of revenues", 0, ("(900)", "(800)", "(750)")),
    ("Operating income", 0, ("600", "550", "450")),
    ("Other expense, net", 0, ("—", "(12)", "(5)")),
    ("Net income", 0, ("$ 450", "$ 400", "$ 320")),
    ("Earnings per share:", 0, None),
    ("Basic", 12, ("$ 2.25", "$ 2.00", "$ 1.60")),
    ("Diluted", 12, ("$ 2.20", "$ 1.95", "$ 1.58")),
    ("Weighted-average shares outstanding", 0, ("200", "200", "200")),
]
BALANCE = [
    ("Current assets:", 0, None),
    ("Cash and cash equivalents", 12, ("$ 812", "$ 640")),
    ("Accounts receivable, net", 12, ("433", "410")),
    ("Total current assets", 0, ("1,245", "1,050")),
    ("Property and equipment, net", 0, ("2,100", "1,980")),
    ("Total assets", 0, ("$ 3,345", "$ 3,030")),
]


def _statement(c, x0, top, rows, headers, columns, step=14):
    """Draw a borderless statement: labels at x0, numbers right-aligned at ``columns``; returns the next y."""
    y = top
    for line in headers:  # [(text, x_centre)]
        for text, xc in line:
            c.drawCentredString(xc, y, text)
        y -= step
    for label, indent, values in rows:
        c.drawString(x0 + indent, y, label)
        for v, xr in zip(values or (), columns):
            if v.startswith("$ "):
                c.drawString(xr - 62, y, "$")
                v = v[2:]
            c.drawRightString(xr, y, v)
        y -= step
    return y


def write_statement_pdf(path):
    """Page 1: prose, then a borderless income statement; page 2: a balance sheet printed sideways."""
    c = canvas.Canvas(str(path), pagesize=letter)
    c.setFont("Helvetica", 9)
    c.drawString(72, 740, "The following discussion should be read together with our consolidated financial")
    c.drawString(72, 728, "statements; amounts below are rounded and may not add up exactly to the totals shown.")
    c.setFont("Helvetica-Bold", 11)
    c.drawString(72, 700, "ACME CORPORATION")
    c.drawString(72, 686, "CONSOLIDATED STATEMENTS OF OPERATIONS")
    c.setFont("Helvetica", 9)
    c.drawString(72, 672, "(in millions, except per share data)")
    cols = (380, 460, 540)
    _statement(c, 72, 650, INCOME, [[("Years Ended December 31,", 460)], [("2021", 362), ("2020", 442), ("2019", 522)]],
               cols)
    c.showPage()
    # page 2: a balance sheet printed sideways (a landscape table on a portrait page: text runs down it)
    c.setFont("Helvetica", 9)
    c.saveState()
    c.translate(W - 60, H - 50)
    c.rotate(-90)
    c.setFont("Helvetica-Bold", 11)
    c.drawString(0, 0, "CONSOLIDATED BALANCE SHEETS")
    c.setFont("Helvetica", 9)
    c.drawString(0, -14, "(in thousands)")
    _statement(c, 0, -36, BALANCE, [[("As of December 31,", 470)], [("2021", 432), ("2020", 512)]], (450, 530))
    c.restoreState()
    c.showPage()
    c.save()
    return path


@pytest.fixture(scope="module")
def statement_pdf(tmp_path_factory):
    return write_statement_pdf(tmp_path_factory.mktemp("stmt") / "acme_10k.pdf")


@pytest.fixture(scope="module")
def parsed(statement_pdf):
    return parse_pdf(statement_pdf)


def _table(parsed, page):
    raws = [t for t in parsed.tables if t.page == page]
    assert raws, f"no table found on page {page}: {[t.page for t in parsed.tables]}"
    raw = max(raws, key=lambda t: len(t.rows))
    return raw, build_typed_table(raw)


def test_borderless_income_statement_periods_units_and_numbers(parsed):
    raw, t = _table(parsed, 1)
    assert raw.source == "aligned" and raw.bbox is not None
    x0, top, x1, bottom = raw.bbox
    assert 60 < x0 < 80 and x1 > 530 and H - 700 < top < bottom < H - 450  # the statement, not the prose above
    assert t.statement == "income_statement" and "STATEMENTS OF OPERATIONS" in t.title.upper()
    values = [c for c in t.columns if c.role == "value"]
    assert [c.period for c in values] == ["2021", "2020", "2019"]
    assert [c.name for c in values] == ["y2021", "y2020", "y2019"]
    assert all(c.period_months == 12 and c.period_end.endswith("-12-31") and c.scale == "millions" for c in values)
    assert t.scale == "millions" and t.currency == "USD"
    assert not any("millions" in c.name or "statements" in c.name for c in t.columns)  # captions are not names
    rows = {r[0]: (r[1:], m) for r, m in zip(t.rows, t.row_meta)}
    assert "Revenues:" not in rows and "Revenues" not in rows  # a section row is a parent, not a row
    assert rows["Product"][0] == [1200.0, 1100.0, 1000.0] and rows["Product"][1].parent == "Revenues"
    assert rows["Total revenues"][1].is_total and rows["Total revenues"][0] == [1500.0, 1350.0, 1200.0]
    assert not rows["Services"][1].is_total
    assert rows["Cost of revenues"][0] == [-900.0, -800.0, -750.0]
    assert rows["Other expense, net"][0] == [None, -12.0, -5.0]
    assert rows["Net income"][1].is_total and rows["Net income"][0] == [450.0, 400.0, 320.0]
    basic = rows["Basic"]
    assert basic[0] == [2.25, 2.0, 1.6] and basic[1].parent == "Earnings per share"
    assert basic[1].unit == "per share" and basic[1].scale == ""  # per-share amounts are not in millions
    assert rows["Weighted-average shares outstanding"][1].unit == "shares"
    assert rows["Weighted-average shares outstanding"][1].scale == "millions"


def test_sideways_page_is_read_upright(parsed):
    page = parsed.pages[1]
    assert "Total current assets" in page.text and "CONSOLIDATED BALANCE SHEETS" in page.text
    raw, t = _table(parsed, 2)
    assert t.statement == "balance_sheet" and t.scale == "thousands"
    values = [c for c in t.columns if c.role == "value"]
    assert [c.period for c in values] == ["2021-12-31", "2020-12-31"]
    rows = {r[0]: (r[1:], m) for r, m in zip(t.rows, t.row_meta)}
    assert rows["Cash and cash equivalents"][0] == [812.0, 640.0]
    assert rows["Cash and cash equivalents"][1].parent == "Current assets"
    assert rows["Total assets"][1].is_total and rows["Total assets"][0] == [3345.0, 3030.0]
    x0, top, x1, bottom = raw.bbox  # in the page's own coordinates: a tall, narrow box on the sideways page
    assert bottom - top > x1 - x0


def test_catalogue_and_sql_carry_periods_parents_and_totals(kb, statement_pdf):
    result = kb.ingest_file(statement_pdf, "acme")
    assert result.status == "ingested" and result.tables >= 2
    tables = {t.statement: t for t in kb.list_tables("acme")}
    income = tables["income_statement"]
    assert income.periods == ["2021", "2020", "2019"] and income.scale == "millions" and income.bbox
    assert income.label_column == "item"
    assert [c.fiscal_year for c in income.columns if c.role == "value"] == [2021, 2020, 2019]
    by_label = {r.label: r for r in income.rows}
    assert by_label["Total revenues"].is_total and by_label["Product"].parent == "Revenues"
    assert by_label["Diluted"].unit == "per share"
    res = kb.run_sql("acme", f'SELECT item, y2020, section FROM "{income.sql_name}" WHERE is_total = 0 '
                             "AND section = 'Revenues' ORDER BY row_num")
    assert res.rows == [["Product", 1100.0, "Revenues"], ["Services", 250.0, "Revenues"]]
