"""Dates in contract text ("April 13, 2012", "13th day of April, 2012", "4/13/2012") for CUAD date answers."""
from __future__ import annotations

import re
from datetime import date
from typing import Optional

MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december"], 1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
_M = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
MDY = re.compile(_M + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})", re.IGNORECASE)
DMY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?" + _M + r",?\s+(\d{4})", re.IGNORECASE)
NUMERIC = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})\b")


def _mk(y: int, m: int, d: int) -> Optional[date]:
    if y < 100:
        y += 2000 if y < 50 else 1900
    try:
        return date(y, m, d)
    except ValueError:
        return None


def parse_answer_date(text: str) -> Optional[date]:
    """CUAD's normalised answer, e.g. '4/13/12' or '5/8/2014'."""
    m = NUMERIC.search(text or "")
    return _mk(int(m.group(3)), int(m.group(1)), int(m.group(2))) if m else None


def dates_in(text: str) -> set[date]:
    out = set()
    for m in MDY.finditer(text or ""):
        out.add(_mk(int(m.group(3)), MONTHS[m.group(1).lower()[:3]], int(m.group(2))))
    for m in DMY.finditer(text or ""):
        out.add(_mk(int(m.group(3)), MONTHS[m.group(2).lower()[:3]], int(m.group(1))))
    for m in NUMERIC.finditer(text or ""):
        out.add(_mk(int(m.group(3)), int(m.group(1)), int(m.group(2))))
    out.discard(None)
    return out
