"""Sentence boundaries for legal text: abbreviation-aware, so "U.S.", "Inc.", "No. 5", "Sec. 2.1", "e.g."
and initials ("John A. Smith") never end a sentence, and clause numbers ("14.2") are not full stops.

``sentence_spans(text)`` returns verbatim (start, end) spans, whitespace trimmed. Used by the chunker (chunks
end at sentence ends) and by the agent (quotes are whole sentences).
"""
from __future__ import annotations

import re

ABBREVIATIONS = frozenset("""
inc corp co ltd llc lp llp plc l.p l.l.c n.a s.a s.a.s b.v n.v ag gmbh pty pte bhd
no nos sec secs art arts para paras cl ch pt vol fig figs ex exh approx dept div est
mr mrs ms dr prof jr sr st ave blvd rd hon gen col capt messrs
u.s u.s.a u.k e.u n.y d.c u.s.c c.f.r
e.g i.e etc viz cf vs v al et seq resp
jan feb mar apr jun jul aug sep sept oct nov dec
""".split())
# a candidate end: . ! ? (with closing quotes/brackets) then whitespace; or a line break after ; or :
END = re.compile(r"[.!?][\"'”’)\]]*(?=\s)|[;:](?=[ \t]*\n)")
NEXT_START = re.compile(r"\s+[\"“'‘(\[]?(?:[A-Z0-9]|\([a-zA-Z0-9]{1,4}\)|[a-z0-9]{1,4}[.)]\s)")
WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


def _is_end(text: str, i: int, j: int) -> bool:
    """Is the mark text[i:j] a sentence end?"""
    mark = text[i]
    if mark in ";:":
        return True  # only matched before a line break: the end of an enumerated item
    if not NEXT_START.match(text, j):
        return False  # "... under the U.S. federal law": the next word is lower case
    if mark != ".":
        return True
    m = WORD_BEFORE.search(text, max(0, i - 24), i)
    if m is None:
        return True  # "in 2024." or "(60)."
    word = m.group(1).lower()
    if word in ABBREVIATIONS or word.rstrip(".") in ABBREVIATIONS:
        return False
    if len(word) == 1 and text[i - 1].isupper():
        return False  # an initial: "John A. Smith", or the "S." of "U.S."
    if "." in word and len(word) <= 6:
        return False  # dotted abbreviations not listed: "p.m.", "N.J."
    return True


def sentence_ends(text: str) -> list[int]:
    """Offsets just past each sentence end (the last one is len(text) when the text does not end in one)."""
    ends = [m.end() for m in END.finditer(text) if _is_end(text, m.start(), m.end())]
    if not ends or text[ends[-1]:].strip():
        ends.append(len(text.rstrip()))
    return ends


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, whitespace trimmed; every span a verbatim slice of ``text``."""
    spans, start = [], 0
    for end in sentence_ends(text):
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
        start = end
    return spans
