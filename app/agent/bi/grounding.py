"""Is a BI program grounded? ``supported`` means the cells are what the question asks, not that SQL ran.

A program is grounded when
- every row it names is named by the question with high confidence: the row label's words are the
  question's words or their synonyms ("capital expenditure" ~ "purchases of property, plant and equipment"),
  or the label's embedding is close to the question's item words with a word in common;
- the question's item words are explained by the rows, columns and table title used (nothing asked left out;
  a name it gives, "Blizzard net bookings", is explained whatever the share of the rest), and a row printed under
  several sections ("Net sales" under 2019 and 2018) is one whose section the question names;
- every period the question asks is a column the program reads (or, for a table without period columns, is
  stated in its title or headers; a quarter named without its year, a quarter column); a table with several
  periods and a question naming none is a guess;
- the table's columns are read as printed: no header row inside the body above the rows used, no numbers
  left in a text column (a "∆%" column read as a period column);
- the table is from the document in scope (the planner only sees tables of the documents in scope, and a
  company the question names restricts that scope, ``company_scope``).
Otherwise ``doubts`` says why and the answer is given as found, not supported.
"""
from __future__ import annotations

import re
from typing import Optional

from app.agent.bi.count import scale_unknown
from app.agent.bi.ground import FOOTNOTE, TOTAL_WORDS, expanded_words
from app.agent.bi.question import WHICH, ParsedQuestion, entity_text, names_percent, operations_asked
from app.agent.text import WORD, content_words
from app.agent.text_spans import asked_heads
from app.agent.vocabulary import phrase_regex, row_kinds, vocabulary, word_lists

LUMPED = phrase_regex(vocabulary().get("lumped_rows") or ())  # data: "Interest and other expense"
ROW_LEX = 0.75  # (almost) every label word named by the question or a synonym
ROW_DENSE = 0.75  # or an embedding this close, sharing a word
COVER = 0.6  # share of the question's item words the rows, columns and title used explain
ALL_PERIOD_OPS = ("average", "max", "min", "count")  # over every period when none is named


# say how much, not which item (app/data/vocabulary.yaml `generic_words`)
_GENERIC_WORDS = word_lists("generic_words", ("amounts", "whole_columns"))
GENERIC = content_words(" ".join(_GENERIC_WORDS["amounts"]))
WHOLE_COLUMNS = content_words(" ".join(_GENERIC_WORDS["whole_columns"]))


def _sole_head(m, matches: list) -> bool:
    """The label's head word (its last, "inventories" of "Merchandise inventories") is named by the question
    and no other row of the table has the words matched: the one row it can mean."""
    words = [w for w in content_words(m.row.label)]
    head = content_words(m.row.label.split()[-1]) if m.row.label.split() else set()
    if not words or not head or not head <= m.matched:
        return False
    return not any(o is not m and m.matched <= (o.matched | frozenset()) and o.matched for o in matches)


OF_HEAD = re.compile(r"^(.*?)\s+of\s+\S", re.I)


def unnamed_head(m) -> str:
    """The head word of an "A of B" label that the question does not name: "Cost of license and subscription
    revenue" is a cost, not the revenue a question about "license and subscription revenue" asks for. The head
    is the last word before the first "of" ("Proceeds from issuance of debt": issuance); a word that says how
    much ("Number of shares") names no item. Empty where the head is named or the label has no "of"."""
    label = FOOTNOTE.sub("", m.row.label) or m.row.label
    head = OF_HEAD.match(label)
    last = head.group(1).split()[-1:] if head and m.matched else []
    words = content_words(last[0]) - GENERIC - TOTAL_WORDS if last else set()
    return "" if not words or words & m.matched else last[0]


