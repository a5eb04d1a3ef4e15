"""Clause kinds as data: the shipped taxonomy loads and validates; a kind added only as data (a tenant's
playbook) is found in a real contract, as its whole numbered section; a question of no known kind finds its
section by its own words. Real ingest (PDF written here), real SQLite, real Qdrant Edge, real embedder."""
from __future__ import annotations

import re

import pytest

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from text_pdf import write_paragraphs_pdf  # tests/text_pdf.py

TENANT, OTHER = "kinds-a", "kinds-b"
FILLER = ("Each party shall perform its obligations under this Agreement diligently and in a professional manner "
          "consistent with generally accepted industry standards. ")
CONTRACT = [
    ("MASTER SERVICES AGREEMENT", "h"),
    ("This Master Services Agreement is entered into as of April 2, 2022 by and between Corvid Systems Inc., a "
     "Delaware corporation (\"Provider\"), and Lindqvist Freight AB (\"Customer\").", None),
    ("1. Services", "h"),
    ("1.1 Scope. Provider shall provide the logistics software services described in each order form. " + FILLER * 3,
     None),
    ("1.2 Changes. Either party may request changes to an order form in writing. " + FILLER * 2, "break"),
    ("7. Fees", "h"),
    ("7.1 Fees. Customer shall pay the fees set out in each order form within forty-five (45) days of invoice. "
     + FILLER * 2, None),
    ("11. Events Beyond Control", "h"),
    ("11.1 Neither Party will be responsible for delays caused by events outside its reasonable control, including "
     "acts of God, earthquakes, epidemics, riots or governmental orders.", None),
    ("11.2 The affected Party shall notify the other Party promptly and resume performance as soon as practicable; "
     "if the delay lasts more than sixty (60) days, either Party may end the affected order form.", None),
    ("12. Insolvency", "h"),
    ("12.1 If either Party becomes insolvent, makes a general assignment for the benefit of its creditors or has a "
     "petition in bankruptcy filed by or against it, the other Party may terminate this Agreement at once by "
     "written notice.", None),
    ("13. Governing Law", "h"),
    ("13.1 This Agreement shall be governed by the laws of the State of New York, without regard to its conflict "
     "of laws rules.", None),
    ("14. Assignment", "h"),
    ("14.1 Neither party may assign this Agreement without the prior written consent of the other party. "
     + FILLER, None),
]
FORCE_MAJEURE = {
    "name": "force majeure",
    "description": "Excuses a party from performing while events beyond its reasonable control, such as natural "
                   "disasters, war or strikes, prevent performance.",
    "wordings": ["neither party shall be liable for any failure or delay in performance due to causes beyond its "
                 "reasonable control", "acts of God, fire, flood, war, terrorism or labour disputes"],
    "headings": ["force majeure"],
    "answer": "clause",
}


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    from ingest.knowledge_base import KnowledgeBase

    settings = small_settings(tmp_path_factory.mktemp("kinds"))
    kb = KnowledgeBase(settings)
    path = write_paragraphs_pdf(settings.data_dir / "msa.pdf", CONTRACT)
    for tenant in (TENANT, OTHER):
        res = kb.ingest_file(path, tenant)
        assert res.status == "ingested", res
    yield kb
    kb.close()


def doc_id(kb, tenant: str = TENANT) -> str:
    return kb.list_documents(tenant)[0].id


def test_the_shipped_kinds_load_and_every_entry_validates():
    from app.agent.clauses.taxonomy import SLOTS, built_in

    tax = built_in()
    assert len(tax) == 20
    for k in tax:
        assert k.description.endswith(".") and k.wordings and k.answer in SLOTS, k.name
        assert not any(ch in w for w in k.wordings for ch in "\\[]()?*+|^$"), k.name  # phrases, not patterns
    assert tax.get("Governing Law").answer == "jurisdiction"


@pytest.mark.parametrize("entry,message", [
    ({"name": "x kind", "wordings": ["a b c"]}, "'description' is missing"),
    ({"name": "x kind", "description": "Does x.", "wordings": ["a b"], "answer": "colour"}, "expected one of"),
    ({"name": "x kind", "description": "Does x.", "wordings": []}, "'wordings' is empty"),
    ({"name": "the clause", "description": "Does x.", "wordings": ["a"]}, "no content word"),
    ({"name": "x kind", "description": "Does x.", "wordings": ["a"], "regex": "x.*"}, "unknown field"),
    ({"name": "x kind", "description": "Does x.", "wordings": ["a"], "alternatives": [["one way"]]},
     "two or more lists"),
])
def test_a_bad_entry_is_refused_with_its_field_and_reason(entry, message):
    from app.agent.clauses.taxonomy import TaxonomyError, kind_from_dict

    with pytest.raises(TaxonomyError, match=re.escape(message)):
        kind_from_dict(entry)


