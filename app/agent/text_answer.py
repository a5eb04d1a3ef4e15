"""Extractive answers to questions over report text: find the sentence that answers, read the span off it.

The embedded model is too small to write reliable free text, so a question over paragraphs ("What was the
hosting cost in 2018?", "Why did the valuation allowance increase?", "What are the contract types?") is
answered by extraction:
1. every sentence of the retrieved passages (prose only; table rows are the BI route's) is scored by the
   question's content words it contains, weighted by rarity within the candidates (IDF), plus the question's
   word pairs in order, the years it names and whether the sentence states what is asked (``text_spans``);
2. the span is read off the best sentences (a figure with its unit and scale, a date, years, a count, a
   duration, the reason after "due to", the listed items, or the sentence itself for a description);
3. the verifier (``verify.verify_text``) must confirm that the quoted sentence contains the span, its figures
   and names, the question's key terms and years; only then is the answer ``supported``. Otherwise None (the
   caller says the documents do not state it).
The answer text is the span itself; the quoted sentence, document and page are its citation.
"""
from __future__ import annotations

import math
import re

from app.agent.text import content_words, heading_like, stem
from app.agent.text_answer_table import row_terms, table_years
from app.agent.text_spans import Ask, _strip, ask_of, extract
from app.agent.text_terms import key_words
from app.agent.state import citation
from app.agent.verify import verify_text
from ingest.sentences import sentence_spans

FIGURE_ASKS = ("amount", "percent", "count", "years")  # asks answered by a figure or years, not by a clause
MAX_PASSAGES = 8
TRY = 4  # best-scoring sentences tried against the verifier
MIN_SENTENCE_WORDS = 5
WORD = re.compile(r"[A-Za-z0-9]+")
CAPTION = re.compile(r"(?:\bas follows|\bbelow|\bfollowing)\s*[:.]?\s*$|:\s*$|\b(?:in|see) the (?:following |accompanying )?"
                     r"tables? below\b|\bthe following tables? (?:shows?|sets? forth|presents?|summari[sz]es?|provides?)\b",
                     re.I)
BULLET = re.compile(r"\s*[•●▪◦■]\s*")


def prose_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of the prose sentences of a passage. A paragraph's lines run together (a PDF breaks a
    sentence across lines); table rows (tab-separated cells, or lines mostly of figures) and paragraph breaks
    end a run; headings and fragments under ``MIN_SENTENCE_WORDS`` words are left out."""
    out = []
    for a, b in _prose_runs(text):
        run = text[a:b]
        for s0, s1 in _bullet_items(run):
            for x, y in sentence_spans(run[s0:s1]):
                if len(WORD.findall(run[s0 + x:s0 + y])) >= MIN_SENTENCE_WORDS:
                    out.append((a + s0 + x, a + s0 + y))
    return out


def _prose_runs(text: str) -> list[tuple[int, int]]:
    runs, start, end, pos = [], None, None, 0
    for line in text.split("\n"):
        a, pos = pos, pos + len(line) + 1
        words = WORD.findall(line)
        if not line.strip() or "\t" in line or (len(words) >= 2 and sum(w.isdigit() for w in words) > 0.6 * len(words)) \
                or heading_like(line, 8, closed=False):
            if start is not None:
                runs.append((start, end))
            start = None
            continue
        start = a if start is None else start
        end = a + len(line)
    if start is not None:
        runs.append((start, end))
    return runs


def _bullet_items(line: str) -> list[tuple[int, int]]:
    """A line cut at its bullets ("Key changes were: • Cost of revenue ... • Research ..."), each item alone."""
    cuts = [0] + [m.end() for m in BULLET.finditer(line)]
    ends = [m.start() for m in BULLET.finditer(line)] + [len(line)]
    return [(a, b) for a, b in zip(cuts, ends) if line[a:b].strip()]


def _stems(text: str) -> list[str]:
    return [stem(w) for w in WORD.findall(text.lower())]


class Candidate:
    __slots__ = ("passage", "rank", "quote", "words", "seq", "score", "span")

    def __init__(self, passage: dict, rank: int, quote: str):
        self.passage, self.rank, self.quote = passage, rank, quote
        self.words = key_words(quote)
        self.seq = _stems(quote)
        self.score, self.span = 0.0, None


NOT_NAMES = set("""what which when why how who where whom whose was were is are did does do the a an in on of for
and or to by from at as total net fiscal fy year years quarter company group companies january february march
april may june july august september october november december q1 q2 q3 q4 ltd inc usd eur gbp gaap
non-gaap million millions billion billions thousand thousands percent""".split())


def question_names(question: str) -> set[str]:
    """Capitalised words of the question past its first word ("Adobe", "3M", "LinkedIn"), lower-cased: what
    names a company or product; not periods, currencies or a line item's common words ("Total Other Assets")."""
    words = re.findall(r"\b[A-Z0-9][A-Za-z0-9&'’.-]*[A-Za-z0-9]|\b[A-Z]\b", question)[1:]
    out = set()
    for w in words:
        w = re.sub(r"['’]s?$", "", w).lower()
        if w in NOT_NAMES or w in COMMON or re.fullmatch(r"(?:fy|q[1-4]|h[12])?'?\d+|[a-z]", w):
            continue
        out.add(w)
    return out


