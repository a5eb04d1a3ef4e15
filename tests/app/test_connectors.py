"""Terms and connectors: how a clause kind says, as data, the way a clause states itself (and is not it)."""
import pytest

from app.agent.clauses.connectors import ConnectorError, compile_expression
from app.agent.clauses.taxonomy import TaxonomyError, built_in, kind_from_dict
from app.agent.verify import span_answers


def matches(expr: str, text: str) -> bool:
    return compile_expression(expr).search(text)


def test_words_endings_numbers_and_the_two_shorthands():
    assert matches("terminat! +25 for convenience", "Either party may terminate this Agreement for convenience.")
    assert matches("terminat! +25 for convenience", "The termination of this Agreement for convenience ...")
    assert not matches("terminate +25 for convenience", "The termination of this Agreement for convenience.")
    assert matches("NUM days [prior] [written] notice", "upon thirty (30) days prior written notice")
    assert matches("NUM days [prior] [written] notice", "on 90 days notice")
    assert matches("(license|licence) +6 granted", "the licence hereby granted")


def test_ordered_and_unordered_distances():
    assert matches("assign! +12 without +5 consent!", "may not assign this Agreement without the prior consent")
    assert not matches("consent! +12 assign!", "may not assign this Agreement without the prior consent")
    assert matches("consent! /12 assign!", "may not assign this Agreement without the prior consent")
    assert not matches("assign! +2 consent!", "may not assign this Agreement without the prior consent")
    assert matches("assign! /s consent!", "it may assign it to an affiliate, and needs no consent for that")


def test_a_connector_never_reaches_across_a_sentence_or_a_semicolon():
    assert not matches("assign! /s consent!", "Neither party may assign it. Consent is given by notice.")
    assert not matches("assign! /s consent!", "Neither party may assign it; consent is given by notice")
    assert matches("between +30 and", "This Agreement is made between Acme, Inc. and Beta Ltd.")  # "Inc." ends none


def test_non_is_part_of_its_word():
    assert matches("exclusive (right|license)", "grants an exclusive license")
    assert not matches("exclusive (right|license)", "grants a non-exclusive license")
    assert matches("nonexclusive license", "grants a non-exclusive license")


@pytest.mark.parametrize("bad", ["", "+5 consent", "assign +5", "assign consent +5 +5 term", "(assign | transfer",
                                 "a /s b /s c /s d /s e /s f /s g /s h /s i"])
def test_a_malformed_expression_is_refused_with_what_is_wrong(bad):
    with pytest.raises(ConnectorError):
        compile_expression(bad)


def test_a_playbook_kind_with_a_malformed_expression_is_refused_by_name():
    entry = {"name": "escrow", "description": "Source code held in escrow.", "wordings": ["source code escrow"],
             "states": ["escrow +10 (source code"]}
    with pytest.raises(TaxonomyError, match="escrow.*states"):
        kind_from_dict(entry, source="playbook")


def test_a_negated_grant_is_not_a_license_grant_but_a_carve_out_beside_one_is():
    kind = built_in().get("license grant")
    q = "What license is granted?"
    assert not span_answers(kind, q, "No right or license is granted to MD Anderson under this Agreement.")[0]
    assert span_answers(kind, q, "Licensor hereby grants to Licensee a non-exclusive license to use the Software. "
                                 "No other license is granted.")[0]


def test_a_playbook_kind_states_itself_as_data_and_one_without_states_is_read_by_the_question():
    entry = {"name": "source code escrow", "description": "Source code deposited with an escrow agent.",
             "wordings": ["deposit the source code with the escrow agent"], "answer": "clause"}
    plain = kind_from_dict(entry, source="playbook")
    stated = kind_from_dict(dict(entry, states=["deposit! +12 source code"], not_this=["no +6 deposit!"]),
                            source="playbook")
    q = "Is source code held in escrow?"
    text = "Licensor shall deposit a copy of the source code with Escrow Agent within 30 days."
    assert span_answers(stated, q, text)[0]
    assert span_answers(plain, q, text)[0]  # shares "source", "code", "escrow" with the question
    other = "The source code remains the property of Licensor and is held in confidence."
    assert not span_answers(stated, q, other)[0]  # no deposit: the kind's own wording is missing
    assert not span_answers(stated, q, "No party shall deposit the source code anywhere.")[0]
    assert stated.to_dict()["states"] == ["deposit! +12 source code"]
    assert kind_from_dict(stated.to_dict(), source="playbook") == stated


def test_an_anchor_and_a_word_ending():
    assert matches("^ (what|which) *s (are|were|do)", "Which countries are shown in the table?")
    assert not matches("^ (what|which) *s (are|were|do)", "What does interest expense include?")  # no plural
    assert not matches("^ why", "Explain why revenue fell.")
    assert matches("^ why", "Revenue fell. Why did it fall?")  # each sentence has a first word
    assert matches("based on $", "What is fair value based on?")  # "$": the sentence's last words
    assert not matches("based on $", "What is the dividend based on the shares outstanding?")
    assert matches("^ how (is|was) +3 calculated [as] $", "How is EBITDA calculated?")


def test_what_a_report_question_asks_for_is_read_by_data():
    """The kinds of answer (vocabulary.yaml answer_kinds) are expressions read in order by the one matcher."""
    from app.agent.text_spans import ask_of

    assert ask_of("In 2019, why did revenue fall?").kind == "reason"  # the first word after a comma
    assert ask_of("Please explain why revenue fell").kind == "text"
    assert ask_of("What services have their costs included within the audit fees?").kind == "list"
    assert ask_of("What does interest expense include?").kind == "text"
    assert ask_of("What was the revenue in 2019?").kind == "amount"
    assert ask_of("How is the margin calculated?").kind == "text"  # not a percent: how it is worked out
    assert ask_of("What was the gross margin in 2019?").kind == "percent"
    assert ask_of("What is fair value based on?").kind == "text"  # how a figure is arrived at
    assert ask_of("What was the share based compensation expense in 2017?").kind == "amount"  # the figure
    assert ask_of("What is the nature of the restructuring charge?").kind == "text"
    assert ask_of("What is the increase in inventory due to?").kind == "reason"
    assert ask_of("What does the table represent?").kind == "table"
    a = ask_of("How many employees did it have in 2019?")
    assert (a.kind, a.count_noun) == ("count", "employ")
    assert ask_of("How many years does the plan run?").kind == "duration"
    assert ask_of("What is the weighted average remaining amortization period for intangibles?").kind == "duration"


def test_a_kinds_cues_rank_the_sentence_that_states_it_first():
    """The agreement date's cues (dated, day of, a month...) put the signing sentence first; ranked by the words of
    the kind's wordings alone, "remain in full force and effect" came first (it shares "effect") and the verifier
    weighs a quote's rank."""
    from app.agent.quotes import candidate_quotes
    from app.agent.text import content_words

    kind = built_in().get("agreement date")
    text = ("This Agreement shall remain in full force and effect until revoked by any of the parties hereto. "
            "IN WITNESS WHEREOF, the undersigned hereby execute this Agreement this 14th day of February 2020.")
    first = candidate_quotes(text, kind, content_words("What is the date of the agreement?"))[0]
    assert "14th day of February 2020" in first, first
    no_cues = kind_from_dict(dict(kind.to_dict(), cues=[]))
    assert kind.cue_score(first) > no_cues.cue_score(first)