def test_a_bad_taxonomy_file_names_the_entry(tmp_path):
    from app.agent.clauses.taxonomy import TaxonomyError, load_kinds

    bad = tmp_path / "kinds.yaml"
    bad.write_text("- name: a kind\n  description: Does a.\n  wordings: [x y]\n- name: A Kind\n  description: b.\n"
                   "  wordings: [z]\n")
    with pytest.raises(TaxonomyError, match="entry 2: duplicate name 'a kind'"):
        load_kinds(bad)


def test_questions_name_their_kind_and_an_unknown_kind_is_none():
    from app.agent.clauses.taxonomy import get_taxonomy, kind_from_dict

    tax = get_taxonomy()
    assert tax.match("what is the governing law?").name == "governing law"
    assert tax.match("what happens on a change of control, such as a merger? is consent needed for assignment?"
                     ).name == "change of control"
    assert tax.match("can a party assign this agreement without consent?").name == "anti-assignment"
    assert tax.match("What happens if a party goes bankrupt?") is None
    assert tax.match("Is there a force majeure clause?") is None
    mine = get_taxonomy([kind_from_dict(FORCE_MAJEURE, source="playbook")])
    assert mine.match("Is there a force majeure clause?").name == "force majeure"
    assert len(mine) == len(tax) + 1  # the built-ins are not changed by a tenant's kinds
    assert tax.match("What is the date of this agreement?").name == "agreement date"


def test_a_kind_named_by_one_word_is_a_weak_reading():
    from app.agent.clauses.taxonomy import get_taxonomy

    tax = get_taxonomy()
    kind, strong = tax.reading("Which party has audit rights over the books?")
    assert kind.name == "audit rights" and strong
    kind, strong = tax.reading("Is there an audit clause?")  # one word, and all the question asks
    assert kind.name == "audit rights" and not strong
    # one word of two, the other saying which thing it is: a line item's word, payment terms, no reading
    assert tax.match_scores("What were the audit fees in 2019?")[0][1].name == "audit rights"
    assert tax.reading("What were the audit fees in 2019?") == (None, False)
    assert tax.match_scores("What are the payment terms?")[0][1].name == "expiration date"  # "term"
    assert tax.reading("What are the payment terms?") == (None, False)
    assert tax.reading("What happens if a party goes bankrupt?") == (None, False)
    # "how long does it last" names the term; words between "long" and "last" say what lasts
    assert tax.reading("How long does the NDA last?")[0].name == "expiration date"
    assert tax.reading("How long do confidentiality obligations last?") == (None, False)
    assert tax.reading("What was revenue in the last fiscal year?") == (None, False)


def test_a_weak_reading_that_explains_little_of_the_question_is_no_reading(kb):
    """One shared word ("license") names a kind, but the question asks about something the kind's data does
    not say (escrow of source code): it is read by its own words, not as the license grant."""
    from app.agent.clauses.taxonomy import MIN_FIT, get_taxonomy

    tax = get_taxonomy()
    q = "Is source code held in escrow for the benefit of the licensee?"
    assert tax.match_scores(q)[0][1].name == "license grant"  # the one word matches ...
    assert tax.match_scores(q)[0][1].fit(q) < MIN_FIT  # ... and explains little of the rest
    assert tax.reading(q) == (None, False) and tax.reading(q, kb.embedder) == (None, False)  # nor near in meaning
    # most of the words are not the kind's, but the question is about it: the embedder confirms the one word
    q = "How long do the confidentiality obligations last?"
    assert tax.reading(q) == (None, False)
    assert tax.reading(q, kb.embedder)[0].name == "confidentiality"
    assert tax.match("What license is granted under this agreement?").name == "license grant"
    kind, strong = tax.reading("What insurance must the supplier maintain?")  # weak, and the whole question
    assert kind.name == "insurance" and not strong and kind.fit("What insurance must the supplier maintain?") >= MIN_FIT
    assert kind.rest("What insurance must the supplier maintain?") == {"suppli"}


