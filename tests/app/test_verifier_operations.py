"""The verifier's reading of the computation a question asks for: a passage that quotes a computation's inputs
does not answer it, a sentence that states the computation does, and a row the question names whole keeps its
own operation word ("Net decrease in cash" asks for that row, not for a difference)."""
from __future__ import annotations

from types import SimpleNamespace

from app.agent.bi.question import operation_unmet, operations_unstated
from app.agent.verifier import features


def passage(quote: str) -> dict:
    return {"answer": f"\u201c{quote}\u201d", "citations": [{"quote": quote, "doc_id": "d"}], "route": "rag",
            "source": "passage", "check": True, "rank": 0}


INPUTS = ("Debt securities included approximately $53 million of Bell Canada debentures at December 31, 2019 and "
          "approximately $68 million of Bell Canada debentures at December 31, 2018.")


def test_a_passage_quoting_the_inputs_of_an_average_does_not_answer_it():
    q = "What is the average Bell Canada debentures for 2018 and 2019?"
    assert operations_unstated(q, INPUTS) == {"average"}
    _, gates = features(SimpleNamespace(query=q, doc_ids=None, ask="text"), passage(INPUTS), 0.7, 0.7)
    assert any("asks for average" in g for g in gates), gates
    # the same passage answers the question that asks for one of its figures
    q2019 = "What was the amount of Bell Canada debentures at December 31, 2019?"
    _, gates = features(SimpleNamespace(query=q2019, doc_ids=None, ask="amount"), passage(INPUTS), 0.7, 0.7)
    assert not any("asks for" in g for g in gates), gates


def test_a_sentence_that_states_the_change_answers_a_change_question():
    q = "What was the increase in interest income in 2019?"
    said = "Interest income increased $1.2 million in 2019, due to higher cash balances."
    assert operations_unstated(q, said) == set()
    _, gates = features(SimpleNamespace(query=q, doc_ids=None, ask="amount"), passage(said), 0.7, 0.7)
    assert not any("asks for" in g for g in gates), gates
    assert operations_unstated(q, "Interest income was $2.5 million in 2019 and $1.3 million in 2018.") == {"change"}
    # "why" asks for a reason, which names no computation
    why = "Why did interest income increase in 2019?"
    _, gates = features(SimpleNamespace(query=why, doc_ids=None, ask="reason"),
                        passage("Interest income was higher on larger cash balances."), 0.7, 0.7)
    assert not any("asks for" in g for g in gates), gates


def test_a_row_named_whole_keeps_its_own_operation_word():
    q = "What was the Net decrease in cash and cash equivalents in 2019?"
    assert operation_unmet(q, "lookup") == {"change"}
    assert operation_unmet(q, "lookup", "Net decrease in cash and cash equivalents") == set()
    assert operation_unmet("What was the decrease in cash in 2019?", "lookup", "Cash") == {"change"}


def test_which_years_is_not_answered_by_a_sentence_that_states_none():
    q = "For which periods is the aggregate impact of net changes in contract estimates presented in the table?"
    caption = "The aggregate impact of net changes in contract estimates are presented in the table below."
    _, gates = features(SimpleNamespace(query=q, doc_ids=None, ask="years"), passage(caption), 0.8, 0.8)
    assert any("which years" in g for g in gates), gates
    said = "The aggregate impact of net changes in contract estimates was $12 million in 2019 and $9 million in 2018."
    _, gates = features(SimpleNamespace(query=q, doc_ids=None, ask="years"), passage(said), 0.8, 0.8)
    assert not any("which years" in g for g in gates), gates
