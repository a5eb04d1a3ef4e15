"""Small text helpers shared by the nodes: content words with a crude stem, and verbatim sentence spans."""
from __future__ import annotations

import re

from app.agent.vocabulary import base_forms, number_words, word_lists

STOPWORDS = set("""a an and are as at be been by can could did do does for from had has have how i if in into is it
its may might more most much of on or our shall should so such than that the their them then there these they
this those to under upon was we were what when where which who whom whose why will with would you your about any
all each per between during please tell me give show list many does did over does there here also out""".split())
WORD = re.compile(r"[a-z0-9]+")
FORMS = base_forms()  # irregular forms (app/data/vocabulary.yaml `word_forms`)
SENTENCE = re.compile(r"(?:[^.;]|[.;](?=\d))+(?:[.;]|$)")
NUMBER_WORDS = number_words()  # "twelve" -> 12 (app/data/vocabulary.yaml `number_words`)


def number_word_pattern(low: int = 1, high: int = 10 ** 9) -> str:
    """A regex alternation of the number words of value ``low`` <= v < ``high`` (longest first: "fourteen" before
    "four")."""
    ws = sorted((w for w, v in NUMBER_WORDS.items() if low <= v < high), key=lambda w: (-len(w), w))
    return "|".join(map(re.escape, ws))


def stem(word: str) -> str:
    if word.isdigit():
        return word
    word = FORMS.get(word, word)  # "paid" -> "pay"
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:6]


# stems of words every document has (app/data/vocabulary.yaml `generic_words`)
GENERIC = {stem(w) for w in word_lists("generic_words", ("document_words",))["document_words"]}


def flat(text: str) -> str:
    """Whitespace folded to single spaces (PDF text has line breaks and no-break spaces mid-phrase)."""
    return re.sub(r"\s+", " ", text)


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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of sentence-like spans of ``text``, whitespace trimmed."""
    spans = []
    for m in SENTENCE.finditer(text):
        a, b = m.start(), m.end()
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b - a >= 12:
            spans.append((a, b))
    return spans or ([(0, len(text))] if text.strip() else [])


def sentences(text: str) -> list[str]:
    """Sentence-like spans of ``text``, each a verbatim substring."""
    return [text[a:b].strip() for a, b in sentence_spans(text)]


HEADING_CHARS = 40


def best_sentence(text: str, words: set[str]) -> tuple[str, int]:
    """The sentence of ``text`` sharing most content words with ``words`` (ties: the first). A short,
    heading-like best match is extended by the sentence after it, so the quote carries the clause itself."""
    spans = sentence_spans(text)
    best, best_score = -1, -1
    for i, (a, b) in enumerate(spans):
        score = len(content_words(text[a:b]) & words)
        if score > best_score:
            best, best_score = i, score
    if best < 0:
        return "", 0
    a, b = spans[best]
    if b - a < HEADING_CHARS and best + 1 < len(spans):
        b = spans[best + 1][1]
    return text[a:b].strip(), max(best_score, 0)


SMALL_WORDS = frozenset(("of", "and", "or", "the", "to", "for", "in", "on", "a", "an"))


def heading_like(text: str, max_words: int = 12, closed: bool = True) -> bool:
    """A heading ("2.0 GRANT OF LICENSE 2.1 Non-Exclusive License.", "Liquidity and Capital Resources"): at most
    ``max_words`` words, none of them lower-case but the small ones; ``closed=False``: nor ending as a sentence
    or a clause does (".", ",", ";", ":", ")"), as a line of prose would."""
    words = re.findall(r"[A-Za-z][A-Za-z'’-]*", text)
    if not words or len(words) > max_words or (not closed and text.rstrip()[-1:] in ".,;:)"):
        return False
    return not any(w.islower() and w not in SMALL_WORDS for w in words)
