"""The metric catalogue is data (app/data/metrics.yaml): phrases with (a|b) / [a] shorthands, validated on load,
and a metric added as an entry is read by the one general mechanism."""
import pytest

from app.agent.bi import metrics as bi_metrics
from app.agent.vocabulary import expand_phrase, phrase_regex


def test_phrase_shorthands_expand_in_order():
    assert expand_phrase("[accounts] (payable|payables)") == ["accounts payable", "accounts payables", "payable",
                                                              "payables"]
    assert expand_phrase("gross [profit] margin") == ["gross profit margin", "gross margin"]
    with pytest.raises(ValueError):
        expand_phrase("(payable|payables")


def test_phrases_match_whole_words_with_spaces_hyphens_and_commas_alike():
    rx = phrase_regex(["short term investments", "property plant and equipment"])
    assert rx.search("Short-term investments rose")
    assert rx.search("property, plant, and equipment")
    assert not rx.search("shortterm investments")
    assert not phrase_regex(["ebit"]).search("EBITDA")
    assert phrase_regex(["gross margin"], plural=True).search("gross margins")


def test_shipped_catalogue_reads_metrics_items_and_which_way_is_better():
    m = bi_metrics.metric_for("Has the quick ratio improved between FY2022 and FY2023?")
    assert m.name == "quick ratio" and m.unit == "ratio" and m.better == "higher"
    assert bi_metrics.metric_for("What is the FY2021 debt-to-equity ratio?").better == "lower"
    assert bi_metrics.metric_for("What was the effective tax rate in 2022?").better is None
    assert bi_metrics.metric_for("Are gross margins historically consistent?").name == "gross margin"
    assert bi_metrics.concept_of("accounts payable") == "accounts payable"
    assert bi_metrics.concept_of("Purchases of property, plant and equipment") == "capital expenditure"
    assert bi_metrics.concept_of("ebitda") is None  # "ebit" is a whole word of the name, not a prefix


def test_a_metric_added_as_data_is_read_without_code(tmp_path, monkeypatch):
    data = bi_metrics.DATA_FILE.read_text().replace("\nmetrics:\n", (
        "\nmetrics:\n"
        "  - {name: cash ratio, names: [\"cash ratio\"], unit: ratio, better: higher,\n"
        "     formulas: [\"cash and cash equivalents / total current liabilities\"]}\n"), 1)
    path = tmp_path / "metrics.yaml"
    path.write_text(data)
    library, concepts, aliases, *_ = bi_metrics._load(path)
    monkeypatch.setattr(bi_metrics, "LIBRARY", library)
    m = bi_metrics.metric_for("What was the cash ratio at the end of FY2022?")
    assert m is not None and m.name == "cash ratio" and m.better == "higher"
    assert concepts == bi_metrics.CONCEPTS and len(aliases) == len(bi_metrics.ALIASES)


def test_a_value_outside_what_a_metric_can_take_is_a_doubt():
    margin = bi_metrics.metric_for("What was the FY2022 operating margin?")
    assert margin.range == (-100, 100)
    assert margin.out_of_range(35.0) == "" and margin.out_of_range(-80.0) == ""
    assert "outside the values it can take" in margin.out_of_range(112.0)  # operating income read over a smaller base
    assert bi_metrics.metric_for("What was the FY2022 quick ratio?").out_of_range(1e6) == ""  # no range: no doubt


@pytest.mark.parametrize("entry, field", [
    ("  - {name: x, names: [x], formulas: [revenue], unit: percent, range: [100, -100]}\n", "range"),
    ("  - {name: x, names: [x], formulas: [revenue], unit: furlongs}\n", "unit"),
    ("  - {name: x, names: [x], formulas: [revenue], unit: ratio, better: sideways}\n", "better"),
    ("  - {name: x, formulas: [revenue], unit: ratio}\n", "names"),
])
def test_an_invalid_metric_entry_is_a_clear_error(tmp_path, entry, field):
    path = tmp_path / "metrics.yaml"
    path.write_text("metrics:\n" + entry)
    with pytest.raises(bi_metrics.CatalogueError, match=field if field != "names" else "needs name, names"):
        bi_metrics._load(path)


@pytest.mark.parametrize("judgement", [
    "  - {asked: [capital intensive], metric: no such metric, at_least: 10, basis: b}\n",
    "  - {asked: [capital intensive], metric: x, at_least: ten, basis: b}\n",
    "  - {asked: [capital intensive], metric: x, at_least: 10, basis: b, also: [y]}\n",
    "  - {metric: x, at_least: 10, basis: b}\n",
])
def test_an_invalid_judgement_is_a_clear_error(tmp_path, judgement):
    path = tmp_path / "metrics.yaml"
    path.write_text("metrics:\n  - {name: x, names: [x], formulas: [revenue], unit: percent}\njudgements:\n" + judgement)
    with pytest.raises(bi_metrics.CatalogueError, match="judgement 1: needs asked"):
        bi_metrics._load(path)
    path.write_text("metrics:\n  - {name: x, names: [x], formulas: [revenue], unit: percent}\njudgements:\n"
                    "  - {asked: [capital intensive], metric: x, at_least: 10, basis: b}\n")
    assert bi_metrics._load(path)[4][0].at_least == 10.0  # a judgement added as data


def test_metrics_read_from_the_question_s_own_shape():
    """No catalogue entry names them, yet the catalogue's parts do: a formula over a metric and line items asked as
    the object ("EBITDA less capex"), a line item's margin ("D&A % margin": over revenue), one item as a % of
    another; and a ratio added as an entry (retention ratio)."""
    from app.agent.bi.formula import show

    def read(q):
        m = bi_metrics.metric_for(q)
        return (m.name, show(m.formulas[0])) if m else None

    assert read("What is the FY2022 unadjusted EBITDA less capex for Initech?") == \
        ("EBITDA less capex", "operating income + depreciation and amortization − capex")
    assert read("What is the FY2015 depreciation and amortization (D&A from cash flow statement) % margin for Initech?") \
        == ("depreciation and amortization as a % of revenue", "depreciation and amortization / revenue × 100")
    assert read("What was R&D as a percentage of revenue in 2019?") is None  # R&D: no line item of the catalogue
    assert read("What is the FY2022 retention ratio for Initech?") == \
        ("retention ratio", "(net income − cash dividends paid) / net income")
    assert read("What was the change in revenue from 2018 to 2019?") is None


def test_the_statements_a_question_names_as_its_source_are_data(tmp_path, monkeypatch):
    from app.agent.bi import instructions

    assert instructions.read("Using the P&L, what was revenue in FY2021?").statements == ["income_statement"]
    assert instructions.read("From the statements of cash flows, what was capex?").statements == ["cash_flow"]
    assert instructions.read("What were operating cash flows in 2020?").statements == []  # a line item, no source
    data = bi_metrics.DATA_FILE.read_text().replace("  balance_sheet: [balance sheet,",
                                                    "  balance_sheet: [position statement, balance sheet,", 1)
    path = tmp_path / "metrics.yaml"
    path.write_text(data)
    monkeypatch.setattr(instructions, "STATEMENT_NAMES", bi_metrics._statement_names(path))
    assert instructions.read("Using the position statement, what is debt?").statements == ["balance_sheet"]
    path.write_text(data.replace("  cash_flow:", "  cash_flows:", 1))
    with pytest.raises(bi_metrics.CatalogueError, match="statements must name each of"):
        bi_metrics._statement_names(path)