def grounding_doubts(view, pq: ParsedQuestion, matches: list, prog) -> list[str]:
    doubts: list[str] = []
    rows = list({id(o.row): o.row for o in prog.operands}.values())
    over_all_rows = len(rows) > 2 and (pq.breakdown or prog.op in ("max", "min", "count"))
    by_row = {id(m.row): m for m in matches}
    if not over_all_rows:
        for row in rows:
            m = by_row.get(id(row))
            if m is None or not (max(m.lex, m.named) >= ROW_LEX or (m.dense >= ROW_DENSE and m.matched) or _sole_head(m, matches)):
                doubts.append(f"the row {row.label!r} is not clearly what the question names")
            elif m is not None and (head := unnamed_head(m)):
                doubts.append(f"the row {row.label!r} is a {head.lower()}, which the question does not name")
            elif (lump := LUMPED.search(row.label)) and not LUMPED.search(pq.text):
                doubts.append(f"the row {row.label!r} holds the item {lump.group(0).lower()} items together")
    if not over_all_rows and (twin := _unnamed_section(view, pq, rows)):
        doubts.append(twin)
    kind = kind_of_rows(pq.text)
    if over_all_rows and kind and not content_words(kind) <= _table_words(view, rows):
        doubts.append(f"the table does not say its rows are the {kind} items the question ranks")
    part = _named_part(view, pq)
    if part and not over_all_rows:
        doubts.append(f"the table is about the {part}, which the question does not name")
    want = content_words(entity_text(pq.phrase)) - GENERIC
    explained = _explained(view, prog)
    if want and not over_all_rows:
        left = want - explained
        prog.cover = 1.0 - len(left) / len(want)  # the verifier reads it as the answer's coverage
        if prog.cover < COVER:
            doubts.append(f"the question's words {', '.join(sorted(left))!r} are not in the rows used")
        elif left and (other := _sibling_words(pq, rows, by_row)):
            doubts.append(f"the question says {', '.join(sorted(left))!r} and the row {', '.join(sorted(other))!r}:"
                          " a neighbouring item")
        if left and (unread := _unread_row(view, want, rows, explained)):
            doubts.append(f"the question also names the row {unread!r}, which the program does not read")
        elif prog.cover >= COVER and (names := unread_names(pq.phrase, left)):
            doubts.append(f"the question names {', '.join(names)}, which the rows and columns used do not")
    used = [o.col.period for o in prog.operands if o.col.period is not None]
    if pq.quarter_named and not any(p.quarter for p in pq.periods) and not any(
            _quarterly(o.col) for o in prog.operands):
        doubts.append("the question names a quarter, and the columns used are not quarters")
    if pq.periods:
        if view.period_cols:
            for p in pq.periods:
                if not any(u.year == p.year and (p.quarter is None or u.quarter == p.quarter) for u in used):
                    doubts.append(f"{p.label()} is not among the columns used")
        else:
            text = " ".join([view.info.title or ""] + [c.title for c in view.cols])
            for p in pq.periods:
                if str(p.year) not in text and str(p.year)[2:] not in text:
                    doubts.append(f"the table has no column for {p.label()}")
    elif len(periods := {(p.year, p.quarter) for p in (c.period for c in view.period_cols)}) > 1:
        listed = {(u.year, u.quarter) for u in used}
        every = prog.op in ALL_PERIOD_OPS or (pq.breakdown and len(used) > 1) or listed >= periods
        if not every:
            doubts.append("the question names no period; the newest column was taken")
    if pq.asks_for and prog.op not in ("max", "min", "count") and not _time_words() & set(
            WORD.findall(" ".join(t for o in prog.operands for t in (o.row.text, o.col.title)).lower())):
        doubts.append(f"the question asks for a {pq.asks_for.rstrip('s')}, which the rows and columns used do not"
                      " state")  # "the last fiscal year of expiration" read from the "Amount" column
    if prog.op == "count" and scale_unknown(pq.text, f"{getattr(view.info, 'scale', '') or ''} {view.unit or ''}"):
        doubts.append("the question states its threshold at a scale the table does not state")
    pct = [names_percent(r.label) for r in rows]
    if prog.op == "ratio" and len(rows) == 2 and any(pct) and not all(pct):  # 3,861 / 40 "percent of revenues"
        doubts.append(f"the row {rows[pct.index(True)].label!r} is a percentage, which divides with no amount")
    if any(o.cell.value is None for o in prog.operands) and prog.op not in ("lookup", "max", "min"):
        doubts.append("a cell is empty")
    doubts += column_doubts(view, pq, prog, explained)
    doubts += layout_doubts(view, rows)
    return doubts


def _time_words() -> set[str]:
    """The words by which a row or column states a year, a date or a duration (vocabulary.yaml ``asked_heads``)."""
    return {w for heads in asked_heads().values() for w in heads}


NAME_WORD = re.compile(r"(?<![\w'’-])[A-Z][a-z]{2,}\b")  # a capitalised word inside a sentence: a name


def _unnamed_section(view, pq: ParsedQuestion, rows: list) -> str:
    """A row read under one section of several that print the same label ("Net sales" under "2019" and under
    "2018"; "Cloud" under "Revenue" and "Cost of revenue") where the question does not name its section better
    than another's: which one is meant is a guess. '' otherwise."""
    asked = content_words(pq.text) | {str(p.year) for p in pq.periods}

    def named(section: str) -> tuple[int, float]:
        words = content_words(section)
        return (len(words & asked), len(words & asked) / len(words)) if words else (0, 0.0)

    for row in rows:
        twins = [r for r in view.rows if r is not row and r.section != row.section
                 and r.label.strip().lower() == row.label.strip().lower()]
        if not row.section or not twins:
            continue
        own = named(row.section)
        if own[0] == 0 or any(named(r.section) >= own for r in twins):
            sections = ", ".join(repr(x) for x in dict.fromkeys([row.section, *(r.section for r in twins)]))
            return f"the table prints {row.label!r} under {sections}, and the question does not say which"
    return ""


