"""TAT-QA-style EM and F1 for a free-text answer against gold spans / a gold number with a scale.

TAT-QA's official script compares a predicted answer (and its scale) with the gold after normalising numbers
(rounded to 2 decimals, scale applied). Our agent writes a sentence, so the prediction is read from it:
- numeric gold (arithmetic, count, numeric spans): the number the answer states (after its last '=', else
  its first non-year number), scale-aware: gold 1,234 with scale thousand matches "1,234 thousand",
  "1.234 million" and a bare "1,234"; EM needs equality after rounding to 2 decimals, ``em_tol`` allows 1%.
- text gold (span, multi-span): EM when every gold span occurs in the answer (a numeric span as a number,
  "$1,095.0" = "1,095"), the answer is not much longer than the gold (the tokens it adds to the question at
  most 2x the gold's + 3) and, where the gold spans are all figures, it states no other figure; F1 is the
  bag-of-tokens F1 (multi-span: gold spans aligned greedily to the answer's comma/semicolon/"and" parts), as in
  the official script.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from app.evaluation.numbers import (SCALES, Number, answer_number, close, is_year, numeric_match, parse_number,
                                   parse_numbers)
from app.evaluation.text import phrase_in, tokens

SCALE_VALUE = {"": 1.0, "thousand": 1e3, "million": 1e6, "billion": 1e9, "percent": 1.0}
SPLIT = re.compile(r"\s*(?:;|,(?!\d{3})|\n)\s*|\s+and\s+")


def _single(answer):
    """The one gold answer (a list of one unwrapped); None for several."""
    if isinstance(answer, list):
        return answer[0] if len(answer) == 1 else None
    return answer


def gold_number(answer, scale: str):
    """The gold answer as a Number (scale applied) or None when it is not numeric."""
    answer = _single(answer)
    if answer is None:
        return None
    if isinstance(answer, (int, float)):
        text = str(answer)
    else:
        text = str(answer).strip()
        if not re.fullmatch(r"[\s$(\-\u2212]*[\d,]*\.?\d+\s*\)?\s*%?", text):
            return None
    n = parse_number(text)
    if n is None:
        return None
    s = (scale or "").lower()
    return Number(n.value, SCALE_VALUE.get(s, 1.0), n.percent or s == "percent", s not in ("", "percent"), text)


# "$9.6 million", "$(9.8) million", "£(8.1m)"
SCALED_SPAN = re.compile(r"\s*[$\u20ac\u00a3]?\s*\(?\s*(?P<num>[\d,]*\.?\d+)\s*\)?\s*"
                         r"(?P<scale>thousand|million|billion|m|bn)\s*\)?\s*", re.IGNORECASE)


def scaled_gold(answer) -> Optional[tuple[float, float, float]]:
    """A gold span that is one amount written with a scale word ("$9.6 million", "£41.5 million") as (its
    magnitude, half a unit of its last digit, its scale): it is stated to that precision, so 9,577,144 and
    "16,901 (USD thousands)" are the "$9.6 million" and "$16.9 million" a report's text rounds them to."""
    answer = _single(answer)
    if answer is None:
        return None
    m = SCALED_SPAN.fullmatch(str(answer))
    if not m:
        return None
    raw = m.group("num").replace(",", "")
    decimals = len(raw.split(".")[1]) if "." in raw else 0
    scale = SCALES[m.group("scale").lower()]
    return float(raw) * scale, 0.5 * 10 ** -decimals * scale, scale


def _scaled_match(prediction: str, gold: tuple[float, float, float]) -> bool:
    """The amount the prediction states, at its stated scale (a bare one also at the gold's), rounds to the
    gold; magnitudes, as a numeric span is compared ("decreased $9.9 million" is the change -9,861 thousands)."""
    value, half, scale = gold
    pred = answer_number(prediction, Number(value, 1.0, False, False, ""))
    if pred is None:
        return False
    cands = [pred.scaled] + ([pred.value * scale] if not pred.stated_scale else [])
    return any(abs(abs(c) - value) <= half * (1 + 1e-9) for c in cands)


NUMERIC_SPAN = re.compile(r"[\s$(\-\u2212]*[\d,]*\.?\d+\s*\)?\s*%?")


