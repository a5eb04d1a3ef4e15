"""Matching rules of ``lexicon eval``: numbers with scales, TAT-QA EM/F1, evidence overlap, dates."""
from __future__ import annotations

from datetime import date

from app.evaluation.dates import dates_in, parse_answer_date
from app.evaluation.numbers import answer_number, numeric_match, parse_number
from app.evaluation.tatqa_metric import tatqa_scores
from app.evaluation.text import occurs_verbatim, overlap, squash


def test_numbers_scale_aware_with_tolerance():
    gold = parse_number("$1,577.00 million")
    assert gold.scaled == 1_577e6
    assert numeric_match(parse_number("1.577 billion"), gold)
    assert numeric_match(parse_number("1,577"), gold)  # a bare figure read at the gold's scale
    assert numeric_match(parse_number("1,590 million"), gold)  # within 1%
    assert not numeric_match(parse_number("1,600 million"), gold)  # 1.5% off
    assert numeric_match(parse_number("0.2426"), parse_number("24.26%"))
    assert parse_number("(1,234)").value == -1234


def test_answer_number_skips_years_and_takes_the_result():
    assert answer_number("In 2019 sales were 1,496.5 (in millions)").value == 1496.5
    assert answer_number("(25.37 - 27.19) = -1.82").value == -1.82
    assert answer_number("It was 2019.", gold=parse_number("2018")).value == 2019


def test_tatqa_em_f1():
    assert tatqa_scores("Total sales in 2019 were $1,496.5 million.", ["$1,496.5"], "million")["em"] == 1
    assert tatqa_scores("1.4965 billion", ["$1,496.5"], "million")["em"] == 1
    near = tatqa_scores("The change is 293.61", 293.6, "million")
    assert near["em"] == 0 and near["em_tol"] == 1
    assert tatqa_scores("The change is 310", 293.6, "million")["em_tol"] == 0
    multi = tatqa_scores("fixed-price type, cost-plus type and time-and-material type",
                         ["fixed-price type", "cost-plus type", "time-and-material type"], "")
    assert multi["em"] == 1 and multi["f1"] == 1
    span = tatqa_scores("our allowable incurred costs plus a profit",
                        ["our allowable incurred costs plus a profit which can be fixed or variable"], "")
    assert span["em"] == 0 and 0.5 < span["f1"] < 1


def test_tatqa_span_length_counts_what_the_answer_adds_to_the_question():
    q = "What is the value of the other current assets for 2019 and 2018 respectively?"
    answer = "Other current assets: 2019 193, 2018 167 (USD)."
    assert tatqa_scores(answer, ["193", "167"], "", question=q)["em"] == 1  # the item and years restated
    assert tatqa_scores(answer, ["193", "167"], "")["em"] == 0  # without the question: too long
    padded = "Other current assets: 2019 193, 2018 167; prepaid expenses and deposits held by the company in escrow"
    assert tatqa_scores(padded, ["193", "167"], "", question=q)["em"] == 0
    # figures gold: a figure beyond the gold's and the question's is a wrong answer, however short
    q = "What are the respective values of work-in-process inventory in 2018 and 2019?"
    extra = "Work-in-process: 2018 2,929, 2019 2,370; Total: 2018 3,836, 2019 3,260."
    assert tatqa_scores(extra, ["2,929", "2,370"], "", question=q)["em"] == 0
    assert tatqa_scores("Work-in-process: 2018 2,929, 2019 2,370.", ["2,929", "2,370"], "", question=q)["em"] == 1
    # the years of a range asked are the figures' labels, not figures of their own
    q = "What is the net income for fiscal years 2019 to 2017 respectively?"
    listed = "Net income: 2019 53,294, 2018 61,431, 2017 279,745 (USD)."
    assert tatqa_scores(listed, ["$53,294", "$61,431", "$279,745"], "", question=q)["em"] == 1


