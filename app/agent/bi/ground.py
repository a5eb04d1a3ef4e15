"""Grounding: the question's words matched to a table's row labels (lexical match with financial synonyms,
plus dense similarity of the all-MiniLM-L6-v2 embeddings) and its periods to the table's columns."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from app.agent.bi.periods import Period
from app.agent.bi.question import ParsedQuestion, entity_text
from app.agent.bi.table import Col, Row, TableView
from app.agent.text import WORD, content_words
from app.agent.vocabulary import word_lists

# groups of interchangeable names of line items and item kinds (data: app/data/vocabulary.yaml `synonyms`)
SYNONYMS = list(word_lists("synonyms").values())
_SYN = [[(p, content_words(p)) for p in group] for group in SYNONYMS]


def _has(text_low: str, words: set[str], phrase: str, ws: set[str]) -> bool:
    if "&" in phrase or len(ws) == 0:
        return bool(re.search(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])", text_low))
    return ws <= words


def _inside_other_names(text_low: str) -> set[int]:
    """Synonym groups the text names only inside a longer name of another group ("sales" in "cost of sales" is
    not revenue)."""
    norm = " " + " ".join(WORD.findall(text_low)) + " "
    spans: list[tuple[int, int, int]] = []
    for gi, group in enumerate(SYNONYMS):
        for p in group:
            needle = " " + " ".join(WORD.findall(p)) + " "
            if needle.strip():
                spans += [(m.start(), m.start() + len(needle), gi) for m in re.finditer(re.escape(needle), norm)]
    out = set()
    for gi in {g for _, _, g in spans}:
        own = [(a, b) for a, b, g in spans if g == gi]
        if own and all(any(a2 <= a and b <= b2 and (b2 - a2) > (b - a) and g2 != gi for a2, b2, g2 in spans)
                       for a, b in own):
            out.add(gi)
    return out


def synonym_words(question: str, label: str) -> set[str]:
    """Label words that name, in other words, something the question names ("net sales" for "revenue")."""
    q_low, l_low = question.lower(), label.lower()
    qw, lw = content_words(question), content_words(label)
    out: set[str] = set()
    inside = _inside_other_names(q_low)
    for gi, group in enumerate(_SYN):
        if any(_has(q_low, qw, p, ws) for p, ws in group) and gi not in inside:
            for p, ws in group:
                if _has(l_low, lw, p, ws):
                    out |= ws or {p}
    return out


def expanded_words(text: str) -> set[str]:
    """``text``'s content words plus those of every synonym of a name it contains."""
    low, words = text.lower(), content_words(text)
    out = set(words)
    for group in _SYN:
        if any(_has(low, words, p, ws) for p, ws in group):
            for _, ws in group:
                out |= ws
    return out


TOTAL_WORDS = content_words("total")
PAREN_ALT = re.compile(r"\((?:loss|losses|gain|gains|income|expense|deficit|decrease|increase|benefit)\)", re.I)
FOOTNOTE = re.compile(r"\s*\((?:\d{1,2}|[a-z]|[ivx]{1,4})\)|(?<=[a-z])\d{1,2}$|\s*\*+$")


@dataclass
class RowMatch:
    row: Row
    score: float
    lex: float
    dense: float
    matched: frozenset
    pos: int  # where in the question the row is named (first matched word), for operand order
    named: float = 0.0  # ``lex`` before the total / item preference: "Total net sales" is named by "revenue"
    whole: bool = False  # every word of the label (its core) is named by the question or a synonym


def word_positions(text: str) -> dict[str, int]:
    pos: dict[str, int] = {}
    for m in WORD.finditer(text.lower()):
        for w in content_words(m.group(0)):
            pos.setdefault(w, m.start())
    return pos


