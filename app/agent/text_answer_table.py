"""Which periods a table reports a line for: "In which years was Other assets provided?" -> "2019 and 2018".

A question that asks which years (or periods) a table covers for a line item is answered by the table's own
header: the row whose label carries the question's terms, and the years of the header row above it. The quote
is the table text from that header row down to the row (verbatim, so it can be checked and cited). Questions
that compare years ("In which year was X larger?") are computations, left to the BI route.
"""
from __future__ import annotations

import re

from app.agent.text import content_words
from app.agent.text_spans import YEAR, Ask

COMPARE = re.compile(r"\b(?:larger|largest|higher|highest|lower|lowest|more|less|most|least|greater|greatest|"
                     r"smaller|smallest|exceed\w*|above|below|than|increase\w*|decrease\w*|maximum|minimum|over|under)\b",
                     re.I)
MAX_LINES = 25  # header to row, at most


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split("\t")]


def header_years(line: str) -> list[str]:
    """The years of a header row ("\\t2019\\t2018", "Fiscal 2019\\tFiscal 2018"), in order; [] if not one."""
    if "\t" not in line:
        return []
    years = []
    for cell in _cells(line):  # the label cell may be empty, or dropped when it was
        ys = YEAR.findall(cell)
        if len(ys) == 1:
            years.append(ys[0])
    return years if len(years) >= 2 else []


LISTING = content_words("table provide provided information calculated shown presented reported recorded included "
                        "listed disclosed")


def row_terms(ask: Ask) -> set[str]:
    """The question's terms that name the line item (not "provided", "calculated", "table")."""
    return ask.key - LISTING


def table_years(ask: Ask, question: str, passages: list[dict]) -> tuple[str, dict, str] | None:
    """(answer, passage, quote) for a which-years question over a table row, or None."""
    if ask.kind != "years" or COMPARE.search(question):
        return None
    key = row_terms(ask)
    if not key:
        return None
    best = None
    for p in passages:
        text = p.get("text") or ""
        lines = text.split("\n")
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line) + 1)
        header, header_i = [], -1
        for i, line in enumerate(lines):
            ys = header_years(line)
            if ys:
                header, header_i = ys, i
                continue
            if not header or "\t" not in line or i - header_i > MAX_LINES:
                continue
            label = _cells(line)[0]
            share = len(content_words(label) & key) / len(key)
            if share >= 0.5 and (best is None or share > best[0]):
                quote = text[offsets[header_i]: offsets[i] + len(line)].strip("\n")
                best = (share, " and ".join(dict.fromkeys(header)), p, quote)
    return (best[1], best[2], best[3]) if best else None
