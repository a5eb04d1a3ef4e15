"""Chunks follow structure, keep clause numbers and exact offsets, and respect budget and overlap."""
from __future__ import annotations

from ingest.chunker import TOKEN, ChunkConfig, chunk_pages, document_text, heading_label
from ingest.parsers import Page

CONTRACT = """MASTER SERVICES AGREEMENT

12. Term and Termination
12.1 Term. This Agreement continues for three (3) years.
12.2 Termination for Convenience. Either party may terminate on sixty (60) days' notice.
It must be in writing.
14.2 Change of Control. A party may terminate if the other undergoes a change of control."""


def test_clause_numbers_become_sections_and_stay_in_the_text():
    pages = [Page(1, CONTRACT)]
    chunks = chunk_pages(pages, ChunkConfig(max_tokens=200, overlap=20))
    sections = [c.section for c in chunks]
    assert sections == ["12.1 Term", "12.2 Termination for Convenience", "14.2 Change of Control"]
    assert chunks[0].text.startswith("MASTER SERVICES AGREEMENT\n\n12. Term and Termination\n12.1 Term.")
    assert chunks[1].text.endswith("It must be in writing.")  # continuation lines stay with their clause
    assert chunks[2].text.startswith("14.2 Change of Control.")


def test_offsets_are_exact_and_chunks_never_cross_pages():
    pages = [Page(1, CONTRACT), Page(2, "# Annex\n\n" + "word " * 500), Page(3, "Final note.")]
    full = document_text(pages)
    chunks = chunk_pages(pages, ChunkConfig(max_tokens=64, overlap=8))
    for c in chunks:
        assert full[c.char_start:c.char_end] == c.text
        page_start = sum(len(p.text) + 2 for p in pages[: c.page - 1])
        assert page_start <= c.char_start and c.char_end <= page_start + len(pages[c.page - 1].text)
    assert {c.page for c in chunks} == {1, 2, 3}
    assert [c.ord for c in chunks] == list(range(len(chunks)))


def test_long_paragraph_windows_respect_budget_and_overlap():
    words = " ".join(f"w{i}" for i in range(300))
    chunks = chunk_pages([Page(1, words)], ChunkConfig(max_tokens=100, overlap=10))
    assert all(c.n_tokens <= 100 for c in chunks)
    assert len(chunks) == 4  # windows start at 0, 90, 180, 270
    for a, b in zip(chunks, chunks[1:]):
        tail = TOKEN.findall(a.text)[-10:]
        assert TOKEN.findall(b.text)[:10] == tail


def test_small_paragraphs_of_one_section_are_packed_together():
    text = "1. Scope\n\nFirst paragraph.\n\nSecond paragraph.\n\n2. Fees\n\nThird."
    chunks = chunk_pages([Page(1, text)], ChunkConfig(max_tokens=50, overlap=5))
    assert [c.section for c in chunks] == ["1 Scope", "2 Fees"]
    assert "First paragraph." in chunks[0].text and "Second paragraph." in chunks[0].text


def test_heading_label_rules():
    assert heading_label("14.2 Change of Control. If a party...") == "14.2 Change of Control"
    assert heading_label("## Risk Factors") == "Risk Factors"
    assert heading_label("CONSOLIDATED BALANCE SHEETS") == "Consolidated Balance Sheets"
    assert heading_label("2024 2023 2022") is None
    assert heading_label("Revenue $ 63,918.7 $ 55,732.4") is None
    assert heading_label("the parties agree as follows.") is None


def test_sentences_do_not_end_at_abbreviations_or_clause_numbers():
    from ingest.sentences import sentence_spans

    text = ("This Agreement is governed by the laws of the U.S. and the State of New York. Acme Inc. shall pay "
            "the fee in Sec. 2.1 to John A. Smith. Terms:\n(a) first item;\n(b) second item.")
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["This Agreement is governed by the laws of the U.S. and the State of New York.",
                   "Acme Inc. shall pay the fee in Sec. 2.1 to John A. Smith.", "Terms:", "(a) first item;",
                   "(b) second item."]


def test_a_long_clause_is_cut_at_sentence_ends_never_mid_sentence():
    from ingest.sentences import sentence_spans

    sentence = "Each party shall comply with U.S. export laws and obtain any licence No. 5 requires in writing. "
    text = "7. Compliance\n7.1 Export. " + sentence * 40
    chunks = chunk_pages([Page(1, text)], ChunkConfig(max_tokens=100, overlap=10))
    assert len(chunks) > 3 and all(c.n_tokens <= 100 for c in chunks)
    for c in chunks:
        assert c.section == "7.1 Export"
        assert c.text.endswith("in writing."), c.text[-40:]
        # each chunk is whole sentences: its sentence spans end where the chunk ends
        assert sentence_spans(c.text)[-1][1] == len(c.text)


def test_definitions_and_enumerated_items_stay_whole():
    defs = "\n".join(f"({chr(97 + i)}) \u201cTerm{i}\u201d means the thing number {i} as described in the U.S. "
                     f"schedule of the parties, and includes its parts. It is used in Section {i}." for i in range(12))
    text = "1. DEFINITIONS\nThe following terms have these meanings:\n" + defs
    chunks = chunk_pages([Page(1, text)], ChunkConfig(max_tokens=120, overlap=10))
    assert len(chunks) > 1
    for c in chunks:
        items = [line for line in c.text.splitlines() if line.startswith("(")]
        for line in items:  # every definition whole in one chunk: from its term to its last sentence
            i = ord(line[1]) - 97
            assert line.startswith(f"({line[1]}) \u201cTerm{i}\u201d means") and line.endswith(f"used in Section {i}."), line
    assert sum(c.text.count("\u201d means") for c in chunks) == 12


def test_article_roman_numerals_are_headings():
    assert heading_label("ARTICLE IV - Governing Law") == "IV Governing Law"
    assert heading_label("Section 5.2 Assignment. Neither party may assign.") == "5.2 Assignment"
