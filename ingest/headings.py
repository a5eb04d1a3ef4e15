"""Section labels: which lines open a section, and what the section is called.

A label comes from a heading, never from a body sentence:
- a numbered clause ("14.2 Change of Control. If either party...", "Section 9: Term", "ARTICLE IV - FEES") is
  labelled by its number and its title, the words up to the title's own full stop or colon (abbreviation-aware:
  "U.S.", "Inc."). Words that read as a sentence rather than a title ("1.1 The term of this Agreement shall
  commence on") give the number alone: a title is short and capitalised like one (most longer words capitalised),
  or at most five words closed by its own full stop ("13. Governing law. This ...").
- a short ALL-CAPS line is a heading only on its own: not with a sentence end inside it ("...SUCH DAMAGE. THE
  PARTIES AGREE THAT THIS SECTION 9" is a line of an all-caps paragraph), not right after a long line that
  stops mid-sentence (the paragraph runs on into it), and not when it is such a line itself and the next line
  is all capitals too (an all-caps disclaimer's first line). The "runs on" rule holds for a numbered clause
  as well, so a number wrapped onto a new line ("...delivered within\\n30 days after ...") opens nothing.
- Markdown headings keep their text; the parser's explicit heading lines (set larger than the body) up to
  their own full stop, when that reads as a title.
Whitespace in a label is one plain space (PDF text has no-break spaces).
"""
from __future__ import annotations

import re

from ingest.sentences import ABBREVIATIONS

MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<title>\S.*)$")
CLAUSE = re.compile(
    r"^\s*(?:(?:Section|Clause|Article|ARTICLE|SECTION|CLAUSE)\s+)?(?P<num>\d{1,3}(?:\.\d{1,3}){0,4}|(?<=E |e |N |n )[IVXL]{1,6})"
    r"[.):]?\s+(?:[-\u2013\u2014]\s*)?(?P<title>[A-Z\u201c\"][^\n]*)$"
)
TITLE_END = re.compile(r"[.:][\"'\u201d\u2019)]*(?=\s|$)")
LEADER = re.compile(r"(?:\s*\.{3,}|\s{2,})\s*\d{1,4}$")  # a table of contents' dots and page number
PAGE_NUMBER = re.compile(r"(?<=[^\W\d])\s+\d{1,3}$")  # "Access to Data and Meters 21": a contents line's page
ENUMERATOR = re.compile(r"^(?P<n>[IVXLC]{1,6}|[A-Z]|\d{1,3})[.)]\s+")  # "II. LICENSE", "B. FEES"
WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
MAX_TITLE_WORDS = 12
RUN_ON_CHARS = 40  # a line this long that stops mid-sentence runs on into the next


def _title_end(title: str) -> int | None:
    """Where the title's own full stop or colon is (not an abbreviation's or an initial's), or None."""
    for m in TITLE_END.finditer(title):
        before = re.search(r"([A-Za-z][A-Za-z.]*)$", title[:m.start()])
        word = before.group(1).lower() if before else ""
        if word and (word in ABBREVIATIONS or word.rstrip(".") in ABBREVIATIONS):
            continue
        if len(word) == 1 and title[m.start() - 1].isupper() and title[m.start()] == ".":
            continue  # an initial, or the "S." of "U.S."
        return m.start()
    return None


def title_like(title: str, closed: bool) -> bool:
    """Words read as a title: at most 12, and most words of four letters or more capitalised; or (``closed`` by
    their own full stop or colon) at most five words."""
    words = WORD.findall(title)
    if not words or len(words) > MAX_TITLE_WORDS:
        return False
    long = [w for w in words if len(w) >= 4]
    capped = sum(w[0].isupper() for w in long)
    return (not long or capped >= 0.6 * len(long)) or (closed and len(words) <= 5)


def clean(label: str) -> str:
    return " ".join(label.split())


def runs_on(prev: str | None) -> bool:
    """``prev`` (the line before, in the same block) is a long line that stops mid-sentence."""
    if not prev:
        return False
    p = prev.rstrip()
    return len(p) >= RUN_ON_CHARS and (p[-1].isalnum() or p[-1] in ",-(\u2013")


def clause_label(m: re.Match) -> str:
    raw = LEADER.sub("", m["title"])
    end = _title_end(raw)
    title = raw[:end] if end is not None else raw
    if end is None and len(WORD.findall(title)) >= 2:
        title = PAGE_NUMBER.sub("", title)
    if title_like(title, closed=end is not None):
        return clean(f"{m['num']} {title.strip()}")
    return m["num"]


def _all_caps(s: str) -> bool:
    letters = [c for c in s if c.isalpha()]
    return len(letters) >= 4 and all(c.isupper() for c in letters)


def heading_label(line: str, explicit: bool = False, prev: str | None = None, nxt: str | None = None) -> str | None:
    """The section label ``line`` opens, or None if it is ordinary text. ``explicit``: the parser marked it as a
    heading; ``prev`` / ``nxt``: the lines before and after it in the same block (None across a blank line)."""
    s = line.strip()
    if not s:
        return None
    mh = MARKDOWN_HEADING.match(s)
    if mh:
        return clean(mh["title"].strip().strip("#").strip())
    m = CLAUSE.match(s[:300])  # a numbered clause may run on for a whole paragraph on its first line
    if m and any(c.isalpha() for c in m["title"][:3]) and (explicit or not runs_on(prev)):
        return clause_label(m)
    if len(s) > 300:
        return None
    if explicit:
        end = _title_end(s[:120])
        title = s[:120] if end is None else s[:end]
        return clean(title) if title_like(title, closed=end is not None) or _all_caps(title) else None
    enum = ENUMERATOR.match(s)
    body = s[enum.end():] if enum else s
    if (len(s) <= 80 and _all_caps(body) and not s.endswith(".") and _title_end(body.rstrip(":")) is None
            and not runs_on(prev) and not (runs_on(s) and nxt is not None and _all_caps(nxt))):
        if not s.isupper():
            return clean(s)
        return clean(f"{enum['n']}. {body.title()}" if enum else s.title())
    return None
