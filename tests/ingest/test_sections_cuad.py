"""Section names on real contracts (cuad-dev): a clause's chunk is labelled with the clause's own number and
title. The expected label is read from the contract's TXT, independently of the chunker: the gold clause
(CUAD's annotation) starts a line after "<number> <Title>." / "Section <number> <Title>:", so that prefix is
the clause's number and title. Skips when ../shared/eval is absent."""
from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "shared" / "eval" / "cuad-dev"
PREFIX = re.compile(r"^\s*(?:(?:Section|SECTION|Article|ARTICLE)\s+)?(?P<num>\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+"
                    r"(?P<title>[A-Z][^.:\n]{2,70}?)\s*[.:]\s*$")
SKIP = {"Filename", "Document Name", "Parties", "Agreement Date"}  # the preamble, not clauses

pytestmark = pytest.mark.skipif(not ROOT.exists(), reason=f"{ROOT} is absent (the cuad-dev evaluation set)")


def _norm(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").split()).lower()


def numbered_clauses(max_docs: int) -> dict[Path, list[tuple[str, str]]]:
    """pdf -> [(gold clause text, expected "number title")] for the first ``max_docs`` contracts with any."""
    from app.evaluation.adapters.cuad import _find, _spans

    out: dict[Path, list[tuple[str, str]]] = {}
    with open(ROOT / "master_clauses.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            stem = Path(row["Filename"]).stem
            pdf, txt = _find(ROOT / "pdf", stem), _find(ROOT / "txt", stem)
            if pdf is None or txt is None:
                continue
            text = txt.read_text(encoding="utf-8", errors="replace")
            found = []
            for cat, cell in row.items():
                if cat in SKIP or cat.endswith("Answer"):
                    continue
                for span in _spans(cell):
                    pos = text.find(span[:60])
                    m = PREFIX.match(text[text.rfind("\n", 0, pos) + 1:pos]) if pos >= 0 else None
                    if m and (span, f"{m['num']} {m['title']}") not in found:
                        found.append((span, f"{m['num']} {m['title']}"))
            if found:
                out[pdf] = found
            if len(out) >= max_docs:
                break
    return out


def _chunk_of(chunks, span: str):
    head = _norm(span)[:50]
    return next((c for c in chunks if head in _norm(c.text)), None)


def test_cited_section_is_the_clauses_own_number_and_title():
    from ingest.chunker import ChunkConfig, chunk_pages
    from ingest.parsers.pdf import parse_pdf

    checked, wrong = 0, []
    for pdf, clauses in numbered_clauses(12).items():
        chunks = chunk_pages(parse_pdf(pdf, tables=False).pages, ChunkConfig())
        for span, expected in clauses:
            chunk = _chunk_of(chunks, span)
            if chunk is None:  # the PDF's text differs from the TXT here (hyphenation, columns)
                continue
            checked += 1
            if _norm(chunk.section) != _norm(expected):
                wrong.append((pdf.name[:40], expected, chunk.section))
    assert checked >= 30, f"only {checked} clauses found in the PDFs"
    assert len(wrong) <= 0.1 * checked, f"{len(wrong)} of {checked} wrong: {wrong}"


def test_no_section_is_a_body_sentence():
    """Across the same contracts: no label holds a sentence end followed by more words, none is a line cut from
    an all-caps paragraph, and a numbered label's title is title-like (not "1.1 The term of this Agreement...")."""
    from ingest.chunker import ChunkConfig, chunk_pages
    from ingest.parsers.pdf import parse_pdf
    from ingest.sentences import sentence_ends

    bad = []
    for pdf in numbered_clauses(12):
        for c in chunk_pages(parse_pdf(pdf, tables=False).pages, ChunkConfig()):
            label = c.section
            ends = [e for e in sentence_ends(label) if e < len(label.rstrip())]
            words = re.findall(r"[A-Za-z]+", label)
            lower = [w for w in words if w.islower() and len(w) > 3]
            if ends or len(words) > 12 or len(lower) > 3:
                bad.append(label)
    assert not bad, f"{len(set(bad))} labels look like body text: {sorted(set(bad))[:20]}"
