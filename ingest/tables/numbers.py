"""Numbers as financial statements print them: "(1,234.5)" is negative, "$ 12" carries its currency, "12.5%"
is a percent, "—" / "$-" / "n/a" are explicit blanks (a value of None), anything else is not a number."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.parsers.document import Cell

DASHES = {"-", "—", "–", "−", "--", "n/a", "na", "n.a.", "nm", "*"}
NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$")
CURRENCIES = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}


@dataclass
class ParsedNumber:
    value: float | None  # None = an explicit blank such as "—"
    currency: str = ""
    percent: bool = False


def parse_number(cell: Cell) -> ParsedNumber | None:
    """A number from a financial-statement cell, or None when the cell is not numeric."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return ParsedNumber(float(cell))
    if cell is None:
        return None
    s = str(cell).strip().replace("\u00a0", " ")
    if not s:
        return None
    if s.lower() in DASHES:
        return ParsedNumber(None)
    negative = False
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1].strip()
    currency = ""
    for sym, code in CURRENCIES.items():
        if sym in s:
            currency, s = code, s.replace(sym, "")
    if s.upper().startswith("USD"):
        currency, s = "USD", s[3:]
    if s.strip() in DASHES and currency:
        return ParsedNumber(None, currency)  # "$-", "$ —": an explicit blank
    percent = s.endswith("%")
    s = s.rstrip("%").replace(" ", "")
    if s.startswith(("−", "–")):
        s = "-" + s[1:]
    if s.startswith("(") and s.endswith(")"):
        negative, s = True, s[1:-1]
    if not s or not NUMBER.match(s) or not any(ch.isdigit() for ch in s):
        return None
    value = float(s.replace(",", ""))
    return ParsedNumber(-value if negative else value, currency, percent)
