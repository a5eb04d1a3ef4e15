"""Financial numbers are parsed typed; tables keep header labels, units and their page."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from ingest.detect import detect_kind
from ingest.parsers import RawTable, parse_file
from ingest.samples import SAMPLE_FACTS
from ingest.tables.typed import build_typed_table, create_sql_table, parse_number


@pytest.mark.parametrize("cell, value, currency, percent", [
    ("(1,234.5)", -1234.5, "", False),
    ("$ 63,918.7", 63918.7, "USD", False),
    ("$(45.0)", -45.0, "USD", False),
    ("12.5%", 12.5, "", True),
    ("−3.2", -3.2, "", False),
    ("1,000,000", 1_000_000.0, "", False),
    ("€ 12", 12.0, "EUR", False),
    (42, 42.0, "", False),
])
def test_parse_number(cell, value, currency, percent):
    p = parse_number(cell)
    assert p is not None and p.value == pytest.approx(value) and p.currency == currency and p.percent == percent


@pytest.mark.parametrize("cell", ["Revenue", "1,23", "12a", "", None, "Q1 2024", True])
def test_non_numbers_are_not_parsed(cell):
    assert parse_number(cell) is None


def test_dash_is_an_explicit_blank():
    p = parse_number("—")
    assert p is not None and p.value is None


def test_income_statement_is_typed_with_units(corpus):
    path = next(p for p in corpus if p.name == SAMPLE_FACTS["annual_report"]["filename"])
    raw = parse_file(path, detect_kind(path)).tables[0]
    table = build_typed_table(raw)
    facts = SAMPLE_FACTS["annual_report"]
    assert table.page == facts["income_statement_page"] and table.unit == facts["unit"]
    assert [(c.name, c.sql_type, c.label) for c in table.columns] == [
        ("item", "TEXT", ""), ("y2024", "REAL", "2024"), ("y2023", "REAL", "2023"), ("y2022", "REAL", "2022")]
    assert all(c.unit == "USD thousands" for c in table.columns[1:])
    rows = {r[0]: r[1:] for r in table.rows}
    for item, by_year in facts["income_statement"].items():
        assert rows[item] == pytest.approx([by_year[y] for y in (2024, 2023, 2022)]), item
    assert rows["Net income (loss)"][2] == pytest.approx(-1580.2)


def test_title_row_multi_row_header_percent_and_text_columns():
    raw = RawTable(3, "", [
        ["Key metrics (in millions)", "", ""],
        ["", "Year ended", "Year ended"],
        ["Metric", "2024", "2023"],
        ["Gross margin", "46.2%", "42.8%"],
        ["Segment", "Software", "Services"],
    ])
    table = build_typed_table(raw)
    assert table.title == "Key metrics (in millions)"
    assert [c.name for c in table.columns] == ["metric", "year_ended_2024", "year_ended_2023"]
    assert [c.sql_type for c in table.columns] == ["TEXT", "TEXT", "TEXT"]  # a text cell makes a column TEXT
    raw.rows = raw.rows[:4]
    table = build_typed_table(raw)
    assert [c.sql_type for c in table.columns] == ["TEXT", "REAL", "REAL"]
    assert table.columns[1].unit == "%" and table.rows[0][1:] == [46.2, 42.8]


def test_sql_table_holds_numbers(tmp_path):
    table = build_typed_table(RawTable(1, "t", [["Item", "2024"], ["Revenue", "$1,000.5"], ["Cost", "(400)"]]))
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'x.db'}")
    with engine.begin() as conn:
        create_sql_table(conn, "t_test", table)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("select item, y2024, typeof(y2024) from t_test order by row_num").all()
    assert rows == [("Revenue", 1000.5, "real"), ("Cost", -400.0, "real")]
