"""Which filing of a company a question is about: "Q2 of FY2024", "FY2023", "the 8-K dated 1st July 2022".

A company often has several filings in scope (a 10-K, a 10-Q, an 8-K, an earnings release). A question that
names a period or a form is answered from the filing that covers it, never from the company's other filings:
"Was there any drop in cash between FY2023 and Q2 of FY2024?" is about the Q2 FY2024 10-Q (which also carries
the FY2023 year-end balance), not the FY2023 10-K.

Each document's filing is read once (``FILINGS``):
- its cover page: the form ("FORM 10-Q"), "For the fiscal year ended June 30, 2016" (annual), "For the
  quarterly period ended July 29, 2023" (quarterly), an 8-K's "Date of Report ...: July 1, 2022", an earnings
  release's "reports fiscal 2023 results" / "fourth quarter";
- the fiscal year a period belongs to from the text ("fiscal 2024" most often near the period's end year:
  Best Buy's quarter ended July 29, 2023 is Q2 of fiscal 2024), the quarter of a 10-Q from "six/nine months
  ended" (Q2/Q3, else Q1);
- a file name in the usual form ("BESTBUY_2024Q2_10Q", "AMCOR_2022_8K_dated-2022-07-01") states them directly
  and wins where it does.
The question's forms, fiscal years, quarters and dates are matched against them (``narrow``); the best-matching
filings are kept, and when nothing in the question names a filing, all are.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Optional

from app.agent.scope import DocCache, opening_passages

MONTHS = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                          "nov", "dec"])}
MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|" \
        r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
DATE_MDY = re.compile(rf"\b({MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{{2}})\b", re.I)
DATE_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTH}),?\s+((?:19|20)\d{{2}})\b", re.I)
DATE_ISO = re.compile(r"\b((?:19|20)\d{2})-(\d{2})-(\d{2})\b")
ORDINAL = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
FORMS = [  # (form, how a question or a file name says it)
    ("10-K", re.compile(r"\b10-?K\b|\bannual report\b", re.I)),
    ("10-Q", re.compile(r"\b10-?Q\b|\bquarterly report\b", re.I)),
    ("8-K", re.compile(r"\b8-?K\b|\bcurrent report\b", re.I)),
    ("earnings", re.compile(r"\bearnings(?:\s+(?:release|report|call|press release))?\b|\bpress release\b", re.I)),
]
COVER_FORM = re.compile(r"\bFORM\s+(10-K|10-Q|8-K|20-F|6-K|40-F|10-KT)\b")
COVER_ANNUAL = re.compile(rf"for the (?:fiscal )?year ended\s*:?\s*({MONTH}\s+\d{{1,2}},?\s+(?:19|20)\d{{2}})", re.I)
COVER_QUARTER = re.compile(rf"for the quarterly period ended\s*:?\s*({MONTH}\s+\d{{1,2}},?\s+(?:19|20)\d{{2}})", re.I)
COVER_REPORT = re.compile(rf"date of report\b.{{0,80}}?({MONTH}\s+\d{{1,2}},?\s+(?:19|20)\d{{2}})", re.I | re.S)
RELEASE = re.compile(r"\b(?:reports?|announces?)\b[^.\n]{0,60}\bresults\b|\bpress release\b|\bearnings release\b",
                     re.I)
FISCAL_MENTION = re.compile(r"\b(?:fiscal(?:\s+year)?|FY)\s*['’]?\s*((?:19|20)\d{2}|\d{2})\b", re.I)
QUARTER_MENTION = re.compile(r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?"
                             r"|FY\s*)?((?:19|20)\d{2})\b", re.I)


def _year(text: str) -> int:
    y = int(text)
    return y if y >= 100 else 2000 + y


def _date(text: str) -> Optional[date]:
    for rx, order in ((DATE_MDY, "mdy"), (DATE_DMY, "dmy"), (DATE_ISO, "ymd")):
        m = rx.search(text)
        if not m:
            continue
        try:
            if order == "mdy":
                return date(int(m.group(3)), MONTHS[m.group(1)[:3].lower()], int(m.group(2)))
            if order == "dmy":
                return date(int(m.group(3)), MONTHS[m.group(2)[:3].lower()], int(m.group(1)))
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except (ValueError, KeyError):
            continue
    return None


@dataclass(frozen=True)
class Filing:
    form: Optional[str] = None  # 10-K | 10-Q | 8-K | earnings | 20-F ... | None (not a filing we can tell)
    fiscal_year: Optional[int] = None
    quarter: Optional[int] = None  # 1-4 for a quarterly report or a quarter's release
    annual: bool = False  # covers a whole fiscal year (a 10-K, a full-year/fourth-quarter release)
    period_end: Optional[date] = None
    report_date: Optional[date] = None  # an 8-K's date of report

    @property
    def known(self) -> bool:
        return bool(self.form or self.fiscal_year or self.report_date)


def from_filename(filename: str) -> Filing:
    """What a file name states: "BESTBUY_2024Q2_10Q.pdf", "AMCOR_2023Q4_EARNINGS", "JNJ_2023_8K_dated-2023-08-30"."""
    stem = re.sub(r"\.[A-Za-z0-9]{2,5}$", "", filename or "")
    words = re.sub(r"[_]+", " ", stem)
    form = next((f for f, rx in FORMS if rx.search(words)), None)
    fy = quarter = None
    m = re.search(r"(?<![\dA-Za-z])((?:19|20)\d{2})\s?-?Q([1-4])(?![\dA-Za-z])|(?<![\dA-Za-z])Q([1-4])\s?-?((?:19|20)\d{2})"
                  r"(?!\d)|(?<![\dA-Za-z])(?:FY\s?)?((?:19|20)\d{2})(?![\dA-Za-z-])", words, re.I)
    if m:
        if m.group(1):
            fy, quarter = int(m.group(1)), int(m.group(2))
        elif m.group(3):
            fy, quarter = int(m.group(4)), int(m.group(3))
        else:
            fy = int(m.group(5))
    d = re.search(r"dated[-_ ]?((?:19|20)\d{2}-\d{2}-\d{2})", stem, re.I)
    report = _date(d.group(1)) if d else None
    annual = form == "10-K" or (form == "earnings" and quarter == 4)
    if form == "8-K":
        fy, quarter = None, None  # an 8-K reports an event, not a period
    return Filing(form, fy, quarter, annual, None, report)


def from_text(opening: str, body: str) -> Filing:
    """What the cover page and the text state (``opening``: the first pages; ``body``: the whole text)."""
    head = opening[:4000]
    m = COVER_FORM.search(head)
    form = m.group(1) if m else None
    annual_end = COVER_ANNUAL.search(head)
    quarter_end = COVER_QUARTER.search(head)
    report = COVER_REPORT.search(head)
    period_end = _date(annual_end.group(1)) if annual_end else _date(quarter_end.group(1)) if quarter_end else None
    report_date = _date(report.group(1)) if report else None
    if form is None and report_date:
        form = "8-K"
    if form is None and RELEASE.search(head[:600]):
        form = "earnings"
    if form is None and annual_end:
        form = "10-K"
    if form is None and quarter_end:
        form = "10-Q"
    quarter = None
    if form == "10-Q" or (quarter_end and not annual_end):
        low = body.lower()
        quarter = 3 if "nine months ended" in low else 2 if "six months ended" in low else 1
    fy = _fiscal_year(body, period_end, quarter)
    annual = bool(annual_end) or form in ("10-K", "20-F", "40-F", "10-KT")
    if form == "earnings":
        qs = Counter(ORDINAL[q.group(1).lower()] for q in QUARTER_MENTION.finditer(head))
        fy = fy or _fiscal_year(head, None)
        if re.search(r"\bfull[- ]year\b|\bfiscal (?:year )?(?:19|20)\d{2} results\b|\bfourth quarter\b", head, re.I):
            annual, quarter = True, 4
        elif qs:
            quarter = qs.most_common(1)[0][0]
    if form == "8-K":
        fy, quarter = None, None
    return Filing(form, fy, quarter, annual, period_end, report_date)


def _fiscal_year(body: str, period_end: Optional[date], quarter: Optional[int] = None) -> Optional[int]:
    """The fiscal year a period belongs to. Its end implies one: the calendar year the fiscal year ends in
    (a quarter's end plus the quarters left: Amcor's quarter ended December 31, 2022 is Q2 of fiscal 2023).
    Companies that name a fiscal year after the year it begins in say so in their text ("fiscal 2022" for a
    year ended January 29, 2023): a neighbouring year the text names at least 5 times and 3 times as often as
    the implied one wins (a report names its prior years too, so a mere majority is not enough)."""
    counts = Counter(_year(m.group(1)) for m in FISCAL_MENTION.finditer(body))
    if period_end is None:
        return counts.most_common(1)[0][0] if counts else None
    end = period_end - timedelta(days=7)  # a 52/53-week period ends a few days into the next month
    months = end.year * 12 + end.month - 1 + 3 * (4 - quarter if quarter else 0)
    implied = months // 12
    other = max((implied - 1, implied + 1), key=lambda y: counts.get(y, 0))
    if counts.get(other, 0) >= max(5, 3 * counts.get(implied, 0)):
        return other  # the text clearly names the year otherwise
    return implied


def merge(name: Filing, text: Filing) -> Filing:
    """The file name's statement where it makes one, the text's otherwise."""
    return Filing(name.form or text.form, name.fiscal_year or text.fiscal_year,
                  name.quarter if name.quarter is not None else (None if name.annual else text.quarter),
                  name.annual or (text.annual and name.quarter in (None, 4)),
                  text.period_end, name.report_date or text.report_date)


def _read(kb, tenant: str, doc) -> Filing:
    opening = "\n".join(opening_passages(kb, tenant, doc))
    body = "\n".join(p.text for p in kb.document_passages(tenant, doc.id)[:400])
    return merge(from_filename(doc.filename), from_text(opening, body))


FILINGS = DocCache(_read, limit=2000)


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
            d = _date(m.group(0))
            if d:
                ask.dates.append(d)
            q = q.replace(m.group(0), " ")
    for rx, qi, yi in QUARTER_ASKS:
        for m in list(rx.finditer(q)):
            quarter = m.group(qi)
            quarter = ORDINAL.get(quarter.lower(), None) or int(quarter)
            ask.quarters.append((quarter, _year(m.group(yi))))
            q = q.replace(m.group(0), " ")
    for m in YEAR_ASK.finditer(q):
        y = _year(m.group(1) or m.group(2))
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


def narrow(kb, tenant: str, question: str, docs: list, min_best: float = 0.0) -> tuple[list, str]:
    """(the filings among ``docs`` the question names, why); ``docs`` unchanged when it names none of them
    (or, with ``min_best``, none matches that well)."""
    if len(docs) < 2:
        return docs, ""
    ask = ask_of(question)
    if not ask.names_any:
        return docs, ""
    scored = []
    filings = [(d, FILINGS.get(kb, tenant, d)) for d in docs]
    if not all(f.form for _, f in filings):
        return docs, ""  # not all of them are filings (contracts, notes): a period names none of them
    for d, f in filings:
        s = match(ask, f)
        if s is not None:
            scored.append((s, d))
    if not scored:
        return docs, ""
    best = max(s for s, _ in scored)
    if min_best and best < min_best:
        return docs, ""
    if best <= 0:
        kept = [d for _, d in scored]  # only forms excluded
    else:
        kept = [d for s, d in scored if s == best]
    if len(kept) == len(docs):
        return docs, ""
    return kept, "the filing for the period or form the question names"


DATE_PHRASE = re.compile(rf"(?:,\s*)?\b(?:as (?:of|at)|on|from|dated|since)?\s*(?:{DATE_MDY.pattern}|{DATE_DMY.pattern}|"
                         rf"{DATE_ISO.pattern})(?:\s+onwards?)?", re.I)


def without_filing_date(kb, tenant: str, question: str, doc_ids: list[str]) -> str:
    """``question`` without a date that is the date of report of the filing answering it ("... from the
    separation of Kenvue, as of August 30, 2023?" over the 8-K dated August 30, 2023): that date names the
    filing, it is no period a sentence of it must state."""
    dates = {}
    for m in DATE_PHRASE.finditer(question):
        d = _date(m.group(0))
        if d:
            dates[m.group(0)] = d
    if not dates or not doc_ids:
        return question
    docs = [d for d in kb.list_documents(tenant) if d.id in set(doc_ids)]
    reported = [f.report_date for f in (FILINGS.get(kb, tenant, d) for d in docs) if f.report_date]
    out = question
    for phrase, d in dates.items():
        if any(abs((r - d).days) <= 3 for r in reported):
            out = out.replace(phrase, " ")
    return " ".join(out.split()).replace(" ?", "?")
