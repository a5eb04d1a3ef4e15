"""What the rows of a statement mean: section rows as parents, totals, per-share and share-count rows,
the scale from the caption ("in millions, except per share data") and the kind of statement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.text_glue import unglue

SCALE_WORDS = {"thousand": "thousands", "thousands": "thousands", "million": "millions", "millions": "millions",
               "billion": "billions", "billions": "billions", "000s": "thousands", "000's": "thousands",
               "000": "thousands", "mn": "millions", "bn": "billions", "mm": "millions"}
SCALE = re.compile(
    r"(?:\bin\s+(?:u\.?s\.?\s+|usd\s+|us\$\s*|\$\s*|€\s*|eur\s+|£\s*)?|\(\s*(?:u\.?s\.?\s*|usd\s*|us\$\s*|\$\s*|€\s*|£\s*)?"
    r"(?:dollars\s+|euros?\s+)?(?:in\s+)?|amounts?\s+in\s+|expressed\s+in\s+|\$\s*|usd\s+|€\s*|eur\s+|£\s*)"
    r"['’]?(thousands?|millions?|billions?|000['’]?s|000|mn|bn|mm)\b", re.I)  # "$’000": thousands of dollars
EXCEPT_PER_SHARE = re.compile(r"except\s+(?:for\s+)?(?:share\s+(?:and|&)\s+)?per[\s-]+share", re.I)
EXCEPT_SHARES = re.compile(r"except\s+(?:for\s+)?(?:number\s+of\s+)?shares?\b(?!\s+data\b|\s+amounts?\b)|"
                           r"except\s+(?:for\s+)?share\s+(?:and|&)\s+per[\s-]+share|except\s+share\s+data", re.I)
PER_SHARE = re.compile(r"per\s+(?:common\s+|ordinary\s+|diluted\s+|basic\s+)?share|\bEPS\b|per\s+ADS|per\s+unit", re.I)
EPS_LINE = re.compile(r"^(basic|diluted|basic and diluted)\b", re.I)
SHARES = re.compile(r"weighted[\s-]+average\s+(number\s+of\s+)?(common\s+|ordinary\s+)?(shares|units)|shares\s+outstanding|"
                    r"number\s+of\s+(common\s+|ordinary\s+)?shares|shares\s+used|average\s+shares|share\s+count|"
                    r"^(basic|diluted)\s+shares", re.I)
TOTAL = re.compile(
    r"^(total|sub-?total|net\s+(income|loss|earnings|\(loss\)|revenues?|sales|cash|increase|decrease|\(decrease\)"
    r"|change)|gross\s+(profit|margin)|operating\s+(income|loss|profit)|income\s+(before|from\s+operations)|"
    r"(loss|earnings)\s+before|comprehensive\s+income|ebitda|cash\s+and\s+cash\s+equivalents,?\s+end)", re.I)
STATEMENTS = [
    ("cash_flow", re.compile(r"statements?\s+of\s+(consolidated\s+)?cash\s+flows?|cash\s+flows?\s+statements?", re.I),
     re.compile(r"^net cash (provided|used|from)|operating activities|investing activities|financing activities", re.I)),
    ("balance_sheet", re.compile(r"balance\s+sheets?|statements?\s+of\s+(consolidated\s+)?financial\s+(position|condition)",
                                 re.I),
     re.compile(r"^total (current )?assets$|^total (current )?liabilities$|^total liabilities and", re.I)),
    ("equity", re.compile(r"statements?\s+of\s+(consolidated\s+)?(changes\s+in\s+)?(stockholders|shareholders|"
                          r"shareowners)['’]?\s+(equity|deficit)|statements?\s+of\s+(changes\s+in\s+)?equity", re.I), None),
    ("income_statement", re.compile(
        r"statements?\s+of\s+(consolidated\s+)?(condensed\s+)?(operations|income|earnings|comprehensive\s+(income|loss))|"
        r"income\s+statements?|profit\s+(and|&)\s+loss", re.I),
     re.compile(r"^(net (income|earnings|loss)( attributable.*)?|(total )?(net )?(revenues?|sales)|gross (profit|margin)|"
                r"operating (income|loss)|(basic|diluted)( earnings per share)?|income tax(es)?( expense)?)$", re.I)),
]


@dataclass
class RowMeta:
    label: str
    parent: str = ""
    is_total: bool = False
    unit: str = ""  # per-row override: "USD per share", "shares", "%"
    scale: str = ""  # per-row scale (None of the table's for per-share rows)


def find_scale(text: str) -> str:
    m = SCALE.search(text or "")
    if not m:
        return ""
    word = m.group(1).lower().replace("’", "'")
    return SCALE_WORDS.get(word.rstrip("s") + ("s" if word.endswith("s") else ""), SCALE_WORDS.get(word, ""))


# a sentence that mentions a statement ("the effects of derivatives on the consolidated statements of income:",
# "Supplemental balance sheet information ...") is no statement's title
NOT_A_TITLE = re.compile(
    r"\b(following|table|tables|effects?|included|includes|including|presented|presents|recognized|location|"
    r"related|information|supplemental|see|notes?\s+to|reported|classified|within|line\s+items?|our|we|was|were|"
    r"is|are|has|have|reflects?|summar\w+|amounts?\s+recorded|impact|analysis|discussion|selected|components?|"
    r"note\s+\d+|obligor|guarantors?|non-guarantors?|issuers?|"
    r"changes\s+in\s+(?!(stockholders|shareholders|shareowners|equity)))\b", re.I)


SUMMARY = re.compile(r"\b(selected|highlights?|summary|quarterly|non[\s-]?gaap|reconciliation|segments?|"
                     r"adjusted|pro\s+forma|guidance|outlook)\b", re.I)


def statement_title(line: str) -> str:
    """The statement kind a caption line names when the line is a statement's own title ("CONSOLIDATED
    STATEMENTS OF CASH FLOWS", "Amcor plc - Condensed Consolidated Balance Sheets (Unaudited)"), else "". A
    function word the PDF's text layer glued to the next word ("Statements ofCash Flows") is split off first."""
    s = unglue(" ".join(str(line or "").split()))
    if not s or len(s) > 120 or s.endswith((":", ".")) or s[:1].islower() or NOT_A_TITLE.search(s):
        return ""  # a sentence, or the end of one
    for kind, title_rx, _ in STATEMENTS:
        if title_rx.search(s):
            return kind
    return ""


