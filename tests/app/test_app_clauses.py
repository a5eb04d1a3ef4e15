"""Contracts end to end: real PDFs written here go through the real ingest, Qdrant search and agent.

A question that names the agreement and its parties must find the clause (not the title page), answer with
the clause's whole sentence(s), and be ``supported`` only when the verifier accepts the cited span; a
question the contract does not answer gets "not contain" and related passages, never a citation.
No model is loaded: clause questions are answered extractively.
"""
from __future__ import annotations

import re

import pytest

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from text_pdf import write_paragraphs_pdf  # tests/text_pdf.py

TENANT = "clauses"
FILLER = ("The parties shall cooperate in good faith and keep each other reasonably informed of all matters "
          "relating to the performance of this Agreement. ")

SUPPLY = [
    ("SUPPLY AGREEMENT", "h"),
    ("This Supply Agreement (the \"Agreement\") is made as of March 3, 2021 by and between Harrow Optics Inc., "
     "a Delaware corporation (\"Supplier\"), and Quillon Medical Devices Ltd. (\"Buyer\").", None),
    ("1. Definitions", "h"),
    ("1.1 \"Products\" means the optical lens assemblies listed in Schedule A, as amended from time to time by "
     "written agreement of the parties. " + FILLER, None),
    ("1.2 \"Territory\" means the U.S. and Canada. " + FILLER, None),
    ("1.3 \"Effective Date\" means the date on which the regulator first clears the Products for sale in the "
     "Territory. " + FILLER, None),
    ("2. Supply and Purchase", "h"),
    ("2.1 Supply. Supplier shall manufacture and deliver the Products to Buyer in accordance with each purchase "
     "order accepted under this Agreement. " + FILLER * 3, "break"),
    ("8. Term", "h"),
    ("8.1 Initial Term. This Agreement commences on the Effective Date and continues for five (5) years. " + FILLER,
     None),
    ("12. Notices", "h"),
    ("12.1 Notices. All notices under this Agreement shall be in writing and sent by U.S. certified mail or by "
     "courier to Harrow Optics Inc., 400 Lake Street, Boston, Massachusetts, or to Quillon Medical Devices Ltd., "
     "12 Harbour Road, Dublin, Ireland.", None),
    ("13. Assignment", "h"),
    ("13.1 Assignment. Neither party may assign this Agreement without the prior written consent of the other "
     "party, which consent shall not be unreasonably withheld.", None),
    ("14. Governing Law", "h"),
    ("14.1 Governing Law. This Agreement and any dispute arising under it shall be governed by the laws of the "
     "Commonwealth of Massachusetts, U.S. federal law applying where it preempts state law. The United Nations "
     "Convention on Contracts for the International Sale of Goods does not apply.", None),
]
SERVICES = [  # no governing-law clause: the notice clause mentions states and courts' addresses only
    ("CONSULTING SERVICES AGREEMENT", "h"),
    ("This Consulting Services Agreement is entered into on June 1, 2019 by and between Brightwater Analytics LLC "
     "(\"Consultant\") and Tamsin Foods Corp. (\"Client\").", None),
    ("1. Services", "h"),
    ("1.1 Services. Consultant shall provide the data analysis services described in each statement of work. "
     + FILLER * 2, None),
    ("3. Term", "h"),
    ("3.1 Term. The term of this Agreement shall commence on the date Client accepts the first statement of work "
     "and continue for two (2) years. " + FILLER, None),
    ("5. Fees", "h"),
    ("5.1 Fees. Client shall pay Consultant the fees set out in each statement of work within thirty (30) days of "
     "invoice. " + FILLER, None),
    ("9. Notices", "h"),
    ("9.1 Notices. Notices shall be sent to Brightwater Analytics LLC, 9 Elm Street, Austin, State of Texas, and to "
     "Tamsin Foods Corp., 77 Mill Road, Portland, State of Oregon, by registered mail.", None),
]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from app.service import LexiconService

    settings = small_settings(tmp_path_factory.mktemp("clauses"))
    svc = LexiconService(settings)
    docs = tmp_path_factory.mktemp("contracts")
    paths = [write_paragraphs_pdf(docs / "supply_agreement.pdf", SUPPLY), write_paragraphs_pdf(docs / "consulting_agreement.pdf", SERVICES)]
    job = svc.ingest_paths(TENANT, paths)
    assert job["failed"] == 0, job
    yield svc
    svc.close()


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def source_text(service, doc_id: str) -> str:
    return flat(" ".join(p.text for p in service.kb.document_passages(TENANT, doc_id)))


def test_names_in_the_question_resolve_the_document_and_the_clause_is_found(service):
    from app.agent.clause_search import find_passages
    from app.agent.scope import resolve

    q = "Consider the Supply Agreement between Harrow Optics Inc. and Quillon Medical Devices Ltd.; what is the governing law?"
    scope = resolve(service.kb, TENANT, q)
    supply = [d["id"] for d in service.documents(TENANT) if d["filename"] == "supply_agreement.pdf"]
    assert scope.doc_ids == supply
    assert "Harrow" not in scope.query and "governing law" in scope.query
    hits = find_passages(service.kb, TENANT, q, k=3, scope=scope)
    assert hits[0].page != 1 and "Commonwealth of Massachusetts" in flat(hits[0].text), hits[0]
    # the same question with plain search and the names in it lands on the title page (the old behaviour)
    assert service.kb.search(TENANT, q, k=1)[0].page == 1


