"""Which filing of a company a question is about: "Q2 of FY2024", "FY2023", "the 8-K dated 1st July 2022".

A company often has several filings in scope (a 10-K, a 10-Q, an 8-K, an earnings release). A question that
names a period or a form is answered from the filing that covers it, never from the company's other filings:
"Was there any drop in cash between FY2023 and Q2 of FY2024?" is about the Q2 FY2024 10-Q (which also carries
the FY2023 year-end balance), not the FY2023 10-K.

What each document is (form, fiscal year, quarter, period end, date of report) is read once at ingest
(``ingest.facts.filing``) and stored with it; here the question's forms, fiscal years, quarters and dates are
read (``ask_of``) and matched against those (``narrow``): the best-matching filings are kept, and when nothing
in the question names a filing, all are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Optional

from ingest.facts.filing import DATE_DMY, DATE_ISO, DATE_MDY, FORMS, ORDINAL, Filing, parse_date, year


@dataclass
class FilingAsk:
    forms: set[str] = field(default_factory=set)
    years: list[int] = field(default_factory=list)  # fiscal years named outside a quarter ("FY2023", "2022")
    quarters: list[tuple[int, int]] = field(default_factory=list)  # (quarter, fiscal year): "Q2 of FY2024"
    dates: list[date] = field(default_factory=list)  # "dated 1st July 2022", "as of August 30, 2023"

    @property
    def names_any(self) -> bool:
        return bool(self.forms or self.years or self.quarters or self.dates)


QUARTER_ASKS = [  # (pattern, group of the quarter, group of the year)
    (re.compile(r"\bQ([1-4])\s*(?:of\s+|in\s+)?(?:the\s+)?(?:FY|fiscal(?:\s+year)?)\s*['’]?\s*((?:19|20)\d{2}|\d{2})\b",
                re.I), 1, 2),
    (re.compile(r"\bQ([1-4])\s*['’]?\s*((?:19|20)\d{2})(?!\d)", re.I), 1, 2),
    (re.compile(r"\bQ([1-4])\s*['’]\s*(\d{2})\b", re.I), 1, 2),
    (re.compile(r"\b(?:FY|fiscal(?:\s+year)?)\s*['’]?\s*((?:19|20)\d{2}|\d{2})\s*,?\s*Q([1-4])\b", re.I), 2, 1),
    (re.compile(r"\b([1-4])Q\s*['’]?\s*((?:19|20)\d{2}|\d{2})\b", re.I), 1, 2),
    (re.compile(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:the\s+)?"
                r"(?:fiscal\s+(?:year\s+)?|FY\s*)?((?:19|20)\d{2})\b", re.I), 1, 2),
]
YEAR_ASK = re.compile(r"\b(?:FY|fiscal(?:\s+year)?)\s*['’]?\s*((?:19|20)\d{2}|\d{2})\b|(?<![\d$.,])((?:19|20)\d{2})(?![\d,])",
                      re.I)


def ask_of(question: str) -> FilingAsk:
    """The forms, quarters, fiscal years and dates a question names."""
    q = question
    ask = FilingAsk()
    for form, rx in FORMS:
        if rx.search(q):
            ask.forms.add(form)
    for rx in (DATE_MDY, DATE_DMY, DATE_ISO):
        for m in list(rx.finditer(q)):
            d = parse_date(m.group(0))
            if d:
                ask.dates.append(d)
            q = q.replace(m.group(0), " ")
    for rx, qi, yi in QUARTER_ASKS:
        for m in list(rx.finditer(q)):
            quarter = m.group(qi)
            quarter = ORDINAL.get(quarter.lower(), None) or int(quarter)
            ask.quarters.append((quarter, year(m.group(yi))))
            q = q.replace(m.group(0), " ")
    for m in YEAR_ASK.finditer(q):
        y = year(m.group(1) or m.group(2))
        if y not in ask.years:
            ask.years.append(y)
    return ask


def match(ask: FilingAsk, f: Filing) -> Optional[float]:
    """How well filing ``f`` is the one the question names (higher is better); None: a form the question
    excludes (it names a 10-Q, this is a 10-K)."""
    if ask.forms and f.form and f.form not in ask.forms:
        return None
    s = 0.0
    if ask.forms and f.form in ask.forms:
        s += 2
    for d in ask.dates:
        for known in (f.report_date, f.period_end):
            if known and abs((known - d).days) <= 3:
                s += 4
                break
    for quarter, fy in ask.quarters:
        if f.fiscal_year == fy and f.quarter == quarter:
            s += 4
        elif f.fiscal_year == fy and f.annual and quarter == 4:
            s += 2
    if ask.years and f.fiscal_year:
        latest = max(ask.years)
        if f.fiscal_year == latest:
            s += 2 if f.annual else 1
        elif f.fiscal_year in ask.years and f.annual:
            s += 0.5
    return s


STRONG = 4.0  # a quarter or a date matched: names one filing even among many companies'
NARROWED = "the filing for the period or form the question names"


def narrow(ask: FilingAsk, filings: dict[str, Filing], min_best: float = 0.0) -> tuple[list[str], str]:
    """(the documents among ``filings`` (doc_id -> its filing) the question's ``ask`` names, why); all of them
    and "" when it names none (or, with ``min_best``, none matches that well)."""
    ids = list(filings)
    if len(ids) < 2 or not ask.names_any:
        return ids, ""
    if not all(f.form for f in filings.values()):
        return ids, ""  # not all of them are filings (contracts, notes): a period names none of them
    scored = [(s, d) for d, s in ((d, match(ask, f)) for d, f in filings.items()) if s is not None]
    if not scored:
        return ids, ""
    best = max(s for s, _ in scored)
    if min_best and best < min_best:
        return ids, ""
    kept = [d for _, d in scored] if best <= 0 else [d for s, d in scored if s == best]  # <= 0: only forms excluded
    if len(kept) == len(ids):
        return ids, ""
    return kept, NARROWED


DATE_PHRASE = re.compile(rf"(?:,\s*)?\b(?:as (?:of|at)|on|from|dated|since)?\s*(?:{DATE_MDY.pattern}|{DATE_DMY.pattern}|"
                         rf"{DATE_ISO.pattern})(?:\s+onwards?)?", re.I)


def without_report_date(question: str, filings: list[Filing]) -> str:
    """``question`` without a date that is the date of report of a filing answering it ("... from the
    separation of Kenvue, as of August 30, 2023?" over the 8-K dated August 30, 2023): that date names the
    filing, it is no period a sentence of it must state."""
    dates = {}
    for m in DATE_PHRASE.finditer(question):
        d = parse_date(m.group(0))
        if d:
            dates[m.group(0)] = d
    reported = [f.report_date for f in filings if f.report_date]
    if not dates or not reported:
        return question
    out = question
    for phrase, d in dates.items():
        if any(abs((r - d).days) <= 3 for r in reported):
            out = out.replace(phrase, " ")
    return " ".join(out.split()).replace(" ?", "?")


def without_filing_date(kb, tenant: str, question: str, doc_ids: list[str]) -> str:
    """``without_report_date`` over the filings of ``doc_ids`` (their stored facts)."""
    if not doc_ids or not DATE_PHRASE.search(question):
        return question
    facts = kb.for_tenant(tenant).facts(list(doc_ids))
    return without_report_date(question, [f.filing for f in facts.values()])
