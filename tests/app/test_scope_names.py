"""Which documents a question names: of several documents of the same kind with the same counterparty, the one
whose rare party name the question gives is the one in scope (``app.agent.scope._resolve`` over document
profiles as ingest stores them)."""
from __future__ import annotations

from types import SimpleNamespace

from app.agent.scope import _resolve
from ingest.facts.profile import words


def _facts(**profiles: str) -> dict:
    return {d: SimpleNamespace(profile=set(words(text)), filename=f"{d}.pdf", filing=None)
            for d, text in profiles.items()}


ALLIANCE = ("Strategic Alliance Agreement between The University of Texas M. D. Anderson Cancer Center, a member "
            "institution of The University of Texas System, Houston, Texas, and ")
FACTS = _facts(
    adaptimmune=ALLIANCE + "Adaptimmune LLC and Adaptimmune Limited",
    iovance=ALLIANCE + "Iovance Biotherapeutics Inc",
    supply="Supply Agreement between Harrow Optics Inc and Quillon Medical Devices Ltd",
    lease="Office Lease between Northwind Properties LLC and Contoso Holdings Inc",
    **{f"other{i}": f"Distribution Agreement number {i} between Fabrikam Trading Co and Litware Retail Corp"
       for i in range(6)},
)


def test_a_rare_party_name_picks_its_document_among_look_alikes():
    q = ("Consider the Strategic Alliance Agreement between The University of Texas M. D. Anderson Cancer Center, "
         "a member institution of The University of Texas System, Adaptimmune LLC and Adaptimmune Limited; what is "
         "the governing law?")
    assert _resolve(FACTS, q).doc_ids == ["adaptimmune"]
    q2 = "Consider the Strategic Alliance Agreement with the M. D. Anderson Cancer Center; what is the governing law?"
    assert sorted(_resolve(FACTS, q2).doc_ids) == ["adaptimmune", "iovance"]  # no party tells them apart


def test_an_agreement_names_its_parties_and_calls_itself_a_contract():
    """Ingest reads parties off any "between A and B" of an opening; a report extract ("the allocation between CGD
    and CMS based on their relative fair values") is no agreement: its opening calls itself no contract, so the
    clause finder does not read it as one (its picks were supported there and wrong)."""
    from app.agent.scope import agreements_of
    from ingest.facts import DocumentFacts, profile

    def facts(doc, opening, parties):
        return DocumentFacts(doc, f"{doc}.pdf", 1, parties=parties,
                             profile=profile.profile_tokens(f"{doc}.pdf", [opening]))

    msa = facts("msa", "This Master Services Agreement is entered into between Northwind LLC and Contoso Inc.",
                ["Northwind LLC", "Contoso Inc"])
    report = facts("report", "Goodwill was allocated between CGD and CMS based on their relative fair values.",
                   ["CGD", "CMS based on their relative fair values"])
    filing = facts("filing", "FORM 10-K Annual report of Contoso Inc.", [])
    assert agreements_of({f.doc_id: f for f in (msa, report, filing)}) == frozenset({"msa"})
