"""Cleaning a raw grid before typing: merged rows split, empty and currency-sign columns dropped, value
columns that never share a row folded together, and the header rows found."""
from __future__ import annotations

import re

from ingest.parsers.document import Cell

CURRENCY_ONLY = {"$", "€", "£", "¥", "US$", "USD", "EUR"}
DATE_HEADER = re.compile(r"^(as\s+(of|at)\s+)?([A-Z][a-z]{2,8}\.?\s+\d{1,2}|\d{1,2}\s+[A-Z][a-z]{2,8}),?(\s+(19|20)\d\d)?$")
PERIOD_CELL = re.compile(r"^((FY|Q[1-4]|[1-4]Q|H[12])\s?'?\d{2,4}|(19|20)\d\d[A-Z]?|fiscal\s+(19|20)\d\d|"
                         r"(19|20)\d\d\s*(\(\w+\))?)$", re.I)


def blank(c: Cell) -> bool:
    return c is None or (isinstance(c, str) and not c.strip())


def periodish(c: Cell) -> bool:
    s = str(c).strip() if not blank(c) else ""
    return bool(s) and bool(PERIOD_CELL.match(s) or DATE_HEADER.match(s))


def split_merged_rows(rows: list[list[Cell]], is_number) -> list[list[Cell]]:
    """A row whose numeric cells each hold k > 1 lines ("1,234\\n5,678") is k rows packed into one."""
    out = []
    for r in rows:
        parts = [str(c).split("\n") if isinstance(c, str) else [c] for c in r]
        numeric = [p for p, c in zip(parts, r) if isinstance(c, str) and len(p) > 1 and all(is_number(x) for x in p)]
        k = len(numeric[0]) if numeric else 1
        if k > 1 and all(len(p) == k for p in numeric) and len(numeric) >= 1:
            for i in range(k):
                out.append([(p[i] if len(p) == k else (p[0] if i == 0 and len(p) == 1 else
                             (" ".join(p) if i == 0 else None))) for p in parts])
            continue
        out.append([" ".join(str(c).split()) if isinstance(c, str) else c for c in r])
    return out


def drop_empty_columns(rows: list[list[Cell]]) -> tuple[list[list[Cell]], str]:
    """Columns with nothing, or only currency signs, go; returns the currency seen in them."""
    width = max(len(r) for r in rows)
    rows = [r + [None] * (width - len(r)) for r in rows]
    currency = ""
    keep = []
    for j in range(width):
        cells = [str(r[j]).strip() for r in rows if not blank(r[j])]
        if not cells:
            continue
        if all(c in CURRENCY_ONLY for c in cells) and j > 0:
            currency = currency or ("USD" if cells[0] in ("$", "US$", "USD") else cells[0])
            continue
        keep.append(j)
    rows = [[(None if (isinstance(r[j], str) and r[j].strip() in CURRENCY_ONLY) else r[j]) for j in keep]
            for r in rows]
    return rows, currency


def fold_columns(rows: list[list[Cell]], header_rows: int) -> list[list[Cell]]:
    """Adjacent value columns that are never both filled in a data row are one column printed unevenly
    (pdfplumber grids of shaded statements); their header cells are joined. A column with a header and no
    data at all (a header printed across a currency-sign column) joins its neighbour with data."""
    data = rows[header_rows:]
    j = 1
    while data and j < len(rows[0]):
        if all(blank(r[j]) for r in data) and len(rows[0]) > 2:
            k = j + 1 if j + 1 < len(rows[0]) and any(not blank(r[j + 1]) for r in data) else j - 1
            if k >= 1:
                for r in rows[:header_rows]:
                    a, b = (r[j], r[k]) if j < k else (r[k], r[j])
                    parts = [str(x).strip() for x in (a, b) if not blank(x)]
                    r[k] = " ".join(dict.fromkeys(parts)) or None
                for r in rows:
                    del r[j]
                continue
        j += 1
    changed = True
    while changed:
        changed = False
        width = len(rows[0]) if rows else 0
        for j in range(1, width - 1):
            data = rows[header_rows:]
            if not data:
                break
            a_used = sum(not blank(r[j]) for r in data)
            b_used = sum(not blank(r[j + 1]) for r in data)
            both = sum(not blank(r[j]) and not blank(r[j + 1]) for r in data)
            if both == 0 and a_used and b_used:
                heads = [r for r in rows[:header_rows]]
                if any(not blank(h[j]) and not blank(h[j + 1]) and h[j] != h[j + 1] for h in heads):
                    continue  # two headed columns that happen to alternate
                for r in rows:
                    if blank(r[j]):
                        r[j] = r[j + 1]
                    del r[j + 1]
                changed = True
                break
    return rows


# a row label with the first period's value glued on ("Net cash provided by operating activities 3,676.2",
# "Divestitures loss -"): a PDF grid that put the first value column inside the label column
GLUED = re.compile(r"^(?P<label>.*[A-Za-z)].*?)[\s.]+(?P<value>\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?%?|[-\u2014\u2013])$")


def split_glued_values(rows: list[list[Cell]], header_rows: int) -> list[list[Cell]]:
    """The label column's header is a period ("2020" over the labels, "Fiscal Year 2019" over the next column) and
    most labels end with a number: the first value column was read into the labels. It becomes its own column,
    under that header."""
    head = [rows[i][0] for i in range(header_rows) if not blank(rows[i][0])]
    if not head or not any(periodish(c) for c in head):
        return rows
    labels = [str(r[0]) for r in rows[header_rows:] if not blank(r[0])]
    glued = [GLUED.match(lb) for lb in labels]
    if sum(bool(g) for g in glued) < max(2, 0.6 * len(labels)):
        return rows
    out = []
    for i, r in enumerate(rows):
        if i < header_rows:
            out.append([None, r[0]] + list(r[1:]))
            continue
        m = GLUED.match(str(r[0])) if not blank(r[0]) else None
        out.append([m["label"].strip(), m["value"]] + list(r[1:]) if m else [r[0], None] + list(r[1:]))
    return out
