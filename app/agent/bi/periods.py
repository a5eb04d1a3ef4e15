"""Periods: read from column headers ("2019", "FY19", "Fiscal 2018", "December 31, 2019", "Year Ended
June 30, 2019", "Q3 2024", "y2024", "fy_2024") and from questions ("in 2019", "FY19", "fiscal 2018",
"Q4 2024", "from 2018 to 2019").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

PERIOD_COLUMN_NAMES = {"year", "period", "quarter", "fiscal_year", "fy", "date", "years", "fiscal"}
YEAR4 = r"(?:19|20)\d\d"
MONTHS = r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_NAME = re.compile(r"^(?:(?P<fy>fy)_?|y|q(?P<q>[1-4])_?)?(?P<year>(?:19|20)\d\d)$")
_Q = re.compile(rf"\bq(?P<q>[1-4])\s*(?:of\s+(?:the\s+)?)?(?:(?:fy|fiscal(?:\s+year)?)\s*'?|'|’)?\s*"
                rf"(?P<year>{YEAR4}|\d\d)?\b", re.I)
_QUARTER_WORD = re.compile(rf"\b(?P<n>first|second|third|fourth)\s+quarter(?:\s+of)?\s*(?:fiscal\s+)?(?P<year>{YEAR4})?",
                           re.I)
_FY = re.compile(rf"\b(?:fy\s*'?|f'?)(?P<year>{YEAR4}|\d\d)\b", re.I)
_FISCAL = re.compile(rf"\bfiscal\s+(?:year\s+)?(?P<year>{YEAR4}|\d\d)\b", re.I)
_YEAR = re.compile(rf"(?<![\d.,$])(?P<year>{YEAR4})(?![\d%]|\.\d|,\d)")
_SLASH = re.compile(rf"\b(?P<a>{YEAR4})\s*/\s*(?P<b>{YEAR4}|\d\d)\b")
_QUARTER_N = {"first": 1, "second": 2, "third": 3, "fourth": 4}


@dataclass(frozen=True)
class Period:
    year: int
    quarter: Optional[int] = None  # 1..4
    fy: bool = False

    def label(self) -> str:
        return f"FY {self.year}" if self.fy else (f"Q{self.quarter} {self.year}" if self.quarter else str(self.year))


def _year(text: str) -> int:
    y = int(text)
    return y + 2000 if y < 100 else y


def periods_in(text: str) -> list[Period]:
    """Every period named in ``text``, in order of appearance, without repeats."""
    found: list[tuple[int, Period]] = []
    taken: list[tuple[int, int]] = []

    def add(m, p: Period) -> None:
        if any(a <= m.start() < b for a, b in taken):
            return
        taken.append((m.start(), m.end()))
        found.append((m.start(), p))

    for m in _Q.finditer(text):
        if m["year"]:
            add(m, Period(_year(m["year"]), int(m["q"])))
    for m in _QUARTER_WORD.finditer(text):
        if m["year"]:
            add(m, Period(_year(m["year"]), _QUARTER_N[m["n"].lower()]))
    for m in _SLASH.finditer(text):  # "2018/2019": the fiscal year ending in the second
        b = m["b"] if len(m["b"]) == 4 else m["a"][:2] + m["b"]
        add(m, Period(int(b)))
    for rx in (_FY, _FISCAL):
        for m in rx.finditer(text):
            add(m, Period(_year(m["year"])))
    for m in _YEAR.finditer(text):
        add(m, Period(int(m["year"])))
    out: list[Period] = []
    for _, p in sorted(found, key=lambda x: x[0]):
        if p not in out:
            out.append(p)
    return out


def yearless_quarters(text: str) -> list[int]:
    """The quarters ``text`` names without a year ("revenue in Q3", "the third quarter"), in order."""
    out: list[int] = []
    for rx, n in ((_Q, lambda m: int(m["q"])), (_QUARTER_WORD, lambda m: _QUARTER_N[m["n"].lower()])):
        for m in rx.finditer(text):
            if not m["year"] and n(m) not in out:
                out.append(n(m))
    return out


_QUARTERS_ENDED = re.compile(r"\bquarters?\s+end(?:ed|ing)\b", re.I)


def names_quarter(text: str) -> bool:
    """``text`` names a quarter without placing it in a year: "Q3", "the third quarter", "the quarters ended
    January 26 and April 27"."""
    return bool(yearless_quarters(text) or _QUARTERS_ENDED.search(text))


def without_quarters(text: str) -> str:
    """``text`` without the quarters it names ("Q3", "the fourth quarter of 2019")."""
    return " ".join(_Q.sub(" ", _QUARTER_WORD.sub(" ", text)).split())


def column_period(name: str, label: str = "") -> Optional[Period]:
    """The one period a column header names, or None (no period, or several: "2019 vs 2018")."""
    for candidate in (re.sub(r"[^a-z0-9]+", "_", (label or name).lower()).strip("_"), name.lower()):
        m = _NAME.match(candidate)
        if m:
            return Period(int(m["year"]), int(m["q"]) if m["q"] else None, bool(m["fy"]))
    text = label or name.replace("_", " ")
    if re.search(r"\b(change|vs\.?|versus|difference|variance|growth)\b|%", text, re.I):
        return None
    ps = periods_in(text)
    if len(ps) == 1:
        p = ps[0]
        if re.search(r"\b(fy|fiscal|full[- ]year)\b", text, re.I) and not p.quarter:
            return Period(p.year, None, True) if re.match(r"\s*(fy|full)", text, re.I) else p
        return p
    return None


def value_period(value) -> Optional[Period]:
    """A period from a cell of a period column (2024, 2024.0, "FY2024", "Q3 2024")."""
    if isinstance(value, (int, float)):
        return Period(int(value)) if float(value).is_integer() and 1900 <= value <= 2100 else None
    if value is None:
        return None
    ps = periods_in(str(value))
    return ps[0] if len(ps) == 1 and len(str(value)) <= 40 else None


def strip_periods(text: str) -> str:
    """``text`` with period mentions (and the words that introduce them) removed."""
    t = _SLASH.sub(" ", text)
    t = _Q.sub(lambda m: " " if m["year"] else m.group(0), t)
    t = _QUARTER_WORD.sub(lambda m: " " if m["year"] else m.group(0), t)
    t = _FY.sub(" ", t)
    t = _FISCAL.sub(" ", t)
    t = re.sub(rf"\b(?:(?:{MONTHS})[a-z]*\.?\s+\d{{1,2}},?\s*)?{YEAR4}\b", " ", t, flags=re.I)
    t = re.sub(r"\b(fiscal years?|years? ended|year end|as of|as at|at the end of)\b", " ", t, flags=re.I)
    return " ".join(t.split())