COMMON = set("""revenue revenues sales income expense expenses cost costs assets asset liabilities liability total
other net operating cash tax taxes deferred current non-current equity capital interest depreciation amortization
goodwill profit loss gross margin share shares stock dividend dividends debt property plant equipment inventory
inventories receivable receivables payable payables accrued provision provisions compensation lease leases
investment investments services products segment segments americas emea apac europe""".split())


def candidates(passages: list[dict], names: set[str] = frozenset()) -> list[Candidate]:
    """The prose sentences of the passages; with ``names`` (the question names a company or product and the
    passages come from several documents) only those of a passage whose document or text carries every name."""
    out, seen = [], set()
    for rank, p in enumerate(passages[:MAX_PASSAGES]):
        text = p.get("text") or ""
        if names:
            where = f"{p.get('filename') or ''} {p.get('section') or ''} {text}".lower()
            if not all(n in where for n in names):
                continue
        for a, b in prose_sentences(text):
            quote = text[a:b].strip()
            if quote in seen:
                continue
            seen.add(quote)
            out.append(Candidate(p, rank, quote))
    return out


def idf_weights(key: set[str], cands: list[Candidate]) -> dict[str, float]:
    n = len(cands) or 1
    return {k: math.log(1.0 + n / (1 + sum(k in c.words for c in cands))) for k in key}


def coverage(key: set[str], words: set[str], weights: dict[str, float]) -> float:
    total = sum(weights.get(k, 1.0) for k in key)
    return sum(weights.get(k, 1.0) for k in key & words) / total if total else 0.0


def pairs(question: str) -> list[tuple[str, str]]:
    seq = [s for s in _stems(question) if s in content_words(question)]
    return list(zip(seq, seq[1:]))


def score(ask: Ask, qpairs: list[tuple[str, str]], c: Candidate, weights: dict[str, float]) -> float:
    s = coverage(ask.key, c.words, weights)
    joined = " ".join(c.seq)
    s += 0.12 * min(3, sum(f"{a} {b}" in joined for a, b in qpairs))
    if ask.years:
        s += 0.25 * (sum(y in c.quote for y in ask.years) / len(ask.years))
    if ask.kind == "reason" and re.search(r"\b(?:due to|as a result|attributable|driven by|because|primarily)\b",
                                          c.quote, re.I):
        s += 0.15
    return s - 0.02 * c.rank