def test_an_amount_the_gold_states_with_a_scale_word_is_read_at_its_precision():
    """A gold span such as "$9.6 million" is a report's text rounding a figure: the exact figure is that amount
    (as a number, magnitude), an answer's unit "(USD thousands)" its scale; another figure or scale is not."""
    assert tatqa_scores("Change of SG&A, 2018 to 2019: 24,371,349 − 14,794,205 = 9,577,144 (USD).",
                        ["$9.6 million"], "")["em"] == 1
    assert tatqa_scores("Interest income: 30,182 − 13,281 = 16,901 (USD thousands).", ["$16.9 million"], "")["em"] == 1
    assert tatqa_scores("Net revenues: 2,280 − 1,664 = 616 (USD millions).", ["$616 million"], "")["em"] == 1
    assert tatqa_scores("Net deferred tax liability, 2019: -2,780 (USD millions).", ["$2.8 billion"], "")["em"] == 1
    assert tatqa_scores("Financing activities, 2018: 1,779 (USD).", ["$1.8 million"], "")["em"] == 0  # not thousands
    assert tatqa_scores("Federal income tax, 2019: 14,694 (USD thousands).", ["$36.5 million"], "")["em"] == 0
    assert tatqa_scores("9,677,144", ["$9.6 million"], "")["em"] == 0  # rounds to 9.7
    assert parse_number("14,694 (USD thousands)").scaled == 14_694e3
    assert tatqa_scores("Net profit/(loss) after tax, 2019: -9,819 (USD thousands).", ["$(9.8) million"], "")["em"] == 1
    assert tatqa_scores("Adjustments to prior periods, 2018: -8.1 (GBP).", ["£(8.1m)"], "")["em"] == 1
    assert tatqa_scores("Land, 2019: 1949 (USD).", ["$1,949"], "")["em"] == 1  # an amount, though year-like


def test_overlap_is_robust_to_layout_but_not_to_topic():
    gold = "This Agreement shall be governed by the laws of the State of New York."
    chunk = "12.3 Governing Law. This Agree-\nment shall be governed by the laws of the\nState of New York. 12.4 Notices."
    assert overlap(chunk.replace("Agree-\nment", "Agreement"), gold) == 1.0
    assert overlap("This Agreement may be assigned by either party with the consent of the other.", gold) < 0.5
    assert overlap("New York", gold) == 1.0 and overlap("New Jersey", gold) == 0.0


def test_verbatim_modulo_whitespace():
    src = squash("The Supplier’s liability shall not exceed\n  the fees paid.")
    assert occurs_verbatim("liability shall not exceed the fees", src)
    assert not occurs_verbatim("liability shall never exceed the fees", src)


def test_dates():
    assert parse_answer_date("4/13/12") == date(2012, 4, 13)
    assert date(2012, 4, 13) in dates_in("made as of the 13th day of April, 2012")
    assert date(2012, 4, 13) in dates_in("dated April 13, 2012")


def test_free_text_gold_is_scored_on_what_it_adds_to_the_question():
    from app.evaluation.scoring import text_correct
    q = "What is the amount of the gain accruing to JnJ as a result of the separation of its Consumer Health segment?"
    gold = "JnJ will make a gain of approximately $20 billion from the separation of its Consumer Health segment."
    assert text_correct(gold, "approximately $20 billion", q)  # short, right
    assert not text_correct(gold, "a gain from the separation of its Consumer Health segment", q)  # only echoes q
    assert not text_correct(gold, "approximately $2 billion", q)
    q2 = "What Was AMCOR's Adjusted Non GAAP EBITDA for FY 2023"
    assert not text_correct("AMCOR's Adj. EBITDA was $2,018mn in FY 2023", "EBITDA, 2023: -5 (USD millions)", q2)
    assert text_correct("AMCOR's Adj. EBITDA was $2,018mn in FY 2023", "Adjusted EBITDA, 2023: 2,018 (USD millions)", q2)
    q3 = "Which business segment of JnJ will be treated as a discontinued operation?"
    assert text_correct("The Consumer Health business segment will be treated as a discontinued operation.",
                        "Consumer Health", q3)
    q4 = "Was there any drop in Cash & Cash equivalents between FY 2023 and Q2 of FY2024?"
    gold4 = "Yes, there was a decline of ~42% between FY2023 and Q2 of FY2024."
    assert text_correct(gold4, "Yes. Cash fell from 1,874 to 1,093: a decline of 41.7%.", q4)
    assert not text_correct(gold4, "No, cash did not drop.", q4)
