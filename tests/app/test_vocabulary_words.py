"""The words by which a question asks for an operation, names a part of a company or speaks of a company without
naming one are data (app/data/vocabulary.yaml `operations`, `metric_words`, `company_mentions`): a word added
there is read without code, and a malformed section is a clear error at load."""
import pytest
import yaml

from app.agent import company_scope, vocabulary
from app.agent.bi import choice, metrics, question
from app.agent.vocabulary import phrase_regex, word_lists


def _shipped() -> dict:
    return yaml.safe_load(vocabulary.PATH.read_text(encoding="utf-8"))


def test_an_operation_word_added_as_data_is_read_without_code(monkeypatch):
    q = "What was the typical revenue in 2018 and 2019?"
    assert question.parse_question(q).op != "average" and "average" not in question.operations_asked(q)
    data = _shipped()
    data["operations"]["average"].append("typical")
    monkeypatch.setattr(question, "_RX", question.patterns(word_lists("operations", question._WORD_LISTS, data)))
    assert question.parse_question(q).op == "average"
    assert question.operations_asked(q) == {"average"}
    assert question.operation_unmet(q, "sum") == {"average"}


def test_the_shipped_words_are_read():
    assert question.parse_question("What was the year-on-year change in revenue in 2019?").op == "pct_change"
    assert question.parse_question("What is the avg revenue in 2018 and 2019?").op == "average"
    assert question.WHICH.search("Which segment had the highest revenue in 2019?")
    assert question.entity_text("What was the net change in cash in 2019") == "cash 2019"
    assert metrics.PART.search("revenue of the Americas region") and metrics.PART.search("its subsidiaries")
    assert metrics.cagr_item("What is the 2 year total revenue CAGR from FY2017 to FY2019?") == "revenue"
    assert metrics.cagr_item("What is the compounded annual growth rate of net sales from 2017 to 2019?") == "net sales"
    assert {"company's", "l.p", "on"} <= company_scope.GENERIC | company_scope.TERMS  # read as words, quoted "on"
    assert company_scope.QUESTION_WORDS[0] == "what"
    items, op, _ = choice.choice_items("Among cost of sales, SG&A and R&D, which was the top expense in 2019?")
    assert items == ["cost of sales", "SG&A", "R&D"] and op == "max"  # choice_most
    assert choice.choice_items("Which of Europe and Asia had the fewest stores in 2019?")[1] == "min"  # choice_least
    assert choice.choice_items("Among Europe and Asia, which region is the capital?") is None  # no superlative


def test_operation_words_are_joined_by_spaces_only():
    assert not question.parse_question("What were the higher-than-expected costs in 2019?").op == "difference"
    assert question.parse_question("How much higher was revenue in 2019 than in 2018?").op == "difference"
    assert phrase_regex(["higher than"]).search("higher-than-expected")  # names: a hyphen is a space
    assert not phrase_regex(["higher than"], hyphens=False).search("higher-than-expected")


@pytest.mark.parametrize("section, message", [
    ("operations: [average, mean]", "operations must map names to lists of words"),
    ("operations: {average: mean}", r"operations\.average must be a list of words"),
    ("operations: {average: [mean, on]}", r"operations\.average: True is not a word \(quote yes, no, on, off"),
    ("operations: {average: [\"(mean|avg\"]}", r"operations\.average: unbalanced \("),
    ("operations: {average: [mean]}", "operations needs the word lists line_item_names, percent"),
])
def test_a_malformed_section_is_a_clear_error(section, message):
    with pytest.raises(ValueError, match=message):
        word_lists("operations", question._WORD_LISTS, yaml.safe_load(section))


def test_a_missing_section_is_a_clear_error():
    with pytest.raises(ValueError, match="metric_words must map names to lists of words, not NoneType"):
        word_lists("metric_words", ("part_kinds",), {})


def test_the_generic_document_words_are_dropped_in_every_form():
    """The list is written as words and stemmed when read, so a plural or a long word is dropped as the stem
    content_words makes of it ('companies' -> 'compan', 'agreements' -> 'agreem'), not kept by a stem written
    by hand; 'parties' is a content word (it asks for the clause naming them)."""
    from app.agent.text import content_words

    assert content_words("the companies' contracts, documents and agreements") == set()
    assert content_words("the company's agreement provides") == set()
    assert content_words("who are the parties to the agreement") == {"parti"}
    assert content_words("company indemnification") == {"indemn"}
    assert content_words("company indemnification", drop_generic=False) == {"compan", "indemn"}


def test_an_irregular_form_is_read_as_its_word():
    """'paid' is 'pay' wherever content words are compared (word_forms), so a cash-flow row "Dividends paid" holds
    every word of "how much did it pay out in cash dividends" but 'cash'; a form added as data is read."""
    from app.agent import text

    assert text.content_words("Dividends paid") == text.content_words("pay dividends") == {"pay", "divide"}
    assert text.content_words("shares sold") == text.content_words("sell shares")
    assert "out" not in text.content_words("pay out")
    data = _shipped()
    data["word_forms"]["see"] = ["saw", "seen"]
    vocabulary.base_forms.cache_clear()
    try:
        import unittest.mock as um
        with um.patch.object(vocabulary, "vocabulary", lambda: data):
            assert vocabulary.base_forms()["seen"] == "see"
            data["word_forms"]["see"] = ["saw it"]
            vocabulary.base_forms.cache_clear()
            with pytest.raises(ValueError, match="word_forms.see: 'saw it' is not one word"):
                vocabulary.base_forms()
    finally:
        vocabulary.base_forms.cache_clear()


def test_a_number_word_is_read_from_one_list_by_the_matcher_the_verifier_and_the_text_answer():
    """`vocabulary.yaml number_words` is the one list: the verifier's duration slot, the text answer's durations and
    the matcher's NUM all read "thirteen" and "seventy" (three lists in code had different members)."""
    from app.agent.clauses.connectors import compile_expression
    from app.agent.text import NUMBER_WORDS, number_word_pattern
    from app.agent.text_spans import DURATION
    from app.agent.verify import has_slot

    assert NUMBER_WORDS["thirteen"] == 13 and NUMBER_WORDS["seventy"] == 70
    assert has_slot("duration", "The warranty runs for thirteen (13) months from delivery.")
    assert DURATION.search("payable within seventy days of the invoice")
    assert compile_expression("within +1 NUM +1 day!").search("Payment is due within seventy days.")
    assert "four" in number_word_pattern(2, 100).split("|") and "one" not in number_word_pattern(2, 100).split("|")
