"""Score one question from its raw record (what the retriever and the agent returned).

Records keep raw outputs only, so scoring can change without rerunning the agent. A retrieved passage
*hits* when it is from the question's document and either overlaps a gold span (``text.overlap`` >= 0.5)
or, for page-labelled evidence, is on the gold page. A citation is *precise* when its quote occurs verbatim
(modulo whitespace) in the document text we ingested and overlaps the evidence.
"""
from __future__ import annotations

import re
from typing import Optional

from app.evaluation.dates import dates_in, parse_answer_date
from app.evaluation.numbers import answer_number, is_year, numeric_match, parse_numbers
from app.evaluation.tatqa_metric import tatqa_scores
from app.evaluation.text import HIT_THRESHOLD, best_overlap, occurs_verbatim, phrase_in, tokens
from app.evaluation.types import EvalItem

NOT_FOUND = re.compile(r"\b(do(?:es)? not (?:contain|state|say|mention|specify|provide|include)|not (?:found|stated|"
                       r"specified|mentioned)|no (?:information|relevant)|cannot (?:find|answer|determine)|"
                       r"unable to (?:find|answer|determine)|returned no rows)\b", re.IGNORECASE)
STOP = frozenset("a an and are as at be by for from has have in is it its of on or that the this to was were will "
                 "with which what how much".split())
MIN_ANSWER_TOKENS = 4  # shorter answer texts ("Yes", "the Company") cannot show a clause by overlap alone


def passage_hits(item: EvalItem, p: dict) -> bool:
    if p.get("filename") != item.doc or not item.evidence:
        return False
    if any(ev.page is not None and p.get("page") == ev.page for ev in item.evidence):
        return True
    return best_overlap(p.get("text") or "", [ev.text for ev in item.evidence if ev.text]) >= HIT_THRESHOLD


def first_rank(flags: list[bool]) -> Optional[int]:
    return next((i + 1 for i, f in enumerate(flags) if f), None)


def is_not_found(answer: dict) -> bool:
    text = (answer.get("answer") or "").strip()
    return not text or bool(NOT_FOUND.search(text))


def clause_correct(item: EvalItem, texts: list[str]) -> bool:
    joined = "\n".join(texts)
    if item.meta.get("party_spans"):
        spans = item.meta["party_spans"]
        return sum(phrase_in(s, joined) for s in spans) >= min(2, len(spans))
    golds = [ev.text for ev in item.evidence]
    long_texts = [t for t in texts if len(tokens(t)) >= MIN_ANSWER_TOKENS]
    if not any(best_overlap(t, golds) >= HIT_THRESHOLD for t in long_texts):
        return False
    value = item.meta.get("answer_value") or ""
    when = parse_answer_date(value)
    if when is not None:  # a date: required when the gold clause itself states it
        if any(when in dates_in(g) for g in golds):
            return when in dates_in(joined)
        return True
    if value and any(phrase_in(value.split(",")[0], g) for g in golds):  # "Ontario, Canada": Ontario
        return phrase_in(value.split(",")[0], joined)
    return True


PROVENANCE = re.compile(r"\n\s*(?:Formula|Source|SQL|Rows used|Not verified|Sources|Citations?):", re.IGNORECASE)


def answer_statement(text: str) -> str:
    """The answer without its provenance lines (a BI answer's "Rows used:", "Source:", "SQL:", "Not
    verified:"): what is scored as the answer, as TAT-QA scores a predicted answer, not its derivation."""
    m = PROVENANCE.search(text or "")
    return (text or "")[:m.start()] if m else (text or "")


POLARITY = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def _key_numbers(gold: str, question: str) -> list:
    """The figures a free-text gold answer states that the question does not already give (years excluded)."""
    asked = [n.scaled for n in parse_numbers(question)]
    return [n for n in parse_numbers(gold) if not is_year(n) and n.scaled not in asked]


def text_correct(gold: str, answer: str, question: str = "") -> bool:
    """Approximate, for free-text gold answers. The substance of a gold sentence is what it adds to the
    question: its yes/no, its figures, and its words the question does not contain ("Consumer Health" for
    "which business segment ... will be treated as a discontinued operation"). Correct when a stated yes/no
    agrees; where the gold states figures and the answer states any, one of the gold's must be among them
    (scale-aware, 1%); otherwise half of the gold's new content words must occur in the answer. Words the question already holds ("EBITDA 2023") prove nothing."""
    statement = answer_statement(answer)
    g_pol, a_pol = POLARITY.match(gold or ""), POLARITY.match(statement)
    if g_pol and (not a_pol or a_pol.group(1).lower() != g_pol.group(1).lower()):
        return False
    figures = _key_numbers(gold, question)
    stated = [n for n in parse_numbers(statement) if not is_year(n)]
    if figures and stated:  # a figure asked and figures given: they decide
        return any(numeric_match(p, g) for g in figures for p in stated)
    asked = set(tokens(question))
    gold_words = {t for t in tokens(gold) if t not in STOP}
    new = (gold_words - asked) or gold_words
    if figures:  # the figures are the answer: their digits are not words to match
        new = {t for t in new if not t[0].isdigit()} or new
    return bool(new) and len(new & set(tokens(statement))) / len(new) >= 0.5


def score(item: EvalItem, rec: dict, doc_text: dict[str, str]) -> dict:
    """-> flat dict of per-question scores (None where a metric does not apply)."""
    out: dict = {}
    retrieved = rec.get("retrieved") or []
    out["rank"] = first_rank([passage_hits(item, p) for p in retrieved]) if item.evidence else None
    out["doc_rank"] = first_rank([p.get("filename") == item.doc for p in retrieved])
    if item.evidence and hasattr(doc_text, "chunks"):  # can any chunk of the document hit at all?
        out["in_index"] = any(passage_hits(item, c) for c in doc_text.chunks(item.doc))
    answer = rec.get("answer")
    if answer is None:
        return out
    text = answer.get("answer") or ""
    quotes = [c.get("quote") or "" for c in answer.get("citations") or []]
    out["supported"] = bool(answer.get("supported"))
    out["not_found"] = is_not_found(answer)
    if item.scoring == "clause":
        out["correct"] = (not out["not_found"]) and clause_correct(item, [text] + quotes)
    elif item.scoring == "numeric":
        gold = answer_number(item.answers[0])
        pred = answer_number(answer_statement(text), gold)
        out["correct"] = bool(gold and pred and numeric_match(pred, gold, 0.01))
    elif item.scoring == "tatqa":
        s = tatqa_scores(answer_statement(text), item.meta.get("answer"), item.meta.get("scale") or "",
                         question=item.question)
        out.update(s)
        out["correct"] = bool(s["em"])
    elif item.answers:
        out["correct"] = (not out["not_found"]) and text_correct(item.answers[0], text, item.question)
    n_ok = n_verbatim = 0
    golds = [ev.text for ev in item.evidence if ev.text]
    for c in answer.get("citations") or []:
        src = doc_text.get(c.get("filename") or "")
        verbatim = src is not None and occurs_verbatim(c.get("quote") or "", src)
        on_evidence = c.get("filename") == item.doc and (
            any(ev.page is not None and c.get("page") == ev.page for ev in item.evidence)
            or best_overlap(c.get("quote") or "", golds) >= HIT_THRESHOLD)
        n_verbatim += verbatim
        n_ok += verbatim and on_evidence
    out["other_doc"] = any(c.get("filename") != item.doc for c in answer.get("citations") or [])
    out["citations"] = len(answer.get("citations") or [])
    out["citations_verbatim"] = n_verbatim
    out["citations_precise"] = n_ok
    return out
