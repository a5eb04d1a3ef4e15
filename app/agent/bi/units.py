"""The scale a question asks its answer in ("Answer in USD millions", "(in thousands)"), and a value restated
from its table's scale into it: an analyst asking for millions gets millions, beside the table's own figure.

Only thousand / million / billion scales convert; a unit without one (per-share, %, a count) is never restated.
"""
from __future__ import annotations

import re
from typing import Optional

from app.agent.bi.program import fmt

SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_WORD = r"(thousand|million|billion)s?"
ASKED = re.compile(r"\b(?:in|into|as|of)\s+(?:units?\s+of\s+)?(?:(?:usd|us\$|\$|dollars?|eur|€|£)\s*)?"
                   + _WORD + r"\b", re.IGNORECASE)
IN_UNIT = re.compile(r"\b" + _WORD + r"\b", re.IGNORECASE)


def asked_scale(question: str) -> Optional[str]:
    """"million" for "... (in USD millions)?" / "Answer in millions."; None when the question names no scale
    or names two different ones."""
    found = {m.group(1).lower() for m in ASKED.finditer(question or "")}
    return found.pop() if len(found) == 1 else None


def unit_scale(unit: str) -> Optional[str]:
    m = IN_UNIT.search(unit or "")
    return m.group(1).lower() if m else None


def restated(value, unit: str, asked: Optional[str]) -> str:
    """" = 5,466.31 (USD millions)" for 5,466,312 in "USD thousands" asked in millions; "" when nothing to do."""
    have = unit_scale(unit)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not asked or not have or have == asked:
        return ""
    converted = float(value) * SCALES[have] / SCALES[asked]
    new_unit = IN_UNIT.sub(lambda m: asked + ("s" if m.group(0).lower().endswith("s") else ""), unit, count=1)
    return f" = {fmt(round(converted, 3))} ({new_unit})"