def _quarterly(col) -> bool:
    return bool((col.period is not None and col.period.quarter) or col.months == 3
                or re.search(r"\bq[1-4]\b|quarter|three months", col.title or "", re.I))


def unread_names(phrase: str, left: set[str]) -> list[str]:
    """The names (capitalised words inside the question, not its first word nor an aside in parentheses) among
    the question's item words ``left`` unexplained: "Blizzard" of "the decrease in Blizzard net bookings" read
    from the whole company's row. A question in title case names nothing this way."""
    text = re.sub(r"\([^()]*\)", " ", phrase)
    words = re.findall(r"[A-Za-z][\w'’-]*", text)
    if len([w for w in words if w[:1].isupper()]) * 2 > len(words):
        return []
    first = re.search(r"[A-Za-z]", text)
    return [m.group(0) for m in NAME_WORD.finditer(text)
            if (first is None or m.start() != first.start()) and content_words(m.group(0)) & left]


PARENTHESES = re.compile(r"\((?:[^()]|\([^()]*\))*\)")


def _sibling_words(pq: ParsedQuestion, rows: list, by_row: dict) -> set[str]:
    """The words of the rows used that the question does not say, where it says words they do not: "Net
    stock-based compensation cost" for "capitalized stock-based compensation cost" is the item beside the one
    asked. (Only called when some of the question's words are left unexplained.)"""
    asked = expanded_words(pq.phrase)
    out: set[str] = set()
    for row in rows:
        m = by_row.get(id(row))
        label = PARENTHESES.sub(" ", row.label)  # a remark ("(loss)", "(Note (a))") is not the item's name
        out |= content_words(label) - asked - GENERIC - TOTAL_WORDS - (m.matched if m is not None else frozenset())
    return out


def kind_of_rows(question: str) -> str:
    """The kind of item a "which ..." question ranks ("Which of the business segments had ..."): the last kind
    word of its "which" phrase, for the kinds a table's title or headers must name (a year or a
    quarter is a column, not such a kind)."""
    m = WHICH.search(question)
    if not m:
        return ""
    kinds = row_kinds()  # data: app/data/vocabulary.yaml
    found = [kinds[w] for w in re.findall(r"[a-z]+", question[m.start(): m.end() + 40].lower()) if w in kinds]
    return found[-1] if found else ""


HEADING_CHARS = 80  # a section this short is a heading; a longer one is the prose above the table


# "the Retail/LTC segment", "the Health Care Benefits segment's", not "Reportable segment"
_PART = re.compile(r"\b[Tt]he\s+((?:[A-Z][\w/&.-]*\s+){1,4})([a-z]+)\b")
# a title that is a part's name: "Domestic Streaming Segment", "EMEA Region Results"
_TITLE_PART = re.compile(rf"^\s*((?:[A-Z][\w/&.-]*\s+){{1,4}}?)((?i:{'|'.join(map(re.escape, row_kinds()))}))s?\b")


def _named_part(view, pq: ParsedQuestion) -> str:
    """The part of a company a table's title (or the sentence above it) is about, named ("The following table
    summarizes the Retail/LTC segment's performance"; not a kind of part, "Reportable segment and product category
    revenue"), where the question names neither that part nor any part: the table's "Total revenues" are the
    part's, not the company's; a part is named by all its words. The kinds of part are data (``vocabulary.yaml
    row_kinds``)."""
    kinds, asked = row_kinds(), set(re.findall(r"[a-z]+", pq.text.lower()))
    if asked & set(kinds):
        return ""
    section = getattr(view.info, "section", "") or ""
    introduced = re.split(r"(?<=[.;])\s+", section.strip())[-1] if section.strip() else ""
    titled = [m for m in _TITLE_PART.finditer(view.info.title or "") if m.group(2)[0].isupper()]  # title case
    found = [*titled, *_PART.finditer(f"{view.info.title or ''} ; {introduced}")]
    for m in found:  # the title, the sentence that introduces it
        name, kind = m.group(1).strip(), m.group(2).lower()
        words = content_words(name)  # "Our business": no name
        if kind in kinds and words and not words <= content_words(pq.text) and name.lower() not in kinds:
            # "total streaming revenues" names the business, not its "Domestic Streaming" part
            return f"{name} {kind}"
    return ""