def test_answer_is_the_whole_governing_law_sentence_with_provenance(service):
    q = "Consider the Supply Agreement between Harrow Optics Inc. and Quillon Medical Devices Ltd.; which law governs it?"
    a = service.ask(TENANT, q, mode="rag")
    assert a.supported and len(a.citations) == 1, a
    c = a.citations[0]
    quote = flat(c.quote)
    assert c.filename == "supply_agreement.pdf" and c.page == 2 and c.section.startswith("14.1")
    assert quote.endswith("state law.") and "U.S. federal law" in quote  # not cut at "U."
    assert quote in source_text(service, c.doc_id)
    assert "Massachusetts" in a.answer and a.related == []


def test_assignment_and_term_questions_quote_their_clauses(service):
    names = "Consider the Supply Agreement between Harrow Optics Inc. and Quillon Medical Devices Ltd.; "
    a = service.ask(TENANT, names + "can a party assign the agreement without consent?", mode="rag")
    assert a.supported and "prior written consent" in flat(a.citations[0].quote)
    t = service.ask(TENANT, names + "how long is the initial term?", mode="rag")
    assert t.supported and "five (5) years" in flat(t.citations[0].quote)


def test_an_effective_date_the_contract_defines_is_answered_by_its_definition(service):
    """The agreement is dated March 3, 2021 but takes effect on an event its definitions name: the answer is
    the contract's own definition of the term the question names, not the date of its opening."""
    names = "Consider the Supply Agreement between Harrow Optics Inc. and Quillon Medical Devices Ltd.; "
    a = service.ask(TENANT, names + "on what date does this agreement become effective?", mode="rag")
    assert flat(a.citations[0].quote).startswith("1.3 \"Effective Date\" means"), a
    assert "first clears the Products" in flat(a.citations[0].quote) and "March 3, 2021" not in a.answer


def test_a_clause_the_contract_lacks_is_not_stated_and_the_notice_clause_is_only_related(service):
    q = "Consider the Consulting Services Agreement between Brightwater Analytics LLC and Tamsin Foods Corp.; what is the governing law?"
    a = service.ask(TENANT, q, mode="rag")
    assert not a.supported and a.citations == []
    assert "do not contain" in a.answer
    assert a.related and all(r.filename == "consulting_agreement.pdf" for r in a.related)


def test_verifier_rejects_a_span_of_the_wrong_type():
    from app.agent.clauses.taxonomy import built_in
    from app.agent.verify import verify

    notice = SERVICES[-1][0]
    law = SUPPLY[-1][0]
    kinds = built_in()
    assert not verify(kinds.get("governing law"), "what is the governing law?", "", [notice])[0]
    assert verify(kinds.get("governing law"), "what is the governing law?",
                  "Governing law: Commonwealth of Massachusetts.", [law])[0]
    # a figure or a name the span does not state is rejected
    assert not verify(kinds.get("governing law"), "what is the governing law?", "Governing law: State of New York.",
                      [law])[0]
    assert not verify(kinds.get("expiration date"), "how long is the term?", "",
                      ["This Agreement may be signed in counterparts."])[0]


def test_a_provision_of_a_clause_is_stated_under_the_clauses_heading():
    """"How long do confidentiality obligations survive?" is answered by "11.3 Survival", which stands under "11.
    Confidentiality" and says "survive", though not the clause's own wording ("confidential information")."""
    from app.agent.clauses.taxonomy import built_in
    from app.agent.verify import verify

    kind, q = built_in().get("confidentiality"), "how long do confidentiality obligations survive?"
    survival = "11.3 Survival. The obligations in this Section 11 survive for five (5) years after termination."
    assert verify(kind, q, "", [survival], heading="11. Confidentiality / 11.3 Survival")[0]
    assert not verify(kind, q, "", [survival])[0]  # no heading: nothing says it is the confidentiality clause
    assert not verify(kind, q, "", [survival], heading="12. Term and Termination / 12.3 Survival")[0]
    # a question of the clause itself asks nothing the heading could stand in for
    assert not verify(kind, "what is the confidentiality clause?", "", [survival],
                      heading="11. Confidentiality")[0]
    other = "11.2 Notices. Notices are given in writing to the addresses above."  # under the heading, off the point
    assert not verify(kind, q, "", [other], heading="11. Confidentiality / 11.2 Notices")[0]


def test_the_opening_is_the_text_before_the_numbered_clauses():
    from app.agent.nodes_rag import in_opening

    assert in_opening({"char_start": 0, "section": "MASTER SERVICES AGREEMENT"})
    assert not in_opening({"char_start": 900, "section": "11.1 Obligations"})  # a short contract's clause
    assert not in_opening({"char_start": 4000, "section": "RECITALS"})


def test_stream_sends_only_the_final_answer(service):
    q = "Consider the Supply Agreement between Harrow Optics Inc. and Quillon Medical Devices Ltd.; what is the governing law?"
    events = list(service.ask_stream(TENANT, q, mode="rag"))
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert events[-1]["type"] == "final"
    assert tokens.strip() == events[-1]["answer"]["answer"] and len(tokens) > 20


def test_a_date_another_sentence_contradicts_is_not_supported_when_the_question_asks_how_it_states_it(service):
    """The agreement is entered into on June 1, 2019, but its term commences on an event (clause 3.1): asked when
    it becomes effective, the opening's date is not a supported answer (clause_kinds.yaml ``stated_by``); asked
    for the date of the agreement, it is."""
    names = "Consider the Consulting Services Agreement between Brightwater Analytics LLC and Tamsin Foods Corp.; "
    a = service.ask(TENANT, names + "on what date does this agreement become effective?", mode="rag")
    assert not (a.supported and "June 1, 2019" in a.answer), a
    reasons = " ".join((a.verdict or {}).get("reasons") or [])
    assert not a.supported and ("states it otherwise" in reasons or "commence" in a.answer), (a.answer, reasons)
    d = service.ask(TENANT, names + "what is the date of this agreement?", mode="rag")
    assert d.supported and "June 1, 2019" in d.answer, d
