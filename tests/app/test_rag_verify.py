"""The RAG route's verdicts on answers that rest on report text: a model draft stands only when its words are
the cited sentences' words; an extracted span only when its sentence states it for the period asked."""
from __future__ import annotations

from app.agent.text_spans import ask_of
from app.agent.verify import verify_generated, verify_text

QUOTE = ("Net cash provided by operating activities increased $224 million for fiscal 2019 as compared to fiscal "
         "2018, primarily due to lower payments for taxes and restructuring costs.")
Q = "Why did net cash provided by operating activities increase in fiscal 2019?"


def test_a_draft_in_the_cited_words_stands():
    draft = "Net cash provided by operating activities increased due to lower payments for taxes and restructuring costs."
    assert verify_generated(Q, draft, [QUOTE])[0]


def test_echoed_scaffolding_or_a_loose_paraphrase_does_not():
    assert not verify_generated(Q, "DOCUMENT:\n\nDOCUMENT:\n\nDOCUMENT:", [QUOTE])[0]
    assert not verify_generated(Q, "Net cash provided by operating activities increased.", [QUOTE])[0]
    loose = "Operating cash rose because customers paid faster and inventory management improved markedly."
    assert not verify_generated(Q, loose, [QUOTE])[0]
    assert not verify_generated(Q, "It increased $250 million due to lower payments for taxes.", [QUOTE])[0]


def test_a_figure_answer_needs_its_year_in_the_quote():
    q = "What was the increase in net cash provided by operating activities in fiscal 2019?"
    assert verify_text(ask_of(q), q, "$224 million", QUOTE)[0]
    q2017 = "What was the increase in net cash provided by operating activities in fiscal 2017?"
    assert not verify_text(ask_of(q2017), q2017, "$224 million", QUOTE)[0]
    assert not verify_text(ask_of(q), q, "$224 billion", QUOTE)[0]


def test_a_computation_is_not_answered_by_one_of_its_inputs():
    quote = "The valuation allowance was $19,911 as of December 31, 2019 and $15,916 as of December 31, 2018."
    q = "What is the percentage change in the valuation allowance from 2018 to 2019?"
    assert not verify_text(ask_of(q), q, "$19,911", quote)[0]
    stated = "The valuation allowance increased 25.1% from 2018 to 2019."
    assert verify_text(ask_of(q), q, "25.1%", stated)[0]
    avg = "What was the average valuation allowance in 2018 and 2019?"
    assert not verify_text(ask_of(avg), avg, "$19,911", quote)[0]
    # a change in dollars is not the percentage change asked (the words of both: vocabulary.yaml `operations`)
    moved = "The valuation allowance increased by $3,995 from 2018 to 2019."
    assert not verify_text(ask_of(q), q, "$3,995", moved)[0]
    change = "What was the change in the valuation allowance from 2018 to 2019?"
    assert verify_text(ask_of(change), change, "$3,995", moved)[0]
    why = "What led to the increase in the valuation allowance in 2019?"  # a reason: no computation asked
    reason = "In 2019 the valuation allowance was $19,911, mainly due to losses in Germany."
    assert verify_text(ask_of(why), why, "mainly due to losses in Germany", reason)[0]


def test_a_date_the_agreement_runs_until_is_not_when_it_was_made():
    """A contract's date question (agreement / effective date) is answered by a date given as made, signed or
    effective; one the agreement runs until is an end (vocabulary.yaml date_roles), in the lead-in and the check."""
    from app.agent.nodes_rag import lead_in
    from app.agent.verify import has_slot

    term = ("12.1 Term. This Agreement shall commence on the Effective Date and shall remain in effect until "
            "September 1, 2045, unless earlier terminated.")
    assert lead_in("date", term) == "" and not has_slot("date", term)
    made = "This Distribution Agreement is made and entered into as of March 18, 2019 by and between Zogenix and Nippon."
    assert lead_in("date", made) == "Date: March 18, 2019." and has_slot("date", made)
    both = "This Agreement is dated as of May 17, 2012 and shall terminate on May 31, 2016."
    assert lead_in("date", both) == "Date: May 17, 2012."