def test_a_kind_added_only_as_data_finds_its_whole_numbered_section(kb):
    from app.agent.clauses.finder import find_units
    from app.agent.clauses.taxonomy import get_taxonomy, kind_from_dict

    kind = get_taxonomy([kind_from_dict(FORCE_MAJEURE, source="playbook")]).match("Is there a force majeure clause?")
    units = find_units(kb.for_tenant(TENANT), "Is there a force majeure clause?", kind, [doc_id(kb)], k=3)
    top = flat(units[0].text)
    assert top.startswith("11. Events Beyond Control"), units[0]
    assert "acts of God" in top and "sixty (60) days" in top  # 11.1 and 11.2: the section whole
    assert "Insolvency" not in top and "Fees" not in top  # and nothing of the next section or the one before
    assert "reasonable control" in units[0].quote and units[0].quote in units[0].text
    assert units[0].page == 2 and units[0].filename == "msa.pdf"
    p = units[0].passage()  # its offsets in the document: the opening is told from the rest
    assert p.char_start == units[0].offset > 0 and p.char_end == units[0].offset + len(units[0].text)


def test_a_question_of_no_known_kind_finds_its_section_by_its_own_words(kb):
    from app.agent.clauses.finder import find_units

    q = "What happens if a party goes bankrupt?"
    units = find_units(kb.for_tenant(TENANT), q, None, [doc_id(kb)], k=3)
    assert flat(units[0].text).startswith("12. Insolvency"), [u.section for u in units]
    assert units[0].text.rstrip().endswith("written notice.")  # whole, not cut mid-sentence
    assert "bankruptcy" in units[0].quote


def test_a_passage_candidate_quotes_the_sentence_the_finder_picked(kb):
    """The finder weighs each unit's sentences against the units it read; the rag route's passage candidate
    quotes that pick instead of reading the unit again, and reads a passage itself only where no pick came
    with it (or the pick is not the passage's own text)."""
    from app.agent.clause_search import find_passages
    from app.agent.nodes_rag import passage_candidates
    from app.agent.state import passage_dict

    q = "What happens if a party goes bankrupt?"
    found = [passage_dict(p) for p in find_passages(kb, TENANT, q, k=3, doc_ids=[doc_id(kb)], kind=None)]
    top = found[0]
    assert "bankruptcy" in top["quote"] and top["quote"] in top["text"]
    assert passage_candidates(q, None, found)[0]["citations"][0]["quote"] == top["quote"]
    other = "Neither party may assign this Agreement without the prior written consent of the other party."
    unit = dict(top, text=top["text"] + " " + other)
    assert passage_candidates(q, None, [dict(unit, quote=other)])[0]["citations"][0]["quote"] == other
    for pick in ("", "A sentence the unit does not hold."):
        quote = passage_candidates(q, None, [dict(unit, quote=pick)])[0]["citations"][0]["quote"]
        assert quote in unit["text"] and "bankruptcy" in quote


def test_a_question_of_no_known_kind_in_other_words_is_found_by_the_embedder(kb):
    """No word of the asking part is in the clause ("transferred to another company" for "may not assign"):
    the embedder's best sentence cosine (the ``dense`` part) ranks it first among every unit of the contract,
    and the finder adds that part for a question of no known kind only."""
    import app.agent.clauses.finder as finder
    from app.agent.clauses.units import document_units

    q = "Can the contract be transferred to another company?"
    units = document_units(kb.document_passages(TENANT, doc_id(kb)))
    finder._dense(kb.embedder, q, units)
    best = max(units, key=lambda u: u.score)
    assert flat(best.text).startswith("14. Assignment"), [(u.section, u.parts) for u in units]
    assert best.score == finder.W_DENSE * best.parts["dense"]
    found = finder.find_units(kb.for_tenant(TENANT), q, None, [doc_id(kb)], k=3)
    assert flat(found[0].text).startswith("14. Assignment") and "dense" in found[0].parts
    assert finder._agreements(kb.for_tenant(TENANT), [doc_id(kb)]) == {doc_id(kb)}  # it names its parties
    from app.agent.clauses.taxonomy import get_taxonomy, kind_from_dict

    kind = get_taxonomy([kind_from_dict(FORCE_MAJEURE, source="playbook")]).match("Is there a force majeure clause?")
    assert kind is not None
    known = finder.find_units(kb.for_tenant(TENANT), "Is there a force majeure clause?", kind, [doc_id(kb)], k=3)
    assert known and all("dense" not in u.parts for u in known)
    assert all(u.quote and u.answer_quote == "" for u in known)  # the route's clause candidates quote a kind