def classify_statement(title: str, context: str, labels: list[str], captions: list[str] | None = None,
                       has_periods: int = 1) -> str:
    """income_statement | balance_sheet | cash_flow | equity from the nearest caption line that is a statement's
    own title (``captions``: title rows inside the table, nearest last, then the title and the context lines
    above it), else from its rows (four typical line items of one statement in a table of ten rows or more)
    when its value columns are one to four periods (``has_periods``: how many) and no sentence or summary
    caption sits over it: a table whose columns are segments, or five years of selected data, is no primary
    statement."""
    above = [ln for ln in f"{context}\n{title}".splitlines() if ln.strip()][-4:]
    lines = above + [c for c in (captions or []) if c and c.strip()]
    for line in reversed(lines):
        kind = statement_title(line)
        if kind:
            return kind
    if any(SUMMARY.search(line) for line in lines[-3:]):
        return ""  # selected data, highlights, quarterly data, reconciliations: the statement is elsewhere
    nearest = " ".join(above[-1].split()) if above else ""  # the line printed above the table
    if nearest and (len(nearest) > 120 or nearest.endswith((":", ".")) or nearest[:1].islower()
                    or NOT_A_TITLE.search(nearest)):
        return ""  # under a sentence ("The following table presents ..."): a note's table
    if len(labels) >= 10 and 0 < has_periods <= 4:
        for kind, _, row_rx in STATEMENTS:
            if row_rx is not None and sum(bool(row_rx.search(lb.strip())) for lb in labels) >= 4:
                return kind
    return ""


def _key_words(label: str) -> set[str]:
    words = re.findall(r"[a-z]+", label.lower())
    return {w for w in words if w not in {"total", "and", "of", "the", "net", "s"}}


