"""Numbers in answers, with their scale: "$1,577.00 million", "(1,234)", "24.26%", "1.2bn", "0.66".

``numeric_match(pred, gold)`` is scale-aware with a relative tolerance (1% by default): a bare number is
compared both as written and at the other side's scale, so "1,577" matches "$1,577 million" and
"1.577 billion" matches "1,577 million"; a percentage also matches its ratio form (24.26% ~ 0.2426).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

SCALES = {"thousand": 1e3, "thousands": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "m": 1e6, "mn": 1e6,
          "mm": 1e6, "billion": 1e9, "billions": 1e9, "bn": 1e9, "b": 1e9, "trillion": 1e12}
NUMBER = re.compile(
    r"(?P<neg>\(\s*|(?<![\w)\d])[-\u2212])?[$\u20ac\u00a3]?\s*(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)\)?"
    r"\s*(?P<pct>%|percent\b|per cent\b)?\s*(?P<scale>thousands?\b|millions?\b|billions?\b|trillion\b|bn\b|mn\b|mm\b|k\b|m\b|b\b)?",
    re.IGNORECASE)
# "in millions" anywhere, or an answer's unit "(USD thousands)": the scale of the text's bare numbers
IN_SCALE = re.compile(r"\bin (thousands|millions|billions)\b|\((?:[A-Z]{3} )?(thousands|millions|billions)\)",
                      re.IGNORECASE)


@dataclass
class Number:
    value: float  # as written (sign applied)
    scale: float = 1.0  # 1, 1e3, 1e6, 1e9; 1 when none is stated
    percent: bool = False
    stated_scale: bool = False  # a scale word beside it, or "in millions" elsewhere in the text
    text: str = ""
    own_scale: bool = False  # the scale word is right beside the number

    @property
    def scaled(self) -> float:
        return self.value * self.scale


def parse_numbers(text: str) -> list[Number]:
    text = text or ""
    default = IN_SCALE.search(text)
    default_scale = SCALES[(default.group(1) or default.group(2)).lower()] if default else None
    out = []
    for m in NUMBER.finditer(text):
        raw = m.group("num").replace(",", "")
        try:
            value = float(raw)
        except ValueError:
            continue
        start = m.start("num")
        if start > 0 and (text[start - 1].isalpha() or text[start - 1] in "./"):
            continue  # part of a word, a section number ("5.2" after "Section"), or a date
        neg = m.group("neg")
        if neg == "(" and not m.group(0).rstrip().endswith(")"):
            neg = None
        if neg:
            value = -value
        scale_word = (m.group("scale") or "").lower()
        scale = SCALES.get(scale_word)
        stated = scale is not None
        if scale is None and default_scale is not None:
            scale, stated = default_scale, True
        out.append(Number(value, scale or 1.0, bool(m.group("pct")), stated, m.group(0).strip(), bool(scale_word)))
    return out


def parse_number(text: str) -> Optional[Number]:
    nums = parse_numbers(text)
    return nums[0] if nums else None


def is_year(n: Number) -> bool:
    return not n.percent and not n.own_scale and float(n.value).is_integer() and 1900 <= n.value <= 2100 \
        and "," not in n.text and "." not in n.text


def close(a: float, b: float, tol: float) -> bool:
    if b == 0:
        return abs(a) <= 1e-9
    return abs(a - b) <= tol * abs(b) + 1e-9


def numeric_match(pred: Number, gold: Number, tol: float = 0.01) -> bool:
    cands = [pred.scaled]
    if not pred.stated_scale:
        cands.append(pred.value * gold.scale)
    golds = [gold.scaled]
    if not gold.stated_scale:
        golds.append(gold.value * pred.scale)
    if pred.percent != gold.percent:  # 24.26% ~ 0.2426
        extra = []
        for c in cands:
            extra += [c * 100, c / 100]
        cands += extra
    return any(close(c, g, tol) for c in cands for g in golds)


def answer_number(text: str, gold: Optional[Number] = None) -> Optional[Number]:
    """The number an answer states: after its last '=', else the first non-year number."""
    text = text or ""
    if "=" in text:
        after = parse_numbers(text.rsplit("=", 1)[1])
        if after:
            return after[0]
    keep_years = gold is not None and is_year(gold)
    if re.search(r":\s*[-−$(]?\d", text):  # "Label (see Note 16), 2018: 64,858": the value follows the colon
        stated = parse_numbers(text.rsplit(":", 1)[1])
        after = [n for n in stated if keep_years or not is_year(n)] or stated  # "Land, 2019: 1949": an amount
        if after:
            return after[0]
    nums = parse_numbers(text)
    for n in nums:
        if keep_years or not is_year(n):
            return n
    return nums[0] if nums else None