def _span_in(gold: str, prediction: str) -> bool:
    """A gold span occurs in the prediction; a numeric span as a number (official TAT-QA normalises numbers:
    "$1,095.0" is the 1,095 an answer states)."""
    if NUMERIC_SPAN.fullmatch(gold.strip()):
        g = parse_number(gold)
        if g is not None:
            return any(round(abs(p.value), 2) == round(abs(g.value), 2) for p in parse_numbers(prediction))
    return phrase_in(gold, prediction)


def _f1(pred: list[str], gold: list[str]) -> float:
    common = sum((Counter(pred) & Counter(gold)).values())
    if not common:
        return 0.0
    p, r = common / len(pred), common / len(gold)
    return 2 * p * r / (p + r)


def _extra_figures(prediction: str, golds: list[str], question: str) -> bool:
    """Numeric gold spans only: the prediction states a figure that is none of them nor one the question gives
    ("Work-in-process: 2,929, 2,370; Total inventories: 3,836, 3,260" for the work-in-process values)."""
    if not all(NUMERIC_SPAN.fullmatch(g.strip()) for g in golds):
        return False
    known = {round(abs(n.value), 2) for t in (*golds, question) for n in parse_numbers(t)}
    years = any(is_year(n) for g in golds for n in parse_numbers(g))  # else a year is a period's label, no figure
    return any(round(abs(p.value), 2) not in known and (years or not is_year(p)) for p in parse_numbers(prediction))


def span_scores(prediction: str, golds: list[str], question: str = "") -> tuple[float, float]:
    ptoks = tokens(prediction)
    gold_toks = [tokens(g) for g in golds if tokens(g)]
    if not gold_toks or not ptoks:
        return 0.0, 0.0
    total = sum(len(g) for g in gold_toks)
    # the length limit counts what the answer adds to the question: restating the item and the years asked
    # ("Other current assets: 2019 193, 2018 167") is not padding
    asked = set(tokens(question))
    added = [t for t in ptoks if t not in asked]
    em = float(all(_span_in(g, prediction) for g in golds if tokens(g)) and len(added) <= 2 * total + 3
               and not _extra_figures(prediction, golds, question))
    if len(gold_toks) == 1:
        return em, _f1(ptoks, gold_toks[0])
    parts = [tokens(p) for p in SPLIT.split(prediction) if tokens(p)]
    used, scores = set(), []
    for g in gold_toks:
        best, best_i = 0.0, None
        for i, p in enumerate(parts):
            if i not in used and _f1(p, g) > best:
                best, best_i = _f1(p, g), i
        if best_i is not None:
            used.add(best_i)
        scores.append(best)
    f1 = sum(scores) / max(len(gold_toks), len(parts))
    return em, f1


def tatqa_scores(prediction: str, answer, scale: str, tol: float = 0.01, question: str = "") -> dict:
    """{"em", "f1", "em_tol"} for one question (``question``: its words do not count toward a span answer's
    length)."""
    gold = gold_number(answer, scale)
    if gold is not None:
        pred = answer_number(prediction, gold)
        if pred is None:
            return {"em": 0.0, "f1": 0.0, "em_tol": 0.0}
        exact = numeric_match(pred, gold, tol=0.0) or _rounded_equal(pred, gold)
        return {"em": float(exact), "f1": float(exact), "em_tol": float(exact or numeric_match(pred, gold, tol))}
    scaled = scaled_gold(answer)
    if scaled is not None and _scaled_match(prediction, scaled):
        return {"em": 1.0, "f1": 1.0, "em_tol": 1.0}
    golds = answer if isinstance(answer, list) else [str(answer)]
    em, f1 = span_scores(prediction, [str(g) for g in golds], question)
    return {"em": em, "f1": f1, "em_tol": em}


def _rounded_equal(pred: Number, gold: Number) -> bool:
    """Official-style: equal after rounding to 2 decimals at the gold's scale."""
    for value in {pred.scaled / gold.scale, pred.value} if not pred.stated_scale else {pred.scaled / gold.scale}:
        for g in (gold.value,):
            if round(value, 2) == round(g, 2) or (pred.percent != gold.percent and close(value * 100, g, 1e-4)):
                return True
    return False