def _heading(view) -> str:
    """The section above a table where it is a heading; "" where it is prose, which may say any word."""
    section = getattr(view.info, "section", "") or ""
    return section if len(section) <= HEADING_CHARS else ""


def _table_words(view, rows: list) -> set[str]:
    """The words by which a table says what its rows are: title, a heading above it, headers, row sections."""
    return expanded_words(" ; ".join([view.info.title or "", _heading(view), *(c.title for c in view.cols),
                                      *(r.section for r in rows)]))


def _unread_row(view, want: set[str], rows: list, explained: set[str]) -> str:
    """A row of the table the question names whole that the program leaves out, its words explained by none
    read ("the total net sales of International and Foodservice" read from Foodservice alone; "deferred revenue
    and accrued warranty over gross deferred tax assets" without the assets): the label, or "". ``explained``:
    the words of what the program reads (``_explained``)."""
    used = {id(r) for r in rows}
    sections = {r.section for r in rows}
    for r in view.rows:  # a sibling item (a total is what the items add up to, a category the question may name)
        if id(r) in used or r.is_total or r.section not in sections or TOTAL_WORDS & content_words(r.label):
            continue
        words = content_words(FOOTNOTE.sub("", r.label) or r.label) - GENERIC
        if words and words <= want and not words <= explained:
            return r.label
    return ""


def _explained(view, prog) -> set[str]:
    """The words (synonyms expanded) of the rows, columns, table title and heading a program reads: the prose
    above a table ("... to reduce excess inventory ...") does not say what a row of it is."""
    texts = [t for o in prog.operands for t in (o.row.text, o.col.title)]
    return expanded_words(" ; ".join(texts + [view.info.title or "", _heading(view)]))


def column_doubts(view, pq: ParsedQuestion, prog, read: Optional[set[str]] = None) -> list[str]:
    """A column the question names in full ("as reported") that the program does not read; a period read from
    one of several columns of that period ("As reported" / "Without adoption of ASC 606", "Amount" / "Per
    share") that the question does not tell apart: the column taken is a guess. ``read``: what the program reads
    (``_explained``; worked out here when not given)."""
    read = _explained(view, prog) if read is None else read
    words = expanded_words(pq.phrase)
    used = {id(o.col) for o in prog.operands}
    rows = list({id(o.row): o.row for o in prog.operands}.values())
    for c in view.cols:
        named = {w for w in content_words(c.title) if not w.isdigit()} - GENERIC
        if (id(c) not in used and named and named <= words and not named <= read
                and not operations_asked(c.title)):  # a "Change (%)" column: what the program computes
            return [f"the question names the column {c.title!r}, which the program does not read"]
    out = []
    cols = list({id(o.col): o.col for o in prog.operands}.values())
    if prog.op in ("average", "sum", "difference", "ratio", "pct_change") and len(cols) > 1:
        asked = words | content_words(pq.phrase, drop_generic=False)  # "total" names the "Total" column
        said = [bool({w for w in content_words(c.title, drop_generic=False) if not w.isdigit()} & asked)
                for c in cols]
        other = [c for c, s in zip(cols, said) if not s and c.period is None]
        if any(said) and other:  # "the average fair value": the "Fair value" and "Useful life (years)" cells
            out.append(f"the question names the column {cols[said.index(True)].title!r}, not {other[0].title!r},"
                       " which the program also reads")
    for col in cols:
        if col.period is None:
            continue
        same = [c for c in view.period_cols if id(c) not in used and c.period == col.period
                and c.months == col.months and c.percent == col.percent
                and any(r.cells.get(c.key) is not None and r.cells[c.key].value is not None for r in rows)]
        if not same:
            continue
        named = len(content_words(col.title) & words)
        if any(len(content_words(c.title) & words) >= named for c in same):
            titles = ", ".join(repr(c.title) for c in [col, *same][:3])
            out.append(f"{col.period.label()} has several columns ({titles}) and the question names none of them")
            break
    return out


def layout_doubts(view, rows: list) -> list[str]:
    """The table's columns may not be what their headers say for these rows: a header row inside the body above
    them, or numbers left in a text column (a period column holding its neighbour's "∆%" values)."""
    out = []
    if getattr(view, "misaligned", ""):
        out.append(f"the table's columns may be misread: {view.misaligned}")
    heads = [r.reheaded for r in rows if getattr(r, "reheaded", "")]
    if heads:
        out.append(f"a header row inside the table ({heads[0]!r}) stands above the row used")
    return out