def text_answer(question: str, passages: list[dict], full_question: str | None = None,
                kinds: tuple[str, ...] | None = None) -> dict | None:
    """{"answer", "citations", "supported": True, "related": []} from the sentence that answers ``question``,
    verified; None when no sentence of ``passages`` verifiably states it. ``full_question``: the question as
    asked when ``question`` is its de-named form (``scope``), whose dates and years name periods, not documents;
    ``kinds``: the kinds of ask (``text_spans.Ask.kind``) to answer, None for all."""
    ask = ask_of(question)
    if full_question and full_question != question:
        full = ask_of(full_question)
        ask.years, ask.multi = full.years or ask.years, full.multi or ask.multi
    if kinds is not None and ask.kind not in kinds:
        return None
    if not ask.key and ask.kind != "table":
        return None
    several = len({p.get("doc_id") for p in passages[:MAX_PASSAGES]}) > 1
    cands = candidates(passages, question_names(full_question or question) if several else frozenset())
    if not cands:
        return None
    weights = idf_weights(ask.key, cands)
    qpairs = pairs(question)
    for c in cands:
        c.score = score(ask, qpairs, c, weights)
    cands.sort(key=lambda c: -c.score)
    tried = 0
    asks_table = bool(re.search(r"\btables?\b|\bschedule\b", question, re.I))
    for c in cands:
        if ask.kind in ("text", "list", "reason") and not asks_table and CAPTION.search(c.quote):
            continue  # "An analysis of the liability is as follows:": a table's caption describes nothing itself
        span = extract(ask, c.quote)
        if span is None:
            continue  # the sentence does not state what is asked (no figure, no date ...)
        tried += 1
        ok, _why = verify_text(ask, question, span, c.quote, weights)
        if ok:
            found = [(c, span)]
            if ask.kind == "list" and span == _strip(c.quote):  # no items read: the sentences that state them
                found += more_sentences(ask, question, c, cands, weights)
            return {"answer": ". ".join(" ".join(sp.split()) for _, sp in found),
                    "citations": [citation(x.passage, x.quote) for x, _ in found], "supported": True, "related": []}
        if tried >= TRY:
            break
    found = table_years(ask, question, passages[:MAX_PASSAGES])
    if found:
        span, p, quote = found
        row_ask = Ask(ask.kind, ask.years, row_terms(ask), ask.multi, question=ask.question)
        ok, _why = verify_text(row_ask, question, span, quote, weights)
        if ok:
            return {"answer": span, "citations": [citation(p, quote)], "supported": True, "related": []}
    return None


MORE = 2  # further sentences an open list question may quote


def more_sentences(ask: Ask, question: str, first: Candidate, cands: list[Candidate],
                   weights: dict[str, float]) -> list[tuple[Candidate, str]]:
    """Other sentences of the same document and page (or the next) that state a parallel item (four words in a
    row shared near their openings) and verify on their own ("What are the major acquisitions ...": "In fiscal 2022, we
    acquired ..." once per acquisition)."""
    out = []
    page = first.passage.get("page") or 0
    for c in cands:
        if c is first or c.passage.get("doc_id") != first.passage.get("doc_id") \
                or abs((c.passage.get("page") or 0) - page) > 1 or c.score < 0.8 * first.score:
            continue
        if not _opening(c.quote) & _opening(first.quote):
            continue  # not a parallel item ("In fiscal 2022, we acquired ..." in both openings)
        span = extract(ask, c.quote)
        if span is None or span != _strip(c.quote) or any(span == sp for _, sp in out):
            continue
        if verify_text(ask, question, span, c.quote, weights)[0]:
            out.append((c, span))
        if len(out) >= MORE:
            break
    return out


def _opening(sentence: str) -> set[tuple[str, ...]]:
    """The word 4-grams of a sentence's first 15 words (a heading before it may differ)."""
    w = WORD.findall(sentence.lower())[:15]
    return {tuple(w[i:i + 4]) for i in range(len(w) - 3)}
