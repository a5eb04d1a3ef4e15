"""Small text helpers shared by the nodes: content words with a crude stem, and verbatim sentence spans."""
from __future__ import annotations

import re

STOPWORDS = set("""a an and are as at be been by can could did do does for from had has have how i if in into is it
its may might more most much of on or our shall should so such than that the their them then there these they
this those to under upon was we were what when where which who whom whose why will with would you your about any
all each per between during please tell me give show list many does did over does there here also""".split())
GENERIC = {"agreem", "docume", "contra", "party", "partie", "clause", "section", "compan", "sample", "usd",
           "thousa", "provid", "need", "say", "state"}
WORD = re.compile(r"[a-z0-9]+")
SENTENCE = re.compile(r"(?:[^.;]|[.;](?=\d))+(?:[.;]|$)")


def stem(word: str) -> str:
    if word.isdigit():
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:6]


def content_words(text: str, drop_generic: bool = True) -> set[str]:
    out = set()
    for w in WORD.findall(text.lower()):
        if w in STOPWORDS or (len(w) < 3 and not w.isdigit()):
            continue
        s = stem(w)
        if drop_generic and s in GENERIC:
            continue
        out.add(s)
    return out


def sentences(text: str) -> list[str]:
    """Sentence-like spans of ``text``, each a verbatim substring (stripped)."""
    spans = []
    for m in SENTENCE.finditer(text):
        s = m.group(0).strip()
        if len(s) >= 12:
            spans.append(s)
    return spans or ([text.strip()] if text.strip() else [])


def best_sentence(text: str, words: set[str]) -> tuple[str, int]:
    """The sentence of ``text`` sharing most content words with ``words`` (ties: the first)."""
    best, best_score = "", -1
    for s in sentences(text):
        score = len(content_words(s) & words)
        if score > best_score:
            best, best_score = s, score
    return best, max(best_score, 0)
