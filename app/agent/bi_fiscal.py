"""A quarterly filing's fiscal calendar: which fiscal year and quarter each column is, as the company names them.

A 10-Q prints "Three / Six Months Ended July 29, 2023" and a balance sheet "as of" July 29, 2023 and January 28,
2023; the table catalogue reads those as calendar 2023. Analysts ask "Q2 of FY2024" and "FY 2023": the
cumulative column ("Six Months Ended") says which quarter its end date closes (6 months: Q2), and the fiscal year
is the one that ends (12 - 6) months later (January 2024: FY2024; a year ending in the first days of January,
as a 52/53-week calendar year does, is the year before). Instant columns on a quarter's end date take that
quarter; those on the fiscal year's end (± 7 days) that year. Filings without cumulative quarterly columns
(annual reports) are left as read.
"""
from __future__ import annotations

from datetime import date
from typing import Optional

from app.agent.bi_periods import Period
from app.agent.bi_table import TableView


def _date(iso: str) -> Optional[date]:
    try:
        return date.fromisoformat(iso[:10])
    except (TypeError, ValueError):
        return None


def _plus_months(d: date, n: int) -> date:
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    day = min(d.day, [31, 29 if y % 4 == 0 and (y % 100 or y % 400 == 0) else 28, 31, 30, 31, 30, 31, 31, 30, 31,
                      30, 31][m - 1])
    return date(y, m, day)


def _fy_of_end(end: date) -> int:
    return end.year - 1 if end.month == 1 and end.day <= 10 else end.year


def calendar(views: list[TableView]) -> dict[date, Period]:
    """End date of each quarter a cumulative (6 or 9 months) column closes -> (fiscal year, quarter)."""
    months: dict[date, int] = {}
    for v in views:
        for c in v.cols:
            d = _date(c.end)
            if d is not None and c.months in (6, 9):
                months[d] = max(months.get(d, 0), c.months)
    return {d: Period(_fy_of_end(_plus_months(d, 12 - m)), m // 3) for d, m in months.items()}


def apply(views: list[TableView]) -> None:
    """Re-read the periods of one document's columns by its fiscal calendar (in place; the same every time)."""
    cal = calendar(views)
    if not cal:
        return
    year_ends = {}
    for d, p in cal.items():  # the fiscal year before the quarter's ends when the year began
        start = _plus_months(d, -3 * p.quarter)
        year_ends[start] = p.year - 1
    for v in views:
        for c in v.cols:
            d = _date(c.end)
            if d is None or c.months == 12:
                continue
            if d in cal:
                c.period = cal[d]
                continue
            near = [y for e, y in year_ends.items() if abs((e - d).days) <= 7]
            if near and c.months == 0:
                c.period = Period(near[0])
            else:
                for e, p in cal.items():  # the same quarter a year earlier or later
                    if abs((_plus_months(e, -12) - d).days) <= 7:
                        c.period = Period(p.year - 1, p.quarter)
                    elif abs((_plus_months(e, 12) - d).days) <= 7:
                        c.period = Period(p.year + 1, p.quarter)
