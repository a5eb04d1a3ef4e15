"""A document's section tree: each heading the chunker found, with its number, pages and chunk range.

The chunker labels every chunk with the section it belongs to ("14.1 Governing Law", "Item 8.01 Other Events",
"CONFIDENTIALITY"); a run of chunks with one label is one section. Numbered sections nest by their numbers
("14.1" under "14", "ARTICLE V" holds what follows until the next article); unnumbered ones sit at the top.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

NUMBER = re.compile(r"^\s*(?:(?:section|clause|article|item|part)\s+)?(\d{1,3}(?:\.\d{1,3}){0,4}|[IVXL]{1,6})\b[.):]?\s*",
                    re.I)


@dataclass
class Section:
    title: str  # the heading as the chunker labelled it
    number: str  # "14.1", "8.01", "V"; "" when unnumbered
    level: int  # 1 for a top heading, 2 for "14.1" under "14" ...
    parent: int  # index of the enclosing section in the tree's list, -1 at the top
    page: int  # first page
    last_page: int
    first_chunk: int  # chunk ords, inclusive
    last_chunk: int

    def to_dict(self) -> dict:
        return asdict(self)


def number_of(title: str) -> str:
    m = NUMBER.match(title)
    if not m:
        return ""
    num = m.group(1)
    if not num[0].isdigit() and not re.match(r"\s*(?:article|part)\b", title, re.I):
        return ""  # a roman numeral only after "Article"/"Part": "I" alone is a word
    if num[0].isdigit() and int(num.split(".")[0]) > 99:
        return ""  # "211 Bradenton Avenue": an address line, not a section number
    return num.upper() if not num[0].isdigit() else num


def section_tree(chunks: list[tuple[int, int, str]]) -> list[Section]:
    """``chunks``: (ord, page, section label) in document order -> the sections in document order."""
    out: list[Section] = []
    for ord_, page, label in chunks:
        label = (label or "").strip()
        if not label:
            continue
        if out and out[-1].title == " ".join(label.split())[:300] and out[-1].last_chunk >= ord_ - 1:
            out[-1].last_chunk, out[-1].last_page = ord_, max(out[-1].last_page, page)
            continue
        num = number_of(label)
        parent, level = _parent(out, num)
        out.append(Section(" ".join(label.split())[:300], num, level, parent, page, page, ord_, ord_))
    return out


def _parent(out: list[Section], num: str) -> tuple[int, int]:
    """The enclosing numbered section: the nearest earlier one whose number is a prefix of ``num`` ("14" of "14.1")."""
    if not num or "." not in num:
        return -1, 1
    head = num.rsplit(".", 1)[0]
    for i in range(len(out) - 1, -1, -1):
        if out[i].number == head:
            return i, out[i].level + 1
    return -1, num.count(".") + 1