def row_meta(labels: list[str], has_values: list[bool], scale: str, notes: str,
             indents: list[float | None] | None = None) -> tuple[list[RowMeta], list[int]]:
    """(meta for every kept row, indexes of the rows kept). Section rows (a label, no values, followed by
    rows) are not kept: they become the parent of the rows below until a total closes them, or (when the
    layout gives the labels' indents) until a row starts no further right than the section did."""
    except_sh = bool(EXCEPT_SHARES.search(notes))
    stack: list[tuple[str, float | None]] = []
    metas, kept, fresh = [], [], False
    indents = indents if indents and len(indents) == len(labels) else [None] * len(labels)
    for i, (label, filled, indent) in enumerate(zip(labels, has_values, indents)):
        label = label.strip()
        if fresh and indent is not None and stack[-1][1] is not None and indent <= stack[-1][1] + 1.0:
            stack[-1] = (stack[-1][0], None)  # this section's rows are not indented under it
        fresh = False
        if indent is not None:
            while stack and stack[-1][1] is not None and indent <= stack[-1][1] + 1.0 \
                    and not (TOTAL.match(label) and _closes(label, stack[-1][0])):
                stack.pop()  # back at (or left of) the section's own indent: the section has ended
        if label and not filled and i + 1 < len(labels):
            section = label.rstrip(":").strip()
            if stack and indent is None and not _is_outer(stack[-1][0]):
                stack.pop()  # a sibling of the open inner section
            stack.append((section, indent))
            fresh = True
            continue
        parent = stack[-1][0] if stack else ""
        is_total = bool(TOTAL.match(label))
        if stack and label and _key_words(label) and _key_words(label) == _key_words(stack[-1][0]):
            is_total = True  # "Other comprehensive income" under "Other comprehensive income:" sums it
        own = find_scale(label) or find_scale(parent)  # "Shares used in calculation (000's)"
        unit, row_scale = "", own or scale
        if SHARES.search(label) or (EPS_LINE.match(label) and SHARES.search(parent)):
            unit, row_scale = "shares", own or ("" if except_sh else scale)
        elif PER_SHARE.search(label) or (EPS_LINE.match(label) and PER_SHARE.search(parent)):
            unit, row_scale = "per share", ""  # per-share amounts are never in thousands or millions
        metas.append(RowMeta(label, parent, is_total, unit, row_scale))
        kept.append(i)
        if is_total and stack and _closes(label, stack[-1][0]):
            stack.pop()
    return metas, kept


def name_unlabelled_totals(metas: list[RowMeta], values: list[list]) -> list[int]:
    """A row with values and no label that sums the labelled rows of its section above it (the revenues'
    total printed under a rule, its label left out) is that section's total: "Total revenues". ``values``: each
    row's numbers (None where empty). Returns the rows named."""
    named = []
    for i, m in enumerate(metas):
        if m.label or not m.parent:
            continue
        block = []
        k = i - 1
        while k >= 0 and metas[k].parent == m.parent and metas[k].label and not metas[k].is_total:
            block.insert(0, k)
            k -= 1
        cols = [j for j, v in enumerate(values[i]) if isinstance(v, (int, float))]
        if len(block) < 2 or not cols:
            continue
        sums = [sum(values[b][j] or 0.0 for b in block) for j in cols]
        if all(abs(s_ - values[i][j]) <= max(0.001 * abs(values[i][j]), 0.5 * len(block)) for s_, j in zip(sums, cols)):
            parent = m.parent if m.parent.isupper() else m.parent[:1].lower() + m.parent[1:]
            metas[i] = RowMeta(f"Total {parent}", m.parent, True, m.unit, m.scale)
            named.append(i)
    return named


def _is_outer(section: str) -> bool:
    """Upper-case or one-word headings ("ASSETS", "Liabilities and equity") enclose the sections below."""
    return section.isupper() or bool(re.fullmatch(r"(assets|liabilities.*|.*equity|operating activities)", section,
                                                  re.I))


def _closes(total_label: str, section: str) -> bool:
    tw, sw = _key_words(total_label), _key_words(section)
    return bool(sw) and len(tw & sw) >= max(1, len(sw) // 2)
