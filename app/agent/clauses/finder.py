"""One general mechanism that finds a clause of any kind, or what a question of no known kind asks.

``find_units(kbt, query, kind, doc_ids, k)``:
1. the documents: those given (when a few), else the documents of the best search hits;
2. dense + sparse search over them with the question's asking part and, for a known kind, the kind's
   description and wordings as query expansions (sparse: its names, headings and wordings); a chunk's rank
   is carried to the clause unit that holds it;
3. every clause unit of those documents (``clauses.units``: numbered sections with their sub-clauses, whole)
   is scored by the fusion of
   - its best search rank,
   - wording similarity: how much of one of the kind's wordings (or the question's own words) a single
     sentence of the unit states, and how much of the kind's vocabulary the unit carries (IDF-weighted over
     the units of the documents read, BM25 length-saturated); a question of no known kind about agreements
     reads a unit's word of a synonym group as the question's word of that group (``synonym_folds``, data:
     ``vocabulary.yaml contract_synonyms``), each weighed by its own rarity,
   - heading match: the kind's name, synonyms or heading words (else the question's words) in the unit's
     heading path or first line,
   - the answer slot (data: a date, a duration, an amount, a jurisdiction, the parties) stated in a sentence
     that reads like the kind,
   - for an answer that states parties or a date: the opening of the document (its first characters, however
     many small units such as an exhibit label it starts with);
   - for an answer that is a value (a date, a duration, ...): a definition of a term the question names (the
     "Effective Date" for "when does it become effective?"), whose defining sentence becomes the unit's quote (any other definition weighs less: it names a clause
     without being it);
4. for a question of no known kind, the embedder re-reads the best few units of agreements (documents whose
   parties ingest read) sentence by sentence: the best
   sentence's cosine with the asking part (``dense``) is added to the score, so a clause that states what is
   asked in other words outranks one that only shares a word;
5. each unit returned carries its best sentence(s) as ``quote``; for a question of no known kind, a unit of an
   agreement carries them as ``answer_quote`` too, which the rag route quotes (on CUAD-dev it held the gold
   clause's words more often than a second read of the unit by the question's words). A known kind's clause is
   quoted by the route's clause candidates (with the pick on their fallback passages too, CUAD-dev lost 8 right
   answers and gained 4), and a filing's answer is mostly in a table: those units carry no ``answer_quote``.

Nothing here names a kind: every kind, built-in or a tenant's, is found the same way from its data.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Optional

from app.agent.clauses.definitions import defining_sentence
from app.agent.clauses.taxonomy import ClauseKind, stems
from app.agent.clauses.units import Unit, document_units
from app.agent.quotes import quote_spans as _spans
from app.agent.scope import agreements_of
from app.agent.text import heading_like
from app.agent.verify import has_slot
from app.agent.vocabulary import word_lists

SEARCH_K = 30
SCAN_MAX_DOCS = 5  # score every unit of the documents in scope when there are at most this many
OPEN_DOCS = 3  # without a small scope: the documents of the best hits read unit by unit
W_RANK, W_LEX, W_WORD, W_HEAD, W_OPEN, W_SLOT = 1.0, 3.2, 0.3, 0.3, 1.2, 1.0  # fitted on the first 60 CUAD-dev contracts
W_DENSE = 6.0  # no known kind: the embedder's best sentence cosine with the asking part (_dense; fitted on half
# 0 of 181 CUAD-dev questions asked with kinds off: recall@1 0.59 -> 0.65 there, 0.56 -> 0.63 on the other half)
DENSE_TOP = 8  # units the embedder re-reads (the best by the other parts; 12 gained nothing more)
DENSE_SENTENCES = 24  # sentences of one unit it reads at most (a long schedule costs no more than this)
DENSE_CHARS = 400  # of one sentence
W_DEF = 1.0  # a unit that defines the term the question names (the "Effective Date"): the contract's own answer
DEFINITION = re.compile(r"^\W*(?:\(?[a-z0-9]{1,4}[.)]\s*)?[\"\u201c][^\"\u201d]{1,60}[\"\u201d]\s*(?:shall\s+)?"
                        r"(?:means?|has the meaning|refers?)\b", re.I)
OPENING_CHARS = 1500  # a unit starting within this many characters of the document's text is its opening
MAX_QUOTE = 1200


def _rank_score(rank: int) -> float:
    return 1.0 / (1.0 + rank / 4.0)


class _Profile:
    """What a unit is compared with: phrases (the kind's wordings, or the question) and vocabulary, IDF-weighted."""

    def __init__(self, kind: Optional[ClauseKind], query: str, units: list[Unit], fold: Optional[dict] = None):
        self.fold = fold or {}
        asked = self.stems(query)
        if kind is not None:
            self.phrases = [stems(w) for w in kind.wordings] + [stems(kind.description)]
            self.vocab = kind.profile() | set(asked)
            self.heads = [p for p, _w in kind.phrases()]
        else:
            self.phrases = [asked] if asked else []
            self.vocab = set(asked)
            self.heads = [asked] if asked else []
        self.phrases = [p for p in self.phrases if p]
        n = len(units) or 1
        # a word's rarity is its own (with ``fold``, "payment" is not as common as all the fee words together)
        df = Counter(t for u in units for t in set(u.tokens))
        self.idf = {t: math.log(1.0 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in self.vocab}
        for p in self.phrases + self.heads:
            for t in p:
                self.idf.setdefault(t, math.log(1.0 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)))
        self.avg_len = sum(len(u.tokens) for u in units) / n if units else 1.0

    def stems(self, text: str) -> list[str]:
        """``text``'s content-word stems, a word of a synonym group read as its group's word (``fold``)."""
        return [self.fold.get(t, t) for t in stems(text)] if self.fold else stems(text)

    def weight(self, terms) -> float:
        return sum(self.idf.get(t, 0.0) for t in terms)

    def coverage(self, phrase: list[str], words: set[str]) -> float:
        total = self.weight(set(phrase))
        return self.weight(set(phrase) & words) / total if total else 0.0

    def lexical(self, unit: Unit) -> float:
        """BM25 of the unit for the vocabulary, over the vocabulary's total IDF (0..1)."""
        tf = Counter(self.fold.get(t, t) for t in unit.tokens) if self.fold else Counter(unit.tokens)
        norm = 1.2 * (0.25 + 0.75 * len(unit.tokens) / (self.avg_len or 1.0))
        got = sum(self.idf[t] * tf[t] / (tf[t] + norm) for t in self.vocab if tf.get(t))
        total = self.weight(self.vocab)
        return got / total if total else 0.0

    def sentence(self, words: set[str]) -> float:
        """The best coverage of one phrase by a sentence's words (0..1); a phrase met by one or two of its
        words counts a third or two thirds (a lone "dated" or "term" is not the wording)."""
        best = 0.0
        for p in self.phrases:
            got = set(p) & words
            best = max(best, self.coverage(p, words) * min(1.0, len(got) / 3))
        return best

    def heading(self, text: str) -> float:
        words = self.stems(text)
        best = 0.0
        for p in self.heads:
            if _in_order(words, p):
                return 1.0
            best = max(best, 0.5 * self.coverage(p, set(words)))
        return best


def _in_order(words: list[str], phrase: list[str]) -> bool:
    n = len(phrase)
    return any(words[i:i + n] == phrase for i in range(len(words) - n + 1))


def _best_sentences(unit: Unit, prof: _Profile, slot: str) -> tuple[float, float, str]:
    """(wording score, slot score, the best sentence or two adjacent ones) of a unit. The slot score: 1 when a
    sentence that reads like the kind states what an answer must (a date, a duration, ...), 0.5 when only
    another sentence of the unit does."""
    spans = unit.spans
    if not spans:
        return 0.0, 0.0, unit.text.strip()
    scored, slot_score = [], 0.0
    for i, (a, b) in enumerate(spans):
        words = set(prof.stems(unit.text[a:b]))
        word = prof.sentence(words)
        filled = bool(slot) and has_slot(slot, unit.text[a:b])
        if filled:
            slot_score = max(slot_score, 1.0 if word >= 0.3 else 0.5)
        scored.append((word + 0.5 * prof.coverage(list(prof.vocab), words) + 0.5 * filled, i))

    def pair(i: int) -> tuple[int, int]:  # the i-th sentence and the next where that reads nearly as well
        a, b = spans[i]
        if i + 1 < len(spans) and scored[i + 1][0] >= 0.75 * scored[i][0] and spans[i + 1][1] - a <= MAX_QUOTE:
            b = spans[i + 1][1]
        return a, b

    a, b = pair(max(scored, key=lambda x: (x[0], -x[1]))[1])
    word = min(1.0, prof.sentence(set(prof.stems(unit.text[a:b]))))
    body = [x for x in scored if not heading_like(unit.text[spans[x[1]][0]:spans[x[1]][1]])]
    a, b = pair(max(body or scored, key=lambda x: (x[0], -x[1]))[1])  # a heading names the clause; not the quote
    return word, slot_score, unit.text[a:b].strip()


def _documents(kbt, query: str, doc_ids: Optional[list[str]], hits: list) -> list[str]:
    if doc_ids and len(doc_ids) <= SCAN_MAX_DOCS:
        return list(doc_ids)
    return list(dict.fromkeys(p.doc_id for p in hits))[:OPEN_DOCS]


def _searches(kbt, query: str, kind: Optional[ClauseKind], docs: Optional[list[str]]):
    """[(passages best first)] for the asking part and, for a kind, its description and wordings."""
    out = [kbt.search(query, k=SEARCH_K, doc_ids=docs)] if query.strip() else []
    if kind is not None:
        out.append(kbt.search(kind.query(), k=SEARCH_K, doc_ids=docs, sparse_query=kind.sparse_query()))
        out.append(kbt.search(f"{kind.name}. {kind.description} {query}", k=SEARCH_K, doc_ids=docs))
    return out


def find_units(kbt, query: str, kind: Optional[ClauseKind] = None, doc_ids: Optional[list[str]] = None,
               k: int = 6, agreements: Optional[frozenset[str]] = None) -> list[Unit]:
    """Clause units best first (whole numbered sections with their sub-clauses), each with a fused ``score``,
    its score's ``parts`` and its best sentence(s) as ``quote`` (also as ``answer_quote`` where step 5 says).
    ``agreements``: the documents whose opening names parties, as the question's scope read them (read here
    when not given)."""
    scope = list(doc_ids) if doc_ids else None
    searches = _searches(kbt, query, kind, scope)
    docs = _documents(kbt, query, scope, [p for s in searches for p in s])
    if scope is None and docs:  # the best documents found: search them again, unit by unit
        searches = _searches(kbt, query, kind, docs)
    units = [u for d in docs for u in document_units(kbt.document_passages(d))]
    if not units:
        return []
    if kind is None and agreements is None:
        agreements = _agreements(kbt, docs)
    # a question of no known kind about agreements only: contract words in other words count as its words
    fold = synonym_folds() if kind is None and agreements is not None and set(docs) <= agreements else {}
    for u in units:
        u.tokens, u.spans = stems(u.text), _spans(u.text, headings=False)  # its own words (the profile folds)
    by_chunk = {cid: u for u in units for cid in u.chunk_ids}
    rank: dict[int, float] = {}
    for hits in searches:
        seen: set[int] = set()
        for r, p in enumerate(hits):
            u = by_chunk.get(p.chunk_id)
            if u is None or id(u) in seen:
                continue
            seen.add(id(u))
            rank[id(u)] = rank.get(id(u), 0.0) + _rank_score(r) / len(searches)
    prof = _Profile(kind, query, units, fold)
    slot = kind.answer if kind is not None and kind.answer != "clause" else ""
    for u in units:
        word, filled, quote = _best_sentences(u, prof, slot)
        parts = {"rank": rank.get(id(u), 0.0), "lexical": prof.lexical(u), "wording": word, "slot": filled,
                 "heading": max(prof.heading(u.heading), prof.heading(u.text[:100]))}
        if kind is not None and kind.answer in ("parties", "date"):
            parts["opening"] = 1.0 if u.offset < OPENING_CHARS else 0.5 if u.offset < 3 * OPENING_CHARS else 0.0
        defining = defining_sentence(query, u.text)[:MAX_QUOTE] if slot else ""  # a value the term defines
        if defining:
            parts["defines"], quote = 1.0, defining
        s = (W_RANK * parts["rank"] + W_LEX * parts["lexical"] + W_WORD * parts["wording"]
             + W_HEAD * parts["heading"] + W_OPEN * parts.get("opening", 0.0) + W_SLOT * filled
             + W_DEF * parts.get("defines", 0.0))
        if DEFINITION.search(u.text[:200]) and not parts.get("opening") and not defining:
            parts["definition"] = 1.0
            s *= 0.7  # a definition names the clause without being it
        u.score, u.quote, u.parts = float(s), quote, parts
    units.sort(key=lambda u: (-u.score, u.position))
    if kind is not None:
        agreements = frozenset()
    if kind is None and query.strip():
        _dense(kbt.embedder, query, [u for u in units if u.doc_id in agreements][:DENSE_TOP])
        units.sort(key=lambda u: (-u.score, u.position))
    for u in units[:k]:  # the pick is measured for a question of no known kind about an agreement (step 5)
        u.answer_quote = u.quote if u.doc_id in agreements else ""
    return units[:k]


@lru_cache(maxsize=1)
def synonym_folds() -> dict[str, str]:
    """stem -> its group's stem, for the single words of ``vocabulary.yaml contract_synonyms`` (read once: the file
    is code-side data)."""
    out: dict[str, str] = {}
    for group in word_lists("contract_synonyms").values():
        words = [stems(w) for w in group]
        head = next((w[0] for w in words if w), None)
        for w in words:
            if len(w) == 1 and head is not None:
                out.setdefault(w[0], head)
    return out


def _agreements(kbt, docs: list[str]) -> frozenset[str]:
    """The documents that name their parties (read at ingest): agreements, whose clauses state in prose what a
    question asks. A filing's answer is mostly in a table, which no sentence states: on FinanceBench-dev the
    sentence re-read put the evidence page lower (recall@5 0.47 -> 0.42), so it reads agreements only."""
    return agreements_of(kbt.facts(docs)) if docs else frozenset()


def _dense(embedder, query: str, units: list[Unit]) -> None:
    """A question of no known kind has no wordings to match, only its own words, and a clause often states what
    is asked in other words ("may not assign" for "can the rights be transferred?"). The embedder reads every
    sentence of the best units: a unit's ``dense`` part is its best sentence's cosine with the asking part, and
    adds ``W_DENSE`` times that to its score."""
    if embedder is None or not units:
        return
    spans = [u.spans[:DENSE_SENTENCES] or [(0, len(u.text))] for u in units]
    texts = [u.text[a:b].strip()[:DENSE_CHARS] for u, ss in zip(units, spans) for a, b in ss]
    vecs = embedder.encode([query] + texts)
    cos = vecs[1:] @ vecs[0]
    i = 0
    for u, ss in zip(units, spans):
        best = float(cos[i:i + len(ss)].max())
        u.parts["dense"] = best
        u.score += W_DENSE * best
        i += len(ss)
