"""Text normalisation and overlap between retrieved/cited text and gold evidence.

Overlap is measured on word trigrams of normalised text (lowercased, alphanumeric tokens), so PDF line
breaks, hyphen spacing and punctuation differences do not matter while shared boilerplate words alone do
not make a match. ``overlap(a, gold)`` = shared trigrams / min(trigrams of a, trigrams of gold): a chunk
inside a long clause, or a clause inside a chunk, both score 1.0. Spans under three tokens are matched as a
contiguous token sequence instead.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter

TOKEN = re.compile(r"[a-z0-9]+")
WS = re.compile(r"\s+")
HIT_THRESHOLD = 0.5

_TRANSLATE = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-",
                            "\u2014": "-", "\u00a0": " ", "\u00ad": ""})


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text or "").translate(_TRANSLATE).lower()
    return TOKEN.findall(text)


def _ngrams(toks: list[str], n: int = 3) -> Counter:
    return Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))


def contains_tokens(hay: list[str], needle: list[str]) -> bool:
    if not needle:
        return False
    n = len(needle)
    first = needle[0]
    return any(hay[i] == first and hay[i:i + n] == needle for i in range(len(hay) - n + 1))


def overlap(text: str, gold: str) -> float:
    """How much of the smaller of ``text`` and ``gold`` the other contains (0..1)."""
    a, g = tokens(text), tokens(gold)
    if not a or not g:
        return 0.0
    if len(g) < 3 or len(a) < 3:
        short, long_ = (g, a) if len(g) <= len(a) else (a, g)
        return 1.0 if contains_tokens(long_, short) else 0.0
    ta, tg = _ngrams(a), _ngrams(g)
    shared = sum((ta & tg).values())
    return shared / min(sum(ta.values()), sum(tg.values()))


def best_overlap(text: str, golds: list[str]) -> float:
    return max((overlap(text, g) for g in golds), default=0.0)


def squash(text: str) -> str:
    """Whitespace-insensitive form for verbatim checks (quotes and dashes unified, case kept)."""
    text = unicodedata.normalize("NFKC", text or "").translate(_TRANSLATE)
    return WS.sub("", text)


def occurs_verbatim(quote: str, source_squashed: str) -> bool:
    q = squash(quote)
    return bool(q) and q in source_squashed


def normalise_phrase(text: str) -> str:
    return " ".join(tokens(text))


def phrase_in(phrase: str, text: str) -> bool:
    """``phrase`` occurs in ``text`` as a contiguous token sequence (case/punctuation-insensitive)."""
    return contains_tokens(tokens(text), tokens(phrase))