def test_a_document_that_names_no_parties_is_not_re_read_by_the_embedder(kb, tmp_path):
    """A report (no parties at its opening) keeps the lexical and search ranking, and its units carry no pick of
    the finder's: its answers are mostly in tables, which no sentence states."""
    import app.agent.clauses.finder as finder

    path = tmp_path / "report.txt"
    path.write_text("Annual Report 2023\n\n1. Results\nRevenue grew in every region during the year under review "
                    "while costs were stable.\n\n2. Outlook\nThe company expects demand to remain strong next "
                    "year, and it plans to open two plants.\n")
    assert kb.ingest_file(path, "kinds-report").status == "ingested"
    kbt = kb.for_tenant("kinds-report")
    report = kb.list_documents("kinds-report")[0].id
    assert finder._agreements(kbt, [report]) == set()
    units = finder.find_units(kbt, "What does the firm foresee for the coming period?", None, [report], k=3)
    assert units and all("dense" not in u.parts for u in units)
    assert all(u.answer_quote == "" for u in units)  # its passages are read by the route, not quoted from here


def test_units_never_cut_a_sentence_and_keep_sub_clauses(kb):
    from app.agent.clauses.units import document_units

    units = document_units(kb.document_passages(TENANT, doc_id(kb)))
    texts = [flat(u.text) for u in units]
    assert any(t.startswith("1. Services") and "1.2 Changes" in t for t in texts), texts
    for t in texts[1:]:
        assert t[-1] in ".)\"", t[-80:]


def test_the_rag_search_reads_the_tenants_playbook_and_no_other(kb):
    from app.agent.clause_search import find_passages
    from app.agent.clauses import playbook

    q = "Is there a force majeure clause?"
    playbook.add_kinds(kb.engine, TENANT, [FORCE_MAJEURE])
    try:
        assert [k.name for k in playbook.list_kinds(kb.engine, TENANT)] == ["force majeure"]
        assert playbook.list_kinds(kb.engine, OTHER) == []
        assert playbook.taxonomy_for(kb, TENANT).match(q).name == "force majeure"
        assert playbook.taxonomy_for(kb, OTHER).match(q) is None
        hits = find_passages(kb, TENANT, q, k=2, doc_ids=[doc_id(kb)])
        assert flat(hits[0].text).startswith("11. Events Beyond Control")
    finally:
        assert playbook.remove_kind(kb.engine, TENANT, "Force Majeure")
    assert playbook.list_kinds(kb.engine, TENANT) == []


def test_the_checklist_names_kinds_and_a_tenant_kind_works_there_without_code(kb, tmp_path):
    from pathlib import Path

    from app.agent.clauses import playbook
    from app.agent.clauses.checklist import with_kinds
    from app.agent.clauses.taxonomy import get_taxonomy
    from app.batch import load_questions

    shipped = load_questions(Path(__file__).resolve().parents[2] / "app" / "data" / "contract_review.yaml")
    checked = with_kinds(shipped, get_taxonomy())
    for q in checked:
        if q.get("kind"):  # every kind the checklist names is read from its question (as the agent reads it)
            assert get_taxonomy().match(q["question"], kb.embedder).name == q["kind"], q
    mine = tmp_path / "checklist.yaml"
    mine.write_text("- id: fm\n  kind: force majeure\n- id: law\n  kind: governing law\n")
    qs = load_questions(mine)
    with pytest.raises(ValueError, match="unknown clause kind 'force majeure'"):
        with_kinds(qs, playbook.taxonomy_for(kb, TENANT))
    playbook.add_kinds(kb.engine, TENANT, [FORCE_MAJEURE])
    try:
        tax = playbook.taxonomy_for(kb, TENANT)
        fm = with_kinds(qs, tax)[0]
        assert tax.match(fm["question"]).name == "force majeure"
        from app.agent.clause_search import find_passages

        hits = find_passages(kb, TENANT, fm["question"], k=1, doc_ids=[doc_id(kb)])
        assert flat(hits[0].text).startswith("11. Events Beyond Control")
    finally:
        playbook.remove_kind(kb.engine, TENANT, "force majeure")


def test_a_units_quote_is_what_it_says_not_its_heading():
    """A heading line shares the question's words ("Ownership of Intellectual Property"), but it only names the
    clause: the quote is the best sentence of the clause's body. The unit's score is read as before."""
    from app.agent.clauses.finder import _best_sentences, _Profile
    from app.agent.clauses.taxonomy import stems
    from app.agent.clauses.units import Unit
    from app.agent.quotes import quote_spans

    text = ("ARTICLE 9 INTELLECTUAL PROPERTY MATTERS 9.1 Ownership of Intellectual Property. 9.1.1 General. "
            "Subject to this Section, each Party shall solely own the inventions made solely by its employees, and "
            "the Parties shall jointly own the inventions made jointly by their employees.")
    unit = Unit("d", "x.pdf", 1, "9.1.1 General", text)
    unit.tokens, unit.spans = stems(text), quote_spans(text, headings=False)
    q = "Who owns the intellectual property developed under this agreement?"
    word, _slot, quote = _best_sentences(unit, _Profile(None, q, [unit]), "")
    assert "ARTICLE 9" not in quote and "Subject to this Section" in quote and "jointly own" in quote, quote
    assert word == _Profile(None, q, [unit]).sentence(set(stems(text[:text.index(" 9.1.1")])))  # the heading's


