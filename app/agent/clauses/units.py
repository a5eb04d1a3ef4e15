"""Clause-level units of a document: numbered sections and their sub-clauses kept whole, never a sentence cut.

The chunker (``ingest.chunker``) starts a new section at every numbered clause heading ("9.2 Limitation of
Liability.", "Section 6. Term.", "ARTICLE IV") and labels each chunk with the section it lies in; chunks end
at sentence ends or paragraph starts. A unit is built from those labels:

- a section is the run of consecutive chunks with one label (joined by their document offsets, so the
  overlap of a cut long sentence is not repeated);
- a numbered section whose descendants ("9.2" under "9") fit in ``MAX_UNIT`` characters is one unit with them
  ("9.2 ..." through to the next sibling "9.3"); otherwise the section and each child are units of their own;
- a section longer than ``MAX_UNIT`` (a long unnumbered stretch, a definitions article) is cut between its
  chunks, so a piece still ends at a sentence end or a paragraph start.

Each unit keeps the page it starts on, its section label and the labels of the sections above it (its heading
path, for heading match) and the chunk ids it covers (to carry a chunk's search rank to its unit).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_UNIT = 2500  # characters: a numbered section with its sub-clauses up to this size is one unit
NUMBER = re.compile(r"^\s*(?:(?:section|article|clause)\s+)?(\d{1,3}(?:\.\d{1,3}){0,4}|[IVXL]{1,6})\b", re.I)


@dataclass
class Unit:
    doc_id: str
    filename: str
    page: int
    section: str  # the section label of the unit's first chunk ("9.2 Limitation of Liability")
    text: str  # the whole unit, verbatim chunk text joined
    heading: str = ""  # the heading path: this section's label and those above it
    chunk_ids: tuple[str, ...] = field(default=())
    position: int = 0  # the unit's order in its document (0: the opening)
    offset: int = 0  # characters of the document's units before this one
    score: float = 0.0
    quote: str = ""  # the best sentence(s) inside it, for a short quote
    answer_quote: str = ""  # the quote, where a route may state it as what was found (set by the finder)
    parts: dict = field(default_factory=dict)  # the score's parts (for the UI and for tuning)
    tokens: list = field(default_factory=list, repr=False)  # content-word stems (set by the finder)
    spans: list = field(default_factory=list, repr=False)  # its sentences' (start, end) (set by the finder)
    marks: tuple = ()  # ((offset in text, page, section), ...) where a later chunk moves to another page or section

    def passage(self, score: float | None = None):
        """The unit as an ``ingest.types.Passage`` (its first chunk's id; its offsets in the document's units'
        text, so a reader can tell the document's opening from the rest)."""
        from ingest.types import Passage

        return Passage(self.chunk_ids[0] if self.chunk_ids else f"{self.doc_id}:{self.position}", self.doc_id,
                       self.filename, self.page, self.section, self.text,
                       float(self.score if score is None else score), self.offset, self.offset + len(self.text),
                       self.answer_quote, self.marks)


def section_number(label: str) -> str | None:
    """"9.2" of "9.2 Limitation of Liability", "IV" of "IV Term"; None for an unnumbered label."""
    m = NUMBER.match(label or "")
    if not m:
        return None
    num = m.group(1)
    return num.upper() if not num[0].isdigit() else num


def _run_number(run: list) -> str | None:
    """The section's number; a heading-only parent merged into its first child's chunk ("9. LIABILITY" above
    "9.1 Cap.") gives the run the parent's number, so the parent's other children fall under it."""
    label = section_number(run[0].section)
    first = section_number(run[0].text.lstrip().split("\n", 1)[0])
    return first if _is_under(label, first) else label


def _is_under(child: str | None, parent: str | None) -> bool:
    return bool(child and parent) and child != parent and child.startswith(parent + ".")


def _join(passages: list) -> tuple[str, tuple]:
    """The chunks' text in document order, overlaps dropped (offsets from ``Passage.char_start/char_end``), and
    the marks where a chunk on another page or of another section starts in it."""
    out, end, at, marks = [], None, 0, []
    page, section = (passages[0].page, passages[0].section) if passages else (None, None)
    for p in passages:
        text = p.text
        if end is not None and getattr(p, "char_end", 0):
            if p.char_start < end:  # the overlap window of a cut sentence
                text = text[end - p.char_start:] if end < p.char_end else ""
            elif p.char_start > end:
                out.append("\n")
                at += 1
        elif out:
            out.append("\n")
            at += 1
        if text.strip() and (p.page, p.section) != (page, section):
            page, section = p.page, p.section
            marks.append((at + len(text) - len(text.lstrip()), page, section))
        out.append(text)
        at += len(text)
        end = max(end or 0, getattr(p, "char_end", 0) or 0)
    return "".join(out), tuple(marks)


def _sections(passages: list) -> list[list]:
    """Runs of consecutive chunks with one section label."""
    runs: list[list] = []
    for p in passages:
        if runs and runs[-1][-1].section == p.section:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _pieces(run: list, limit: int) -> list[list]:
    """A run cut between chunks into pieces of at most ``limit`` characters (a chunk longer stays whole)."""
    pieces, cur, size = [], [], 0
    for p in run:
        if cur and size + len(p.text) > limit:
            pieces.append(cur)
            cur, size = [], 0
        cur.append(p)
        size += len(p.text)
    if cur:
        pieces.append(cur)
    return pieces


def document_units(passages: list, limit: int = MAX_UNIT) -> list[Unit]:
    """The clause units of one document, from its chunks in order (``kb.document_passages``)."""
    if not passages:
        return []
    runs = _sections(passages)
    nums = [_run_number(r) for r in runs]
    groups: list[list[int]] = []  # each group: run indexes forming one unit
    i = 0
    while i < len(runs):
        j = i + 1
        while j < len(runs) and _is_under(nums[j], nums[i]):
            j += 1  # the descendants of run i ("9.2.1" under "9.2")
        size = sum(len(p.text) for r in runs[i:j] for p in r)
        if j > i + 1 and size <= limit:
            groups.append(list(range(i, j)))
            i = j
        else:
            groups.append([i])
            i += 1
    units: list[Unit] = []
    for g in groups:
        chunks = [p for k in g for p in runs[k]]
        heading = _heading_path(runs, nums, g[0])
        for piece in (_pieces(chunks, limit) if len(g) == 1 else [chunks]):
            first = piece[0]
            text, marks = _join(piece)
            units.append(Unit(first.doc_id, first.filename, first.page, first.section, text, heading,
                              tuple(p.chunk_id for p in piece), len(units),
                              units[-1].offset + len(units[-1].text) if units else 0, marks=marks))
    return units


def _heading_path(runs: list[list], nums: list, k: int) -> str:
    """This section's label and the labels of the numbered sections above it ("9 Liability / 9.2 Cap")."""
    labels = [runs[k][0].section or ""]
    num = nums[k]
    for back in range(k - 1, -1, -1):
        if num is None:
            break
        if nums[back] and _is_under(num, nums[back]):
            labels.insert(0, runs[back][0].section or "")
            num = nums[back]
    return " / ".join(lab for lab in labels if lab)