def match_rows(view: TableView, pq: ParsedQuestion, encode: Optional[Callable] = None) -> list[RowMatch]:
    """Rows ranked by how well the question names them."""
    plain = content_words(pq.phrase)
    norm_q = " ".join(WORD.findall(pq.phrase.lower()))
    pos = word_positions(norm_q)  # where each word stands, in the same text the whole labels are looked for
    dense = np.zeros(len(view.rows))
    if encode is not None and view.rows:
        ent = entity_text(pq.phrase) or pq.phrase
        vecs = encode([ent] + [r.text for r in view.rows])
        dense = vecs[1:] @ vecs[0]
    out = []
    for i, row in enumerate(view.rows):
        # "Total cost of revenue" is named by "cost of revenue": "total" need not be said (a row without it
        # still wins when both are there, by the total penalty below)
        label = FOOTNOTE.sub("", row.label) or row.label  # "Other assets(1)": the mark names nothing
        # a parenthesised alternative ("Net income (loss)", "Gain (loss) on sale") may be named, need not be
        core = PAREN_ALT.sub(" ", label).strip() or label
        words_all = (content_words(label) - TOTAL_WORDS) or content_words(label)
        lw = (content_words(core) - TOTAL_WORDS) or content_words(core) or words_all
        if not lw:
            continue
        matched = (words_all & plain) | (synonym_words(pq.phrase, row.label) & words_all)
        cov = min(1.0, len(matched) / len(lw))
        lex = cov * (0.7 + 0.1 * min(3, len(matched)))
        norm_label = " ".join(WORD.findall(row.label.lower()))
        whole_at = re.search(rf"\b{re.escape(norm_label)}\b", norm_q) if norm_label else None
        if whole_at:
            lex += 0.1
        sw = content_words(row.section) - lw
        if sw and matched:  # the section tells apart rows of the same name; a word the row's own name answers
            # through a synonym names the row, not its section ("revenue": "Net sales" under "REVENUE")
            named_sw = len(sw & plain - expanded_words(label))  # a section named by more words wins a tie: "cost
            lex += 0.25 * named_sw / len(sw) + 0.02 * named_sw  # of revenue" asked, "Cost of revenue" over "Revenue"
        named = lex  # how well the question names the row, before the preference between total and item rows
        if re.search(r"\btotal\b", row.label, re.I) and matched:  # "total" is not needed to name it, but
            # a question that says it prefers the total row (unless "total" asks for a sum), else the item
            lex += 0.1 if pq.wants_total and pq.op != "sum" and lw != TOTAL_WORDS else -0.15 * (not pq.wants_total)
        d = float(max(0.0, min(1.0, (dense[i] - 0.2) / 0.6)))
        score = 0.75 * lex + 0.25 * d if matched else 0.6 * d * (d > 0.7)
        # where the question names the row: where its whole label stands ("net sales from total electronic
        # components as a percentage of the total net sales": "Total Net Sales" at the end), else its
        # last-appearing word's first occurrence ("net sales to cost of sales": "cost of sales" where "cost" is)
        first = whole_at.start() if whole_at and matched else max((pos[w] for w in matched if w in pos),
                                                                  default=10_000)
        out.append(RowMatch(row, score, lex, float(dense[i]), frozenset(matched), first, named, cov >= 1.0))
    out.sort(key=lambda m: -m.score)
    return out


def distinct_rows(matches: list[RowMatch], n: int, floor: float) -> list[RowMatch]:
    """Up to ``n`` good matches naming different words of the question (not one name matched twice)."""
    good = [m for m in matches if m.score >= floor]
    # a name matched inside a longer one ("License" inside "Cost of license") is not a second item
    good = [m for m in good if not any(m.matched < o.matched for o in good)]
    picked: list[RowMatch] = []
    for m in good:
        if any(m.matched <= p.matched or m.row.label.lower() == p.row.label.lower() for p in picked):
            continue
        picked.append(m)
        if len(picked) == n:
            break
    return picked


def col_for_period(view: TableView, p: Period, pq: ParsedQuestion) -> Optional[Col]:
    cands = [c for c in view.period_cols if c.period.year == p.year
             and (p.quarter is None or c.period.quarter == p.quarter)]
    if p.quarter is None:  # a year: its full-year column, not the three or six months to its end, when it has one
        cands = [c for c in cands if c.period.quarter is None] or cands
        cands = [c for c in cands if getattr(c, "months", 0) in (0, 12)] or cands
    else:  # the quarter itself, not the six or nine months to its end
        cands = [c for c in cands if getattr(c, "months", 0) in (0, 3)] or cands
    if not cands:
        return None
    return best_col(cands, pq)


def best_col(cands: list[Col], pq: ParsedQuestion) -> Col:
    words = content_words(pq.phrase)
    wants_pct = bool(re.search(r"%|percent|margin|rate|\bshare of\b", pq.text, re.I)) and pq.op != "pct_change"

    def key(c: Col):
        title = content_words(c.title)
        return (c.percent == wants_pct, len(title & words), bool(pq.fy) == bool(c.period and c.period.fy))
    return max(cands, key=key)


def period_order(cols: list[Col]) -> list[Col]:
    """Newest first."""
    return sorted(cols, key=lambda c: (c.period.year, c.period.fy, c.period.quarter or 0), reverse=True)


def latest_cols(view: TableView, pq: ParsedQuestion, n: int) -> list[Col]:
    """The newest ``n`` distinct periods (one column each)."""
    by_period: dict = {}
    for c in view.period_cols:
        if c.period.quarter is None or all(x.period.quarter for x in view.period_cols):
            by_period.setdefault((c.period.year, c.period.quarter), []).append(c)
    keys = sorted(by_period, key=lambda k: (k[0], k[1] or 0), reverse=True)[:n]
    return [best_col(by_period[k], pq) for k in keys]


def match_cols(view: TableView, pq: ParsedQuestion) -> list[tuple[float, Col]]:
    """Non-period columns the question names ("Fair value", "Carrying amount", "Americas")."""
    words = expanded_words(pq.phrase)
    named = [(c, content_words(c.title) & words, content_words(c.title)) for c in view.cols]
    out = []
    for c, hit, tw in named:
        # a column whose named words another column's include is not the one named: "Up to 1 year" beside
        # "1 to 3 years" for "between 1 to 3 years", "Total" beside "Total fair value"
        if hit and not any(hit < other for _c, other, _tw in named):
            out.append((len(hit) / len(tw), c))
    out.sort(key=lambda x: -x[0])
    return out
