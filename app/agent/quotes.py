"""Whole-sentence quotes: the sentence(s) of a passage that answer a question, verbatim.

Sentences come from ``ingest.sentences`` (abbreviation-aware, so "U.S." or "Inc." never ends a quote). A
heading-only sentence ("14.1 Governing Law.") is joined to the sentence after it, so a quote is never a
heading alone.
"""
from __future__ import annotations

from app.agent.text import content_words, heading_like
from ingest.sentences import sentence_spans

MIN_SENTENCE = 40  # shorter sentences (headings, "Terms:") are joined to the next one
MAX_QUOTE = 1200


def quote_spans(text: str, headings: bool = True) -> list[tuple[int, int]]:
    """Sentence spans with short and lead-in fragments merged into the sentence that follows, and heading-like
    ones too where ``headings``."""
    spans = sentence_spans(text)
    out: list[tuple[int, int]] = []
    carry: int | None = None
    for a, b in spans:
        start = a if carry is None else carry
        frag = text[a:b]
        joined = b - a < MIN_SENTENCE or frag.rstrip().endswith(":") or (headings and heading_like(frag))
        if joined and (a, b) != spans[-1]:
            carry = start
            continue
        out.append((start, b))
        carry = None
    if carry is not None:
        out.append((carry, spans[-1][1]))
    return out


def sentence_score(sentence: str, kind, qwords: set[str]) -> float:
    """The share of the question's words ``sentence`` uses and, for a clause ``kind`` (a taxonomy
    ``ClauseKind``), how much it reads like the clause, one more where it states it."""
    words = content_words(sentence)
    score = len(words & qwords) / (len(qwords) or 1)
    if kind is not None:
        score += kind.quote_score(sentence)
    return score


def candidate_quotes(text: str, kind, question_words: set[str], top: int = 3,
                     min_score: float = 0.0) -> list[str]:
    """The best sentence windows of ``text`` (one sentence, or two when they score better together), best first."""
    spans = quote_spans(text)
    scored = []
    for i, (a, b) in enumerate(spans):
        s = sentence_score(text[a:b], kind, question_words)
        scored.append((s, i, a, b))
        if i + 1 < len(spans):
            a2, b2 = a, spans[i + 1][1]
            s2 = sentence_score(text[a2:b2], kind, question_words)
            if s2 > s + 0.5 and b2 - a2 <= MAX_QUOTE:
                scored.append((s2 - 0.25, i, a2, b2))
    scored.sort(key=lambda x: (-x[0], x[1]))
    out, seen = [], set()
    for s, _, a, b in scored:
        q = text[a:b].strip()
        if s <= min_score or q in seen:
            continue
        seen.add(q)
        out.append(q)  # whole sentences, however long
        if len(out) >= top:
            break
    return out

