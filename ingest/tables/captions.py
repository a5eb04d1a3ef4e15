"""Captions printed inside a table's grid: the company name, the statement's title, "(Unaudited)" and
"(in millions)" read as header cells spanning the columns are captions (notes for the scale and the
statement kind), not column names -- unlike a group header such as "Years Ended December 31,"."""
from __future__ import annotations

import re

from ingest.parsers.document import Cell
from ingest.tables.grid import blank, periodish
from ingest.tables.numbers import parse_number
from ingest.tables.rows import SUMMARY, find_scale, statement_title

CAPTION = re.compile(r"\b(in\s+(thousands|millions|billions)|except\s+per|unaudited|statements?\s+of|balance\s+sheets?|"
                     r"consolidated|dollars|amounts)\b|^\(.*\)$", re.I)
PERIOD_WORDS = re.compile(r"\b(ended|ending|months|weeks|years?|quarters?|as\s+(of|at)|fiscal)\b|(?<!\d)(19|20)\d\d(?!\d)",
                          re.I)
COMPANY = re.compile(r"\b(inc|corp|corporation|company|co|plc|ltd|limited|llc|l\.?p|n\.?v|s\.?a|ag|se|group|holdings)\b\.?|"
                     r"\band\s+subsidiaries\b", re.I)
JUNK_TITLE = re.compile(r"^(table\s+of\s+contents|index|\d+|page\s+\d+)$", re.I)


def is_text(cell: Cell) -> bool:
    return cell not in (None, "") and parse_number(cell) is None


def spanning_text(row: list[Cell], across: bool = False) -> str | None:
    """The one text of a row whose filled cells all say the same (a caption printed across the table; with
    ``across``, in two cells or more, or in the first)."""
    cells = [str(c).strip() for c in row if not blank(c)]
    filled = set(cells)
    if len(filled) != 1 or (across and len(cells) < 2 and blank(row[0])):
        return None
    text = filled.pop()
    return text if is_text(text) and not periodish(text) else None


def title_rows(rows, notes):
    """Caption rows at the top of a grid: a lone text in the first cell, or one text printed across the table
    (company name, statement title, "(Unaudited)", "(in millions)") -- not a group header such as "Years Ended
    December 31,". Returns (rows below them, title, how many, the caption texts)."""
    title, statement_line, n, captions = "", "", 0, []
    width = len(rows[0])
    while len(rows) - n > 2 and width > 1:
        row = rows[n]
        text = spanning_text(row, across=True)
        if text is None:
            break
        one_cell = sum(not blank(c) for c in row) == 1 and not blank(row[0])
        named = bool(statement_title(text) or CAPTION.search(text) or COMPANY.search(text) or SUMMARY.search(text)
                     or (text.isupper() and len(text) > 3))
        ahead = any(statement_title(t or "") for t in (spanning_text(r, across=True) for r in rows[n + 1:n + 3]))
        if not one_cell and (PERIOD_WORDS.search(text) or not (named or ahead)):
            break
        notes.append(text)
        captions.append(text)
        title = title or text
        statement_line = statement_line or (text if statement_title(text) else "")
        n += 1
    return rows[n:], statement_line or title, n, captions


def caption_header_rows(header: list[list[Cell]], notes: list) -> list[str]:
    """Header rows that are a caption printed across the columns ("(in thousands, except per share data)",
    a statement title) say nothing about one column: they go to the notes and leave the labels."""
    out = []
    for h in header:
        text = spanning_text(h)
        across = sum(not blank(c) for c in h) >= 2  # over one column it is that column's header
        if text and not PERIOD_WORDS.search(text) and (find_scale(text) or re.fullmatch(r"\(.*\)", text)
                                                       or (across and statement_title(text))):
            notes.append(text)
            out.append(text)
            for j in range(len(h)):
                h[j] = None
    return out