def test_ways_of_a_kind_that_exclude_each_other_are_data():
    """A kind's ``alternatives`` (arbitration, or the courts): the clause states another way than the one asked."""
    from app.agent.clauses.taxonomy import built_in, kind_from_dict

    disputes = built_in().get("dispute resolution")
    courts = "The courts located in New York County have exclusive jurisdiction over any dispute."
    assert disputes.other_way("Where will disputes be arbitrated?", courts) == ("arbitration", "courts")
    assert disputes.other_way("Which courts hear disputes?", courts) is None
    assert disputes.other_way("Where will disputes be arbitrated?", "Disputes go to binding arbitration.") is None
    assert disputes.other_way("Where will disputes be arbitrated?", "Disputes are settled amicably.") is None
    kind = kind_from_dict({"name": "payment method", "description": "How fees are paid.", "wordings": ["pays by"],
                           "alternatives": [["wire transfer"], ["cheque", "check"]]}, source="playbook")
    assert kind.other_way("Is payment by wire transfer?", "Customer pays by cheque.") == ("wire transfer", "cheque")
    notice = built_in().get("notice period")  # phrases whole: "for cause" is not "without cause"
    convenience = "Either party may terminate this Agreement for convenience by giving sixty (60) days' notice."
    assert notice.other_way("What notice is needed to terminate for cause?", convenience) == ("for cause",
                                                                                              "for convenience")
    assert notice.other_way("What notice is needed to terminate without cause?", convenience) is None
    assert kind_from_dict(kind.to_dict()).alternatives == kind.alternatives


def test_a_unit_joined_across_pages_cites_a_quote_from_its_own_page_and_section():
    from app.agent.clauses.units import document_units
    from app.agent.state import citation, passage_dict
    from ingest.types import Passage

    chunks = [Passage("c1", "d", "f.pdf", 4, "9.1 Cap", "9. Liability\n9.1 Cap. Liability is capped at USD 1.", 0.0,
                      500, 548),
              Passage("c2", "d", "f.pdf", 5, "9.1 Cap", "The cap is per year.", 0.0, 549, 569),
              Passage("c3", "d", "f.pdf", 5, "9.2 Exclusions", "9.2 Exclusions. No indirect damages.", 0.0, 570, 606)]
    (unit,) = document_units(chunks)
    p = passage_dict(unit.passage())
    assert (p["page"], p["section"]) == (4, "9.1 Cap")
    cite = lambda q: (citation(p, q)["page"], citation(p, q)["section"])  # noqa: E731
    assert cite("Liability is capped at USD 1.") == (4, "9.1 Cap")
    assert cite("The cap is per year.") == (5, "9.1 Cap")
    assert cite("9.2 Exclusions. No  indirect\ndamages.") == (5, "9.2 Exclusions")
    assert cite("a sentence the unit does not hold") == (4, "9.1 Cap")


def test_a_question_of_no_known_kind_reads_contract_words_by_their_synonyms(kb):
    """"remuneration" is not in the fees clause, which says "pay the fees": the contract synonyms (data:
    vocabulary.yaml contract_synonyms) count its words as the question's, each weighed by its own rarity."""
    import app.agent.clauses.finder as finder
    from app.agent.clauses.taxonomy import stems
    from app.agent.clauses.units import document_units

    q = "What remuneration does the customer owe?"
    units = document_units(kb.document_passages(TENANT, doc_id(kb)))
    fees = next(u for u in units if flat(u.text).startswith("7. Fees"))
    fold = finder.synonym_folds()
    assert fold[stems("remuneration")[0]] == fold[stems("fees")[0]] == stems("pay")[0]
    for u in units:
        u.tokens = stems(u.text)  # a unit's own words; the profile reads them through its groups
    folded = finder._Profile(None, q, units, fold).lexical(fees)
    assert folded > 2 * finder._Profile(None, q, units).lexical(fees)  # "customer" alone, unfolded
    found = finder.find_units(kb.for_tenant(TENANT), q, None, [doc_id(kb)], k=3)
    assert flat(found[0].text).startswith("7. Fees"), [(u.section, u.parts) for u in found]