def test_the_date_of_another_document_is_not_this_one_s():
    """"This First Amendment to the Supply Agreement dated April 1, 2017 is made as of April 1, 2018": the first date
    is the amended agreement's (vocabulary.yaml date_roles other_documents), the amendment's own is the second."""
    from app.agent.nodes_rag import lead_in
    from app.agent.verify import has_slot

    amendment = ("This First Amendment (the Amendment) to the Supply and Manufacturing Agreement dated April 1, 2017 "
                 "between Cerus Corporation and Porex Corporation is made as of April 1, 2018.")
    assert lead_in("date", amendment) == "Date: April 1, 2018."
    recital = "WHEREAS, the Parties had entered into a Non-Competition Agreement dated September 30, 2014."
    assert lead_in("date", recital) == "" and not has_slot("date", recital)
    recital = "WHEREAS, pursuant to an investment agreement dated on May 25, 2012, the Investor acquired shares."
    assert lead_in("date", recital) == "" and not has_slot("date", recital)
    licence = "Licensee holds a Commercial License Agreement having an Effective Date of April 15, 2010 (the License)."
    assert not has_slot("date", licence)
    numbered = 'WHEREAS NICE issued a request for information ("RFI") version A.2 dated June 17th, 2001 to suppliers.'

    assert lead_in("date", numbered) == "" and not has_slot("date", numbered)
    own = 'THIS SITE DEVELOPMENT AND HOSTING AGREEMENT (the "Agreement") dated as of August 9, 1999 is made by ...'
    assert lead_in("date", own) == "Date: August 9, 1999." and has_slot("date", own)


def test_the_statements_of_when_a_contract_takes_effect():
    """clauses.restated: a sentence states when the contract takes effect in plain words ("shall commence") or by
    defining the term (quoted, or before "means"); a sentence using the term as a reference, pointing back to the
    contract's own date, or not speaking of the contract states nothing."""
    from app.agent.clauses.restated import asked_phrases, contradiction, date_key, statements
    from app.agent.clauses.taxonomy import built_in

    kind = built_in().get("agreement date")
    phrases = asked_phrases(kind, "on what date does this agreement become effective?")
    assert phrases and asked_phrases(kind, "what is the date of this agreement?") == ()
    texts = ['The term of this Agreement (the "Term") shall commence on the first day of the Warranty Period.',
             '“Commencement Date” means 16 October 2005.', "EFFECTIVE DATE means 18 May 2000;",
             "The initial term of this Agreement shall commence on the Effective Date and continue for five years.",
             "This Agreement shall be effective as of the date first written above.",
             "Royalties shall commence upon the first commercial sale.",
             "This Agreement is entered into as of March 18, 2019 (the “Effective Date”) by and between A and B."]
    stated = statements(phrases, texts)
    assert [w for _, w in stated] == ["", "16 October 2005", "18 May 2000", "March 18, 2019"]
    assert date_key("the 15th day of January 2018") == date_key("January 15, 2018") == date_key("1/15/2018")
    opening = "This Agreement is entered into as of March 18, 2019 (the “Effective Date”) by and between A and B."
    assert contradiction("March 18, 2019", opening, stated[3:]) == ""  # its own sentence, the same date
    assert contradiction("March 18, 2019", opening, stated[1:2]).startswith("“Commencement Date”")
    assert contradiction("March 18, 2019", opening, stated[:1]).startswith("The term of this Agreement")
    # not statements: another subject, a table of contents, another thing's effective date, a blank form,
    # signing (the opening's own date)
    assert statements(phrases, [
        "The Parties shall commence performance of the Project under this Agreement promptly.",
        "1.17 “Due Date” 7 1.18 “Effective Date” 7 1.19 “FTE” 7",
        "Termination shall not affect obligations accrued prior to the effective date of such termination of "
        "this Agreement.",
        "The effective date (“Effective Date”) of this Statement is , , 200 .",
        "This Agreement shall become effective when each party has received a counterpart signed by the other.",
        "1.39 “Effective Date” has the meaning set forth in the preamble to this Agreement.",
        "No waiver of any term or condition of this Agreement shall be effective unless in writing.",
        "Confidential Information includes information disclosed before this Agreement commences."]) == []
    # a sentence that defines the term and then uses it states the value (an event here)
    event = ('This Agreement shall be effective as of that date (the "Effective Date") the Site becomes fully '
             'operational and shall continue for one (1) year from the Effective Date.')
    assert statements(phrases, [event]) == [(event, "")]
    # the contract by the name its title gives it ("This Promotion Agreement ..." then "This promotion shall begin")
    opening = 'Promotion Agreement between PageMaster Corporation and Go Call, Inc. dated March 12,1999.'
    term = 'This promotion shall begin on June 1,1999 and shall terminate June 1, 2000 (herein "Term").'
    assert statements(phrases, [opening, term]) == [(term, "June 1,1999")]
    assert statements(phrases, [opening, "This Section shall begin on June 1, 1999."]) == []
    assert statements(phrases, ["Supply Agreement dated May 1, 2001.", term]) == []  # not its name


