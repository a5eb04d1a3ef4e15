"""What a filing is about: "What was the key agenda of the 8-K filing dated 1st July 2022?".

A current report (8-K) states its subject itself: each event is an "Item N.NN <title>" heading (Item 8.01 Other
Events, Item 2.01 Completion of Acquisition ...) followed by the paragraph that reports it; Item 9.01 only lists
exhibits. The answer is the first reporting item's heading and its opening sentence, quoted verbatim (the
passage's text from the heading to the end of that sentence, or of the passage when the sentence runs on),
cited with its page. It is ``supported``: the filing's own item heading says what it reports.
"""
from __future__ import annotations

import re

ASKS_SUBJECT = re.compile(
    r"\b(?:agenda|purpose|subject|gist|topic|summary|main points?|highlights?)\b[^?]{0,60}?\b(?:filing|8-?k|current report|"
    r"form|report|release|announcement)\b|\bwhat (?:is|was|does|did) (?:the |this |its |their )?(?:\w+['’]s )?"
    r"(?:8-?k|filing|current report)\b[^?]{0,60}\b(?:about|report|announce|disclose|cover)", re.I)
ITEM = re.compile(r"\bItem\s+(\d{1,2}\.\d{2})\.?\s+([A-Z][^\n]{2,120})")
NOT_EVENTS = {"9.01"}  # financial statements and exhibits: a list, not the subject
MAX_QUOTE = 1200


def asks_subject(question: str) -> bool:
    return bool(ASKS_SUBJECT.search(question))


def subject_answer(passages: list[dict]) -> dict | None:
    """{"answer", "citations", "supported", "related"} from the first reporting item of the passages' filing
    (earliest page first), or None when no passage carries an item heading followed by its text."""
    from app.agent.state import citation
    from app.agent.text_answer import prose_sentences

    found = []
    for rank, p in enumerate(passages):
        text = p.get("text") or ""
        for m in ITEM.finditer(text):
            if m.group(1) in NOT_EVENTS:
                continue
            rest = text[m.end():]
            sents = prose_sentences(rest)
            if not sents:
                continue
            a, b = sents[0]
            end = m.end() + b
            quote = text[m.start():min(end, m.start() + MAX_QUOTE)].strip()
            found.append((p.get("page") or 0, m.start(), rank, p, quote, m.group(0).strip().rstrip(".")))
            break
    if not found:
        return None
    _page, _pos, _rank, p, quote, heading = min(found, key=lambda f: (f[0], f[1], f[2]))
    body = " ".join(quote[len(heading):].lstrip(". \n").split())
    return {"answer": f"{heading}: {body}", "citations": [citation(p, quote)], "supported": True, "related": []}
