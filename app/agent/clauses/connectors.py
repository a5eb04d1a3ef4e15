"""Terms and connectors: the search syntax lawyers write (Westlaw, Lexis), read as data by one matcher.

A clause kind says how a clause states itself (``states``) and what says a text is not that clause
(``not_this``) in this syntax, so a new kind, or a firm's own wording of an old one, is a data entry:

    words           whole words, case folded; ``!`` after a word matches any ending (``terminat!``: terminate,
                    terminated, termination); ``*`` before one any beginning (``*s``: a word ending in s);
                    ``NUM`` matches a number (30, thirty, (30))
    (a|b)  [a]      one of; optional (``app.agent.vocabulary.expand_phrase``)
    A +N B          B begins within N words after A ends
    A /N B          A and B within N words of each other, either order
    A /s B          A and B in the same sentence
    ^ A             A is the sentence's first word(s)
    A $             A is the sentence's last word(s) ("what is fair value based on?": ``based on $``)

Words are ``app.agent.text.WORD``'s (letters and digits: "thirty-day" is "thirty day", "1,000" is "1 000"),
except ``non-``: "non-exclusive" is the word "nonexclusive", never "exclusive". A "sentence" ends where
``ingest.sentences`` ends one (not after "Inc.") or at a semicolon: a connector never reaches across one.
Connectors chain left to right: each joins the span matched so far to the next term.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from app.agent.text import NUMBER_WORDS, WORD
from app.agent.vocabulary import expand_phrase
from ingest.sentences import sentence_spans

NON = re.compile(r"\bnon[-\u2011\s]+(?=[a-z])")
CONNECTOR = re.compile(r"^(?:\+(\d+)|/(\d+)|/s)$")
SEMICOLON = re.compile(r";(?=\s|$)")
MAX_TERMS = 8


class ConnectorError(ValueError):
    """A terms-and-connectors expression is malformed (the message quotes it)."""


def words(text: str) -> list[str]:
    """The lower-case words of ``text`` as the matcher sees them (``text.WORD``'s, "non-" joined to its word)."""
    return WORD.findall(NON.sub("non", text.lower()))


def sentences(text: str) -> tuple["Sentence", ...]:
    """Each sentence of ``text`` (``ingest.sentences``: "Inc." ends none), split at semicolons too; a sentence keeps
    the verdicts of the expressions read on it (no module-level memo: document text is not kept between calls)."""
    return tuple(Sentence(ws) for a, b in sentence_spans(text) for part in SEMICOLON.split(text[a:b])
                 if (ws := words(part)))


def _word_matches(pattern: str, word: str) -> bool:
    if pattern == "NUM":
        return word.replace(",", "").isdigit() or word in NUMBER_WORDS
    if pattern.endswith("!"):
        return word.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return len(word) >= len(pattern) and word.endswith(pattern[1:])
    return word == pattern


class Sentence:
    """One sentence's words, with where each word stands (a term looks up its first word instead of reading all)
    and the verdicts of the expressions already read on it."""

    __slots__ = ("words", "at", "seen")

    def __init__(self, ws: list[str]):
        self.words = ws
        self.at: dict[str, list[int]] = {}
        for i, w in enumerate(ws):
            self.at.setdefault(w, []).append(i)
        self.seen: dict[str, bool] = {}

    def starts(self, pattern: str) -> list[int]:
        """Positions of the words ``pattern`` matches."""
        if pattern != "NUM" and not pattern.endswith("!") and not pattern.startswith("*"):
            return self.at.get(pattern, [])
        return sorted(i for w, where in self.at.items() if _word_matches(pattern, w) for i in where)


@dataclass(frozen=True)
class Term:
    alternatives: tuple[tuple[str, ...], ...]  # each a phrase: pattern words in a row

    def spans(self, sent: Sentence) -> list[tuple[int, int]]:
        """(start, end) of every place a phrase of this term matches ``sent`` (end exclusive)."""
        out, ws = [], sent.words
        for phrase in self.alternatives:
            n = len(phrase)
            for i in sent.starts(phrase[0]):
                if i + n <= len(ws) and all(_word_matches(p, ws[i + k]) for k, p in enumerate(phrase[1:], 1)):
                    out.append((i, i + n))
        return out


@dataclass(frozen=True)
class Expression:
    text: str
    terms: tuple[Term, ...]
    connectors: tuple[tuple[str, int], ...]  # between terms i and i+1: ("+", n) | ("/", n) | ("s", 0)
    anchored: bool = False  # "^": the first term starts the sentence
    ends: bool = False  # "$": the match ends the sentence

    def search(self, text: str) -> bool:
        """Whether ``text`` has a sentence this expression matches."""
        return any(self.matches(sent) for sent in sentences(text))

    def matches(self, sent: Sentence) -> bool:
        found = sent.seen.get(self.text)
        if found is None:
            found = sent.seen[self.text] = self._matches(sent)
        return found

    def _matches(self, sent: Sentence) -> bool:
        spans = [s for s in self.terms[0].spans(sent) if s[0] == 0 or not self.anchored]
        for (kind, n), term in zip(self.connectors, self.terms[1:]):
            if not spans:
                return False
            nxt = term.spans(sent)
            joined = set()
            for a0, a1 in spans:
                for b0, b1 in nxt:
                    if kind == "+" and 0 <= b0 - a1 <= n:
                        joined.add((a0, b1))
                    elif kind == "/" and (0 <= b0 - a1 <= n or 0 <= a0 - b1 <= n):
                        joined.add((min(a0, b0), max(a1, b1)))
                    elif kind == "s" and (b0 >= a1 or a0 >= b1):
                        joined.add((min(a0, b0), max(a1, b1)))
            spans = list(joined)
        return any(b == len(sent.words) for _a, b in spans) if self.ends else bool(spans)


def _split(expr: str) -> list[str]:
    """Top-level tokens of ``expr``: connector tokens apart, parentheses and brackets kept whole."""
    parts, depth, cur = [], 0, []
    for tok in expr.split():
        depth += tok.count("(") + tok.count("[") - tok.count(")") - tok.count("]")
        if depth == 0 and CONNECTOR.match(tok):
            if not cur:
                raise ConnectorError(f"{expr!r}: a connector needs a term on each side")
            parts.extend([" ".join(cur), tok])
            cur = []
        else:
            cur.append(tok)
        if depth < 0:
            raise ConnectorError(f"unbalanced brackets in {expr!r}")
    if depth:
        raise ConnectorError(f"unbalanced brackets in {expr!r}")
    if not cur:
        raise ConnectorError(f"{expr!r}: a connector needs a term on each side")
    parts.append(" ".join(cur))
    return parts


def _term(text: str, expr: str) -> Term:
    try:
        plain = expand_phrase(text)
    except ValueError as exc:
        raise ConnectorError(f"{expr!r}: {exc}") from exc
    alts = [ws for p in plain if (ws := tuple(_pattern_words(p)))]  # words lower-cased, NUM kept
    if not alts:
        raise ConnectorError(f"{expr!r}: the term {text!r} has no word")
    return Term(tuple(dict.fromkeys(alts)))


def _pattern_words(phrase: str) -> list[str]:
    out = []
    for w in phrase.split():
        if w == "NUM":
            out.append(w)
            continue
        if w.startswith("*") and w[1:].isalnum():
            out.append(w.lower())
            continue
        bang = w.endswith("!")
        parts = words(w.rstrip("!"))
        if bang and parts:
            parts[-1] += "!"
        out.extend(parts)
    return out


@lru_cache(maxsize=4096)
def compile_expression(expr: str) -> Expression:
    """The matcher for one expression; ``ConnectorError`` says what is wrong with it."""
    if not isinstance(expr, str) or not expr.strip():
        raise ConnectorError("an empty expression")
    body = " ".join(expr.split())
    anchored, ends = body.startswith("^ "), body.endswith(" $")
    inner = body[2 if anchored else 0:len(body) - 2 if ends else len(body)]
    terms, conns = [], []
    for part in _split(inner):  # terms and connectors alternate, a term first and last
        m = CONNECTOR.match(part)
        if m:
            conns.append(("+", int(m.group(1))) if m.group(1) else ("/", int(m.group(2))) if m.group(2) else ("s", 0))
        else:
            terms.append(_term(part, expr))
    if len(terms) > MAX_TERMS:
        raise ConnectorError(f"{expr!r}: more than {MAX_TERMS} terms")
    return Expression(body, tuple(terms), tuple(conns), anchored, ends)
