"""A contract's own definitions: where a quoted, capitalised term (the "Effective Date", "Territory") is defined
and whether a question names it. The finder brings a unit that defines the term asked about to the front, and the
verifier counts a span that defines it as evidence: a contract says what its own term means there, whether a
date, an event or a place."""
from __future__ import annotations

import re

from app.agent.clauses.taxonomy import asked_words, stems
from app.agent.vocabulary import phrase_pattern, word_lists
from ingest.sentences import sentence_spans

DEFINED_TERM = re.compile(r"[\u201c\"]([A-Z][A-Za-z0-9\-' ]{1,40})[\u201d\"]")  # a quoted capitalised term
# a definition that only points elsewhere ("has the meaning given in Section 3.1", "the date first written
# above") says nothing itself: the answer is where it points
CROSS_REFERENCE = re.compile(r"\b(?:ha(?:s|ve)|shall\s+have)\s+the\s+meanings?\b|\bas\s+defined\s+in\b|"
                             r"\b(?:first\s+)?(?:written|set\s+forth|stated)\s+(?:above|below)\b|\babove[\s-]+written\b",
                             re.I)


# a term being defined, not used: "(the “Effective Date”)", "(hereinafter referred to as “Licensee”)", "each a
# “Party” and together the “Parties”" (the words that introduce it are data),
# "“Territory” means", and a term that opens its sentence or item and is said to be something ("(b) “Effective
# Date” shall be ..."); "shall become effective upon the “Effective Date”" uses it
_INTRODUCERS = phrase_pattern(word_lists("definitions", ("introducers",))["introducers"])  # data: vocabulary.yaml
DEFINED_BEFORE = re.compile(rf"(?:\(\s*(?:{_INTRODUCERS}\s+)?|{_INTRODUCERS}\s+)(?:as\s+)?(?:the\s+|an?\s+)?"
                            r"[\"\u201c\u201d']\s*$", re.I)
MEANS_AFTER = re.compile(r"^\s*[\"\u201c\u201d']?\s*(?:means|shall\s+mean|is\s+defined|refers\s+to|shall\s+refer\s+to)\b",
                         re.I)
OPENS_BEFORE = re.compile(r"(?:^|[\n.;:]\s*)(?:\(?[a-z0-9]{1,3}[.)]\s*)?[\"\u201c\u201d']\s*$", re.I)
IS_AFTER = re.compile(r"^\s*[\"\u201c\u201d']?\s*(?:is|shall\s+be|:)", re.I)


def defined_at(text: str, start: int, end: int) -> bool:
    """The term ``text[start:end]`` (inside its quotes) is being defined there, not used."""
    before, after = text[:start], text[end:]
    if DEFINED_BEFORE.search(before) or MEANS_AFTER.match(after):
        return True
    return bool(OPENS_BEFORE.search(before) and IS_AFTER.match(after))


def named_terms(question: str, text: str) -> list[str]:
    """The quoted terms ``text`` defines (``defined_at``) that the question names: every content word of the term
    is a word of the question, and the term carries two of its words or half of them ("Effective Date" for "when
    does it become effective?", "Territory" for "what is the territory?", not "License" for "what license is
    granted and by whom?")."""
    asked = asked_words(question)
    out = []
    for m in DEFINED_TERM.finditer(text):
        term = set(stems(m.group(1)))
        if term and term <= asked and (len(term) >= 2 or 2 * len(term) >= len(asked)) and defined_at(
                text, m.start(1), m.end(1)):
            out.append(m.group(1))
    return out


def defines(question: str, span: str) -> bool:
    """The span defines a term the question names, and not only by pointing elsewhere."""
    return bool(named_terms(question, span)) and not CROSS_REFERENCE.search(span)


def defining_sentence(question: str, text: str) -> str:
    """The first sentence of ``text`` that defines a term the question names, or ""."""
    if not named_terms(question, text):
        return ""
    for a, b in sentence_spans(text):
        if defines(question, text[a:b]):
            return text[a:b].strip()
    return ""