def test_parties_are_named_not_referred_to_by_their_roles():
    """A span states the parties when it names them ("Kiromic, Inc."), not when it speaks of "the Company" and
    "you" in a boilerplate sentence: the parties slot counts entity words after a capitalised name only."""
    from app.agent.verify import has_slot

    assert not has_slot("parties", "the Company and constitute the complete agreement between you and the Company")
    named = "This Agreement is entered into by and between Kiromic, Inc. and Acme Holdings LLC (the “Consultant”)."
    assert has_slot("parties", named)
    caps = "AGREEMENT between GOLD RESOURCE CORPORATION and HOCHSCHILD MINING HOLDINGS LIMITED"
    assert has_slot("parties", caps)


def test_a_figure_read_off_a_verified_sentence_is_the_answer():
    """A supported passage and the span the text route read off its sentence: the span answers, the sentence is
    its citation; a span read off another sentence, or one that failed a gate, does not."""
    from app.agent.nodes_verify import read_off

    sentence = "The amount of deposits held as collateral at 31 December 2019 is £3.5 million (2018: £3.5 million)."
    best = {"route": "rag", "source": "passage", "answer": f"report.pdf, page 4: \u201c{sentence}\u201d",
            "citations": [{"quote": f"Note 27 Deposits\n{sentence}"}]}
    span = {"route": "rag", "source": "text", "answer": "£3.5 million", "check": True,
            "citations": [{"quote": sentence}], "verdict": {"gated": False}}
    assert read_off(best, [best, span]) is span
    other = dict(span, citations=[{"quote": "Deposits of £2.1 million were released in 2018."}])
    assert read_off(best, [best, other]) is None
    assert read_off(best, [best, dict(span, verdict={"gated": True})]) is None
    assert read_off(dict(best, source="clause"), [best, span]) is None


def test_one_figure_read_off_a_sentence_is_not_all_the_values_asked():
    """"... respectively" asks for several values: a span of one figure read off the verified sentence is not
    the answer (the sentence is); a "portion of" question asks for a percentage."""
    from app.agent.nodes_verify import read_off

    sentence = ("We estimate that we will make payments of approximately $14.2 million and $10.8 million over the next "
                "twelve months to fund our pension and postretirement plans, respectively.")
    best = {"route": "rag", "source": "passage", "answer": sentence, "citations": [{"quote": sentence}]}
    one = {"route": "rag", "source": "text", "answer": "$10.8 million", "check": True,
           "citations": [{"quote": sentence}], "verdict": {"gated": False}}
    assert read_off(best, [best, one], multi=True) is None
    assert read_off(best, [best, dict(one, answer="$14.2 million and $10.8 million")], multi=True) is not None
    portion = "What is the portion of depreciation expense associated with cost of services in 2019?"
    assert ask_of(portion).kind == "percent"
