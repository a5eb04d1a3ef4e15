"""A filing's fiscal calendar: which fiscal year and quarter each column is, as the company names them.

A 10-Q prints "Three / Six Months Ended July 29, 2023" and a balance sheet "as of" July 29, 2023 and January 28,
2023; the table catalogue reads those as calendar 2023. Analysts ask "Q2 of FY2024" and "FY 2023": the
cumulative column ("Six Months Ended") says which quarter its end date closes (6 months: Q2), and the fiscal year
is the one that ends (12 - 6) months later (January 2024: FY2024; a year ending in the first days of January,
as a 52/53-week calendar year does, is the year before). Instant columns on a quarter's end date take that
quarter; those on the fiscal year's end (± 7 days) that year. Filings without cumulative quarterly columns
(annual reports) keep their columns as the catalogue read them.

Read once per document at ingest from the catalogue's column entries (``period_end``, ``period_months``); the
result is the calendar and, per table, the columns whose period it changes: ``{sql_name: {column: [year,
quarter or None]}}``.
"""
from __future__ import annotations

from datetime import date
from typing import Optional

Period = tuple[int, Optional[int]]  # (fiscal year, quarter or None)


def _date(iso: str) -> Optional[date]:
    try:
        return date.fromisoformat(str(iso)[:10])
    except (TypeError, ValueError):
        return None


def plus_months(d: date, n: int) -> date:
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    day = min(d.day, [31, 29 if y % 4 == 0 and (y % 100 or y % 400 == 0) else 28, 31, 30, 31, 30, 31, 31, 30, 31,
                      30, 31][m - 1])
    return date(y, m, day)


def _fy_of_end(end: date) -> int:
    return end.year - 1 if end.month == 1 and end.day <= 10 else end.year


def _dated(columns: list[dict]) -> list[tuple[str, date, int]]:
    """(name, end, months) of the value columns with an end date."""
    out = []
    for c in columns:
        d = _date(c.get("period_end") or "")
        if d is not None and str(c.get("sql_type", "")).upper() != "TEXT":
            out.append((c["name"], d, int(c.get("period_months") or 0)))
    return out


def calendar(tables: dict[str, list[dict]]) -> dict[date, Period]:
    """End date of each quarter a cumulative (6 or 9 months) column closes -> (fiscal year, quarter)."""
    months: dict[date, int] = {}
    for columns in tables.values():
        for _name, d, m in _dated(columns):
            if m in (6, 9):
                months[d] = max(months.get(d, 0), m)
    return {d: (_fy_of_end(plus_months(d, 12 - m)), m // 3) for d, m in months.items()}


def column_periods(tables: dict[str, list[dict]], cal: dict[date, Period]) -> dict[str, dict[str, Period]]:
    """The columns whose period the fiscal calendar re-reads: ``{sql_name: {column: (year, quarter)}}``."""
    if not cal:
        return {}
    year_ends = {}
    for d, (fy, q) in cal.items():  # the fiscal year before the quarter's ends when the year began
        year_ends[plus_months(d, -3 * q)] = fy - 1
    out: dict[str, dict[str, Period]] = {}
    for name, columns in tables.items():
        for col, d, months in _dated(columns):
            if months == 12:
                continue
            period = None
            if d in cal:
                period = cal[d]
            else:
                near = [y for e, y in year_ends.items() if abs((e - d).days) <= 7]
                if near and months == 0:
                    period = (near[0], None)
                else:
                    for e, (fy, q) in cal.items():  # the same quarter a year earlier or later
                        if abs((plus_months(e, -12) - d).days) <= 7:
                            period = (fy - 1, q)
                        elif abs((plus_months(e, 12) - d).days) <= 7:
                            period = (fy + 1, q)
            if period is not None:
                out.setdefault(name, {})[col] = period
    return out
