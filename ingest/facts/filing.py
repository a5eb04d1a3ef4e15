"""Which filing a document is: form, fiscal year, quarter, period end, date of report. Read once at ingest.

- its cover page: the form ("FORM 10-Q"), "For the fiscal year ended June 30, 2016" (annual), "For the
  quarterly period ended July 29, 2023" (quarterly), an 8-K's "Date of Report ...: July 1, 2022", an earnings
  release's "reports fiscal 2023 results" / "fourth quarter";
- the fiscal year a period belongs to from the text ("fiscal 2024" most often near the period's end year:
  a quarter ended July 29, 2023 can be Q2 of fiscal 2024), the quarter of a 10-Q from "six/nine months
  ended" (Q2/Q3, else Q1);
- a file name in the usual form ("NAME_2024Q2_10Q", "NAME_2022_8K_dated-2022-07-01") states them directly
  and wins where it does.
The date grammar here is also how the agent reads the dates a question names (``app.agent.filing_scope``).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Optional

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
BODY_PASSAGES = 400  # the passages the fiscal year and quarter are read from


def year(text: str) -> int:
    y = int(text)
    return y if y >= 100 else 2000 + y


def parse_date(text: str) -> Optional[date]:
    """The first date written in ``text`` ("July 1, 2022", "1st July 2022", "2022-07-01")."""
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


def dates_in(text: str) -> list[date]:
    """Every date written in ``text``, in order, without repeats."""
    found = []
    for rx in (DATE_MDY, DATE_DMY, DATE_ISO):
        for m in rx.finditer(text):
            d = parse_date(m.group(0))
            if d is not None:
                found.append((m.start(), d))
    return list(dict.fromkeys(d for _, d in sorted(found, key=lambda x: x[0])))


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

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("period_end", "report_date"):
            d[k] = d[k].isoformat() if d[k] else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Filing":
        d = dict(d or {})
        for k in ("period_end", "report_date"):
            d[k] = date.fromisoformat(d[k]) if d.get(k) else None
        return cls(**{k: d.get(k) for k in ("form", "fiscal_year", "quarter", "period_end", "report_date")},
                   annual=bool(d.get("annual")))


def from_filename(filename: str) -> Filing:
    """What a file name states: "NAME_2024Q2_10Q.pdf", "NAME_2023Q4_EARNINGS", "NAME_2023_8K_dated-2023-08-30"."""
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
    report = parse_date(d.group(1)) if d else None
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
    period_end = parse_date(annual_end.group(1)) if annual_end else parse_date(quarter_end.group(1)) if quarter_end else None
    report_date = parse_date(report.group(1)) if report else None
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
    fy = fiscal_year(body, period_end, quarter)
    annual = bool(annual_end) or form in ("10-K", "20-F", "40-F", "10-KT")
    if form == "earnings":
        qs = Counter(ORDINAL[q.group(1).lower()] for q in QUARTER_MENTION.finditer(head))
        fy = fy or fiscal_year(head, None)
        if re.search(r"\bfull[- ]year\b|\bfiscal (?:year )?(?:19|20)\d{2} results\b|\bfourth quarter\b", head, re.I):
            annual, quarter = True, 4
        elif qs:
            quarter = qs.most_common(1)[0][0]
    if form == "8-K":
        fy, quarter = None, None
    return Filing(form, fy, quarter, annual, period_end, report_date)


def fiscal_year(body: str, period_end: Optional[date], quarter: Optional[int] = None) -> Optional[int]:
    """The fiscal year a period belongs to. Its end implies one: the calendar year the fiscal year ends in
    (a quarter's end plus the quarters left: a quarter ended December 31, 2022 of a year ending in June is Q2
    of fiscal 2023). Companies that name a fiscal year after the year it begins in say so in their text
    ("fiscal 2022" for a year ended January 29, 2023): a neighbouring year the text names at least 5 times and
    3 times as often as the implied one wins (a report names its prior years too, so a mere majority is not
    enough)."""
    counts = Counter(year(m.group(1)) for m in FISCAL_MENTION.finditer(body))
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


def read_filing(filename: str, opening_texts: list[str], texts: list[str]) -> Filing:
    """The filing a document is, from its file name, its opening passages and its first BODY_PASSAGES passages."""
    return merge(from_filename(filename), from_text("\n".join(opening_texts), "\n".join(texts[:BODY_PASSAGES])))
