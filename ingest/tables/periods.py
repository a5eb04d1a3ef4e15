"""The period a column header names, normalised for the BI planner.

"Years Ended December 31, 2021" -> 2021 (12 months to 2021-12-31); "Fiscal 2018" / "FY19" -> FY2018 / FY2019;
"Q4 2024" / "Fourth quarter 2024" -> Q4 2024; "H1 2023" / "First half 2023" -> H1 2023 (6 months);
"Three Months Ended June 30, 2023" -> 3M 2023-06-30; "July 27, 2019" / "As of December 31, 2023" /
"31 December 2023" -> an instant (2019-07-27); "2021" -> 2021.
A "% change" or "2021 vs 2020" column names no period.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9
MONTH_RE = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
DATE = re.compile(MONTH_RE + r"\.?\s+(\d{1,2})(?!\d)(?:st|nd|rd|th)?,?\s*('?\d{2,4})?", re.I)
DAY_FIRST = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + MONTH_RE + r"\.?,?\s+((?:19|20)\d\d)\b", re.I)
DAY_FIRST_BARE = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + MONTH_RE + r"\b(?!\.?,?\s*\d)", re.I)
HALF = re.compile(r"\b(?:H([12])|([12])H|(first|second)\s+half(?:[\s-]+year)?)\b", re.I)
NUM_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)?\d\d)\b")
YEAR = re.compile(r"(?<![\d.,$])((?:19|20)\d\d)(?![\d,]|\.\d)")
FY = re.compile(r"\b(?:FY|fiscal(?:\s+year)?|F)\s*'?((?:19|20)?\d\d)\b", re.I)
QUARTER = re.compile(r"\b(?:Q([1-4])|([1-4])Q)\s*(?:FY)?\s*'?((?:19|20)?\d\d)?\b", re.I)
QUARTER_WORDS = re.compile(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter", re.I)
ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
DURATION = [
    (re.compile(r"\b(three|3)[\s-]+months?\b|\b13[\s-]+weeks?\b|\bquarters?\s+ended\b", re.I), 3),
    (re.compile(r"\b(six|6)[\s-]+months?\b|\b26[\s-]+weeks?\b|\bhalf[\s-]+year\b", re.I), 6),
    (re.compile(r"\b(nine|9)[\s-]+months?\b|\b39[\s-]+weeks?\b", re.I), 9),
    (re.compile(r"\b(twelve|12)[\s-]+months?\b|\b5[23][\s-]+weeks?\b|\byears?\b|\bannual\b|\bfiscal\b", re.I), 12),
]
INSTANT = re.compile(r"\b(as\s+(of|at)|balance\s+at|at\s+(?=" + MONTH_RE + r"))", re.I)
NOT_A_PERIOD = re.compile(r"%\s*change|\bchange\b|\bvs\.?\b|\bversus\b|\bvariance\b|\bcompared\b|\bincrease\b|"
                          r"\bdecrease\b|\bgrowth\b|\b(19|20)\d\d\s*[-–/]\s*(19|20)?\d\d\b", re.I)


@dataclass
class Period:
    key: str  # "2021", "FY2019", "Q4 2024", "2023-06-30", "6M 2023-06-30"
    end: str = ""  # ISO date
    months: int = 0
    year: int = 0
    quarter: int = 0


def _year(text: str) -> int:
    y = int(text.lstrip("'"))
    return y + (2000 if y < 70 else 1900) if y < 100 else y


def parse_period(header: str, context: str = "") -> Period | None:
    """The period a column header names; ``context`` (the table's caption/group header) fills in what the
    header leaves out, e.g. "Six Months Ended" above a column headed "2022"."""
    h, context = (DAY_FIRST_BARE.sub(r"\2 \1,", DAY_FIRST.sub(r"\2 \1, \3", " ".join(str(t or "").split())))
                  for t in (header, context))  # "31 December 2023", "six months ended 30 June"
    if not h or NOT_A_PERIOD.search(h):
        return None
    years = {_year(y) for y in YEAR.findall(h)}
    if len(years) > 1 and not DATE.search(h):
        return None
    months = next((m for rx, m in DURATION if rx.search(h)), 0)
    quarter, year = 0, 0
    qm = QUARTER.search(h)
    if qm and (qm.group(3) or years):
        quarter, year = int(qm.group(1) or qm.group(2)), _year(qm.group(3)) if qm.group(3) else max(years)
    elif QUARTER_WORDS.search(h) and years:
        quarter, year = ORDINAL[QUARTER_WORDS.search(h).group(1).lower()], max(years)
    elif (qm or QUARTER_WORDS.search(h)) and context:
        ctx_years = {_year(y) for y in YEAR.findall(context)}
        if len(ctx_years) == 1:  # "Q1 .. Q4" under a caption naming one (fiscal) year
            quarter = int(qm.group(1) or qm.group(2)) if qm else ORDINAL[QUARTER_WORDS.search(h).group(1).lower()]
            year = ctx_years.pop()
    if quarter:
        return Period(f"Q{quarter} {year}", months=3, year=year, quarter=quarter)
    hm = HALF.search(h)
    if hm and years and not DATE.search(h):  # "H1 2023", "First half 2023"
        half = int(hm.group(1) or hm.group(2) or (1 if hm.group(3).lower() == "first" else 2))
        return Period(f"H{half} {max(years)}", months=6, year=max(years))
    fm = FY.search(h)
    if fm and (len(fm.group(1)) == 4 or "'" in h or re.search(r"FY\s*'?\d\d\b", h, re.I)) \
            and not DATE.search(h):
        fy = _year(fm.group(1))
        return Period(f"FY{fy}", months=12, year=fy)
    end = ""
    dm = DATE.search(h)
    if dm:
        day = int(dm.group(2))
        y = _year(dm.group(3)) if dm.group(3) else (max(years) if years else 0)
        month = MONTHS.get(dm.group(1).lower().rstrip(".")[:4], MONTHS.get(dm.group(1).lower()[:3], 0))
        if y and month and 1 <= day <= 31:
            end, year = f"{y:04d}-{month:02d}-{day:02d}", y
    else:
        nm = NUM_DATE.search(h)
        if nm:
            y = _year(nm.group(3))
            end, year = f"{y:04d}-{int(nm.group(1)):02d}-{int(nm.group(2)):02d}", y
    if not year and years:
        year = max(years)
    if not year:
        return None
    if not months and context and not INSTANT.search(h) and not dm:  # "June 30, 2023" alone is an instant
        c = " ".join(context.split())
        found = {m for rx, m in DURATION if rx.search(c)}
        if len(found) == 1 and not INSTANT.search(c):
            months = found.pop()
    if not end and months and context:
        cm = DATE.search(h) or _context_date(context)
        if cm:
            month = MONTHS.get(cm.group(1).lower()[:3], 0)
            if month:
                end = f"{year:04d}-{month:02d}-{int(cm.group(2)):02d}"
    if months == 12 or (not months and not end):
        return Period(str(year), end, 12 if months == 12 else 0, year)
    if months:
        return Period(f"{months}M {end or year}", end, months, year)
    return Period(end, end, 0, year)  # an instant: a balance sheet date


def _context_date(context: str):
    """A month-day without its own year in the caption ("Years Ended December 31,"), if exactly one."""
    found = [m for m in DATE.finditer(context) if not m.group(3)]
    days = {(m.group(1).lower()[:3], m.group(2)) for m in found}
    return found[0] if len(days) == 1 else None
