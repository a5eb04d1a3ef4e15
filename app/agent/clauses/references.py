"""A text that speaks of what is asked only by referring back to it: "the license granted to IntriCon under this
Agreement will be exclusive" names the license, but the grant is stated elsewhere. Such a sentence answers a
question about how the license is held ("can the license be transferred?" when it says "transferable"), not one
that asks for the grant itself. A capitalised word outside the back-references counts only where the question says
that very word ("Right to Audit"): else it is a name ("personal to Licensee"), and a name is not the thing asked.

A back-reference is a noun, at most one word, a participle and, within a few words, an anchor that points to
another place ("granted ... under this Agreement", "set forth in Section 2", "provided hereunder"). The
participles and anchors are data (``app/data/vocabulary.yaml`` ``back_references``). The verifier gates a clause
answer whose span states the question's words only inside back-references (``app.agent.verifier``).
"""
from __future__ import annotations

import re

from app.agent.clauses.taxonomy import asked_words, stems
from app.agent.vocabulary import phrase_pattern, word_lists

_WORDS = word_lists("back_references", ("participles", "anchors"))  # data: app/data/vocabulary.yaml
BACK_REFERENCE = re.compile(rf"\b[A-Za-z][\w-]*\s+(?:[A-Za-z][\w-]*\s+)?{phrase_pattern(_WORDS['participles'])}"
                            rf"(?:\s+[^\s.;:]+){{0,6}}?\s+{phrase_pattern(_WORDS['anchors'])}", re.I)


def _plain(word: str) -> str:
    return word.lower().rstrip("s")


def _said(question: str, text: str) -> str:
    """``text`` without the capitalised words the question does not say as such: names ("Licensee" is a party, not
    the license asked about), where a heading's "Right to Audit" says "audit"."""
    words = {_plain(w) for w in re.findall(r"[A-Za-z][\w-]*", question)}
    return re.sub(r"\b[A-Z][\w-]*", lambda m: m.group(0) if _plain(m.group(0)) in words else " ", text)


def back_references(text: str) -> list[re.Match]:
    return list(BACK_REFERENCE.finditer(text))


def referred_only(question: str, span: str) -> str:
    """The first back-reference of ``span`` when every word of the question the span says stands inside one ("the
    license granted ... under this Agreement" for "does the contract contain a license granted by one party?"),
    else ""."""
    refs = back_references(span)
    if not refs:
        return ""
    asked = asked_words(question)
    if not asked & set(stems(span)):
        return ""
    rest, last = [], 0
    for m in refs:
        rest.append(span[last:m.start()])
        last = m.end()
    rest.append(span[last:])
    if asked & set(stems(_said(question, " ".join(rest)))):
        return ""
    return refs[0].group(0)
