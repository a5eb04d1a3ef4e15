"""The long route's summary points (app/agent/nodes_long.py), without a model: what the user reads is the
documents' own sentences, and a summary of one topic keeps only the sentences about it."""
from __future__ import annotations

from app.agent.nodes_long import cited_points, topic_sentences, topic_words

MSA = {"doc_id": "d1", "filename": "master_services_agreement.pdf", "page": 2, "section": "12. Term and Termination",
       "text": ("12.1 Term. This Agreement starts on the Effective Date and continues for three (3) years. "
                "12.2 Termination for Convenience. Either party may terminate this Agreement for convenience by "
                "giving sixty (60) days' prior written notice. 12.3 Termination for Cause. Either party may "
                "terminate immediately if the other party commits a material breach. 9.2 Liability Cap. Each "
                "party's total aggregate liability shall not exceed USD 2,000,000.")}


def test_a_paraphrase_that_flips_the_text_is_shown_as_the_text_itself():
    draft = "The master services agreement ends on the Effective Date and continues for three (3) years."
    points = cited_points(draft, [MSA])
    assert [q for q, _c in points] == ["12.1 Term. This Agreement starts on the Effective Date and continues for "
                                       "three (3) years."]
    assert points[0][1]["quote"] in MSA["text"] and points[0][1]["page"] == 2


def test_the_topic_is_what_the_question_adds_to_summarize_this_document():
    assert topic_words("Summarize the master services agreement.", [MSA]) == []
    assert topic_words("Give me an overview of the whole dossier.", [MSA]) == []
    assert topic_words("Summarize the termination rights in the master services agreement.", [MSA]) == \
        ["termin", "right"]  # the key first
    assert topic_words("Summarize the liability terms.", [MSA]) == ["liabil"]


def test_a_topic_keeps_only_the_documents_sentences_about_it():
    quotes = [q for q, _c in topic_sentences([MSA], "termin")]
    assert len(quotes) == 2 and all("terminate" in q for q in quotes)
    assert not any("12.1 Term." in q for q in quotes)  # "Term" is the duration, not termination
    assert topic_sentences([MSA], "arbitr") == []


def test_a_section_heading_does_not_make_a_sentence_about_the_topic():
    headed = {**MSA, "section": "12. Term and Termination",
              "text": "12. Term and Termination\n12.1 Term. This Agreement starts on the Effective Date."}
    assert topic_sentences([headed], "termin") == []
    assert topic_sentences([{**headed, "section": None}], "termin") == []  # a numbered heading line
    wrapped = {**MSA, "section": None, "text": "12.2 Either party may terminate this Agreement for\nconvenience."}
    assert len(topic_sentences([wrapped], "termin")) == 1


def test_a_name_the_documents_contain_is_their_subject_not_a_topic():
    acme = {**MSA, "filename": "10k-2024.pdf", "text": "Acme Corp reported revenue of $5 million. " + MSA["text"]}
    assert topic_words("Summarize Acme's filing.", [acme]) == []
    assert topic_words("Summarize Acme's termination rights.", [acme]) == ["termin", "right"]


def test_the_answer_names_the_topic_in_the_questions_own_words():
    from app.agent.nodes_long import asked

    q = "Summarize the 10k2 Arbitration rules."
    assert [asked(q, k) for k in topic_words(q, [MSA])] == ["10k2", "Arbitration", "rules"]
