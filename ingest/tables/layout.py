"""Page layout for table finding: words (de-rotated when the text runs sideways), lines by baseline, and
segments (runs of words separated by a column-sized gap) with their x-extent.

Coordinates are pdfplumber's (points, origin top-left) in the reading frame; for a sideways page the frame
is the page turned upright, and ``Layout.to_page`` maps a box back to the page as stored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import median

NUMERIC = re.compile(r"^[(\[]?[-+−–]?[$€£¥]?\s?[(]?[-+−–]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?\)?%?\)?[*†]*$")
DASH_CELL = {"-", "—", "–", "−", "--", "—-", "n/a", "N/A", "nm", "NM", "*"}


def is_numeric_text(s: str) -> bool:
    s = s.strip().replace(" ", "")
    if s in DASH_CELL or (s[:1] in "$€£¥" and s[1:] in DASH_CELL):
        return True
    return bool(s) and any(ch.isdigit() for ch in s) and bool(NUMERIC.match(s))


@dataclass
class Segment:
    x0: float
    x1: float
    top: float
    bottom: float
    text: str
    size: float

    @property
    def numeric(self) -> bool:
        return is_numeric_text(self.text)


@dataclass
class Line:
    top: float
    bottom: float
    segments: list[Segment] = field(default_factory=list)

    @property
    def x0(self) -> float:
        return self.segments[0].x0

    @property
    def x1(self) -> float:
        return self.segments[-1].x1

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.segments)

    @property
    def height(self) -> float:
        return max(1.0, self.bottom - self.top)

    @property
    def n_numeric(self) -> int:
        return sum(s.numeric for s in self.segments)


@dataclass
class Layout:
    lines: list[Line]
    width: float
    height: float
    rotation: int = 0  # 0, 90 (text ran down the page) or 270 (text ran up)

    def to_page(self, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        """A box in the reading frame -> the page's own (unrotated) pdfplumber coordinates."""
        x0, top, x1, bottom = box
        if self.rotation == 90:  # reading x = page top, reading top = page_width - page x1
            return (self.height - bottom, x0, self.height - top, x1)
        if self.rotation == 270:  # reading x = page_height - page bottom, reading top = page x0
            return (top, self.width - x1, bottom, self.width - x0)
        return box


def _derotate(chars: list[dict], page_w: float, page_h: float) -> tuple[list[dict], int]:
    """Sideways text turned upright: returns new char dicts and the rotation that was undone."""
    sideways = [c for c in chars if not c.get("upright", True)]
    if len(sideways) < 0.6 * max(1, len(chars)):
        return chars, 0
    # which way does the text run? compare consecutive chars of the same text run
    down = up = 0
    for a, b in zip(sideways, sideways[1:]):
        if abs(a["x0"] - b["x0"]) < 1.0:
            if b["top"] > a["top"]:
                down += 1
            elif b["top"] < a["top"]:
                up += 1
    rotation = 90 if down >= up else 270
    out = []
    for c in chars:
        if rotation == 90:
            x0, x1, top, bottom = c["top"], c["bottom"], page_w - c["x1"], page_w - c["x0"]
        else:
            x0, x1, top, bottom = page_h - c["bottom"], page_h - c["top"], c["x0"], c["x1"]
        d = dict(c)
        d.update(x0=x0, x1=x1, top=top, bottom=bottom, upright=True, doctop=top, width=x1 - x0, height=bottom - top,
                 size=round(bottom - top, 1),
                 matrix=(1.0, 0.0, 0.0, 1.0, x0, bottom))  # the word extractor reads direction from it
        out.append(d)
    return out, rotation


def _words(chars: list[dict]) -> list[dict]:
    from pdfplumber.utils.text import WordExtractor

    extractor = WordExtractor(x_tolerance=1.5, y_tolerance=2.0, keep_blank_chars=False, use_text_flow=False,
                              extra_attrs=["size"])
    return [w for w in extractor.extract_words(chars) if w["text"].strip()]


def group_lines(words: list[dict]) -> list[list[dict]]:
    """Words into lines by baseline (bottom), tolerant of superscripts and mixed font sizes."""
    lines: list[list[dict]] = []
    for w in sorted(words, key=lambda w: (round(w["bottom"], 1), w["x0"])):
        h = max(1.0, w["bottom"] - w["top"])
        if lines:
            last = lines[-1]
            lb = median(x["bottom"] for x in last)
            lh = max(1.0, median(x["bottom"] - x["top"] for x in last))
            if abs(w["bottom"] - lb) <= 0.45 * min(h, lh):
                last.append(w)
                continue
        lines.append([w])
    return [sorted(ln, key=lambda w: w["x0"]) for ln in lines]


def segment_line(words: list[dict]) -> list[Segment]:
    """Split a line where the gap between words is wider than a normal word space."""
    sizes = [float(w.get("size") or (w["bottom"] - w["top"])) for w in words]
    size = median(sizes) if sizes else 10.0
    gap = max(3.0, 0.75 * size)
    segs: list[Segment] = []
    # a trailing run of numbers ("kept the assets 344 75.2") splits at narrower gaps than text does
    numeric = [is_numeric_text(w["text"]) for w in words]
    tail = len(words)
    while tail > 0 and numeric[tail - 1]:
        tail -= 1
    for k, (w, sz) in enumerate(zip(words, sizes)):
        limit = 0.4 * size if k >= tail and k > 0 else gap
        if segs and w["x0"] - segs[-1].x1 <= limit:
            s = segs[-1]
            s.text, s.x1 = s.text + " " + w["text"], max(s.x1, w["x1"])
            s.top, s.bottom = min(s.top, w["top"]), max(s.bottom, w["bottom"])
            continue
        segs.append(Segment(w["x0"], w["x1"], w["top"], w["bottom"], w["text"], sz))
    # a lone currency sign or opening parenthesis belongs to the number after it
    merged: list[Segment] = []
    for s in segs:
        if merged and merged[-1].text in ("$", "€", "£", "¥", "(", "$(") and is_numeric_text(s.text.lstrip("$(")):
            m = merged[-1]
            m.text, m.x1, m.bottom = m.text + s.text, s.x1, max(m.bottom, s.bottom)
            continue
        merged.append(s)
    # a lone closing parenthesis or percent sign belongs to the number before it
    out: list[Segment] = []
    for s in merged:
        if out and s.text in (")", "%", ")%") and out[-1].numeric:
            out[-1].text += s.text
            out[-1].x1 = s.x1
            continue
        out.append(s)
    return out


def page_layout(page) -> Layout:
    """The layout of a pdfplumber page (words de-rotated when most of the text runs sideways)."""
    return layout_from_chars([c for c in page.chars if c.get("text", "").strip()], float(page.width),
                             float(page.height))


def layout_from_chars(chars: list[dict], width: float, height: float) -> Layout:
    """Layout from char dicts (text, x0, x1, top, bottom, size, upright) in top-left page coordinates."""
    page_w, page_h = width, height
    chars, rotation = _derotate(chars, page_w, page_h)
    words = _words(chars)
    lines = []
    for ws in group_lines(words):
        segs = segment_line(ws)
        if segs:
            lines.append(Line(min(s.top for s in segs), max(s.bottom for s in segs), segs))
    w, h = page_w, page_h
    return Layout(lines, h if rotation else w, w if rotation else h, rotation)


def layout_text(layout: Layout) -> str:
    """Reading-order text of the layout, one line per baseline (used for sideways pages)."""
    return "\n".join(ln.text for ln in layout.lines)
