"""Section labels come from headings and numbered-clause titles, never from body sentences."""
from __future__ import annotations

from ingest.chunker import ChunkConfig, chunk_pages
from ingest.headings import heading_label
from ingest.parsers import Page


def sections(text: str) -> list[str]:
    out = []
    for c in chunk_pages([Page(1, text)], ChunkConfig(max_tokens=40, overlap=8)):
        if not out or out[-1] != c.section:
            out.append(c.section)
    return out


def test_numbered_clause_label_is_number_and_title():
    assert heading_label("14.2 Change of Control. If either party is acquired, it shall notify") == \
        "14.2 Change of Control"
    assert heading_label("13. Governing law. This Agreement is governed by the laws of Ohio.") == "13 Governing law"
    assert heading_label("7.3 TERM\u00a0AND\u00a0RENEWAL.\u00a0The initial term is two years") == "7.3 TERM AND RENEWAL"
    assert heading_label("9.4 Waiver of Rights; Consents. No waiver is effective unless written.") == \
        "9.4 Waiver of Rights; Consents"
    assert heading_label("Section 5: Payment Terms") == "5 Payment Terms"
    assert heading_label("2.1 Services Provided by U.S. Subsidiaries. Each subsidiary shall") == \
        "2.1 Services Provided by U.S. Subsidiaries"


def test_a_clause_without_a_title_is_labelled_by_its_number():
    assert heading_label("3.1 The term of this contract shall begin on the day the buyer signs it and") == "3.1"
    assert heading_label('1.4 "Product" shall mean the goods listed in the schedule attached') == "1.4"


def test_contents_lines_lose_their_page_numbers():
    assert heading_label("6.2 Limitation of Remedies 17") == "6.2 Limitation of Remedies"
    assert heading_label("6.3 Audit Rights ........ 18") == "6.3 Audit Rights"


def test_all_caps_lines_of_a_paragraph_are_not_headings():
    # a line of an all-caps disclaimer with a sentence end inside it
    assert heading_label("OF ANY KIND WHATSOEVER. THE SUPPLIER MAKES NO OTHER PROMISE IN THIS CLAUSE 4") is None
    text = ("5. Disclaimer. The goods are sold as they are.\n"
            "IN NO CASE WILL THE SUPPLIER OWE THE BUYER ANY SUM FOR LOST PROFITS OR\n"
            "REVENUE ARISING FROM A DELAY OR FAILURE TO DELIVER, EVEN IF TOLD OF\n"
            "THE RISK OF SUCH LOSS IN ADVANCE\n"
            "\n"
            "LIMITATION OF REMEDIES\n"
            "The buyer's only remedy is a refund of the price paid.")
    assert sections(text) == ["5 Disclaimer", "Limitation Of Remedies"]


def test_a_number_wrapped_onto_a_new_line_opens_no_clause():
    text = ("8. Delivery. The supplier shall deliver every order placed by the buyer within\n"
            "30 Business Days of its receipt at the supplier's main office in the city.\n"
            "9. Acceptance. The buyer may reject goods that do not conform.")
    assert sections(text) == ["8 Delivery", "9 Acceptance"]


def test_roman_numbered_all_caps_headings_keep_their_numeral():
    assert heading_label("IV. SUPPLY AND DELIVERY") == "IV. Supply And Delivery"
    assert heading_label("ARTICLE IV - FEES") == "IV FEES"
