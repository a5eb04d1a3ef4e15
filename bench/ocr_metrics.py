"""Character error rate of an OCR text against a reference text, for documents of any length.

Both texts are normalised (whitespace runs become one space; curly quotes and dashes unified), then
aligned word by word (difflib); the characters of each differing stretch are compared by Levenshtein
distance. The sum over stretches, over the reference's length, is the CER: an upper bound of the
whole-text character edit distance (exact where the word alignment is), computed in seconds where a
50,000 x 50,000 character table would take hours in Python.
"""
from __future__ import annotations

import difflib
import re

_UNIFY = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2013": "-", "\u2014": "-",
                        "\u00a0": " ", "\ufb01": "fi", "\ufb02": "fl"})


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.translate(_UNIFY)).strip()


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def edit_distance(hyp: str, ref: str) -> int:
    """Character edits turning ``hyp`` into ``ref`` (both normalised), aligned on words first."""
    hw, rw = hyp.split(" "), ref.split(" ")
    sm = difflib.SequenceMatcher(None, hw, rw, autojunk=False)
    total = 0
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        a, b = " ".join(hw[i1:i2]), " ".join(rw[j1:j2])
        if len(a) * len(b) > 4_000_000:  # a long unaligned stretch: count it as replaced
            total += max(len(a), len(b))
        else:
            total += levenshtein(a, b) + 1  # +1: the space joining the stretch to its neighbours
    return total


def cer(hyp: str, ref: str) -> float:
    hyp, ref = normalise(hyp), normalise(ref)
    return edit_distance(hyp, ref) / max(1, len(ref))
