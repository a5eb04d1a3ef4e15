"""Borderless tables from text alignment, as an analyst reads a statement.

Lines with several segments (a label and numbers, or several aligned text cells) that follow each other
form a block; label-only lines inside it (section rows such as "Current assets:", wrapped labels) stay in it.
Header lines above the block (periods, "Years Ended December 31,") join when they sit over its columns.
Columns come from a whitespace projection of the block's multi-segment lines; a header segment spanning
several columns is repeated in each, so "Three Months Ended" reaches both of its period columns.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ingest.tables.layout import Layout, Line, Segment
from ingest.tables.rows import find_scale

MIN_ROWS = 3  # multi-segment lines a block needs
FOOTNOTE = re.compile(r"^\(\d\)$")
# group headers that reach every column under them: periods ("Years Ended December 31,", "Six Months Ended",
# "As of", "Fiscal 2023") -- not the stacked words of one column's header
GROUP_HEADER = re.compile(r"\b(Q[1-4]|[1-4]Q|H[12]|ended|ending|months?|weeks?|years?|quarters?|as\s+(of|at)|fiscal|period|"
                          r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(19|20)\d\d\b", re.I)
SCALE_LOOKBACK = 30  # lines above a table searched for its scale when its own caption states none
WRAPS = re.compile(r"(,|\b(to|of|and|or|for|in|from|by|on|the|attributable|per|at|with|including|excluding|net))\s*$",
                   re.I)


@dataclass
class Grid:
    bbox: tuple[float, float, float, float]  # reading frame (x0, top, x1, bottom)
    rows: list[list[str | None]]
    header_rows: int
    indents: list[float | None] = field(default_factory=list)  # x0 of each row's label cell
    title: str = ""
    context: str = ""
    lines: list[Line] = field(default_factory=list)


def _is_table_line(ln: Line) -> bool:
    n = len(ln.segments)
    if n >= 2 and ln.n_numeric >= 1:
        # prose with a number in it has one long run of words and a short tail
        return not (n == 2 and ln.segments[0].x1 - ln.segments[0].x0 > 0.75 * (ln.x1 - ln.x0) and ln.n_numeric < 2
                    and len(ln.segments[0].text) > 90)
    return n >= 3


def _text_width(layout: Layout) -> tuple[float, float]:
    xs0 = [ln.x0 for ln in layout.lines]
    xs1 = [ln.x1 for ln in layout.lines]
    return (min(xs0), max(xs1)) if xs0 else (0.0, layout.width)


def _runs_on(ln: Line, nxt: Line | None) -> bool:
    """A long label-only line that wraps into the next line ("Changes in operating assets and liabilities,
    excluding effect of acquisitions, divestitures, and" / "currency  (207)  (265)") stays in its table."""
    text = ln.text.rstrip()
    if nxt is None or len(nxt.segments) < 2 or not nxt.n_numeric or text.endswith((".", ":")) or len(text) > 200:
        return False  # the wrapped rest of the label comes with its values
    return bool(WRAPS.search(text)) or nxt.segments[0].text[:1].islower()


def _blocks(layout: Layout) -> list[list[int]]:
    """Runs of line indexes that look tabular (with short label-only lines in between)."""
    lines = layout.lines
    left, right = _text_width(layout)
    full = max(1.0, right - left)
    table = [_is_table_line(ln) for ln in lines]
    blocks, cur, pending = [], [], []
    for i, ln in enumerate(lines):
        if cur:
            prev = lines[(pending or cur)[-1]]
            gap = ln.top - prev.bottom
            if gap > 2.2 * max(prev.height, ln.height) + 2:
                blocks.append(cur)
                cur, pending = [], []
        if table[i]:
            cur.extend(pending)
            pending = []
            cur.append(i)
        elif cur and len(ln.segments) == 1 and len(pending) < 5 and \
                ((ln.x1 - ln.x0) < 0.6 * full or _runs_on(ln, lines[i + 1] if i + 1 < len(lines) else None)):
            pending.append(i)  # a section row or wrapped label, kept if a table line follows
        elif cur:
            blocks.append(cur)
            cur, pending = [], []
    if cur:
        blocks.append(cur)
    return [b for b in blocks if sum(len(lines[i].segments) >= 2 for i in b) >= MIN_ROWS]


def _project(segs: list[Segment]) -> list[list[float]]:
    cols: list[list[float]] = []
    for x0, x1 in sorted((s.x0, s.x1) for s in segs):
        if cols and x0 <= cols[-1][1] + 0.5:
            cols[-1][1] = max(cols[-1][1], x1)
        else:
            cols.append([x0, x1])
    return cols


def _has_value(ln: Line) -> bool:
    return any(s.numeric and not _yearish(s.text) for s in ln.segments[1:])


def _columns(lines: list[Line]) -> list[tuple[float, float]]:
    """Column x-ranges from the whitespace between segments of multi-segment lines. Lines with values set the
    columns when there are enough of them: a text line across two of them (a group header such as "Three
    Months Ended December 31," over its two years) spans them rather than fusing them; text segments in no
    column of theirs (a text-only column) are added."""
    multi = [ln for ln in lines if len(ln.segments) >= 2]
    segs = [s for ln in multi for s in ln.segments]
    if not segs:
        return []
    data = [ln for ln in multi if _has_value(ln)]
    if len(data) >= 2:
        cols = _project([s for ln in data for s in ln.segments])
        if len(cols) >= 2:
            rest = [s for ln in multi if ln not in data for s in ln.segments
                    if not any(min(s.x1, c[1]) - max(s.x0, c[0]) > 0 for c in cols)]
            cols = sorted(cols + _project(rest))
            merged: list[list[float]] = []
            for c in cols:
                if merged and c[0] <= merged[-1][1] + 0.5:
                    merged[-1][1] = max(merged[-1][1], c[1])
                else:
                    merged.append(list(c))
            return [(a, b) for a, b in merged]
    cols = _project(segs)
    if len(cols) >= 2:
        return [(a, b) for a, b in cols]
    # one segment bridged every gap: retry without the widest segments (spanning headers, long labels)
    widths = sorted((s.x1 - s.x0) for s in segs)
    cap = widths[int(0.9 * (len(widths) - 1))]
    return [(a, b) for a, b in _project([s for s in segs if s.x1 - s.x0 <= cap])]


def _overlap(s: Segment, col: tuple[float, float]) -> float:
    return max(0.0, min(s.x1, col[1]) - max(s.x0, col[0]))


def _assign(seg: Segment, cols: list[tuple[float, float]]) -> list[int]:
    hits = [j for j, c in enumerate(cols) if _overlap(seg, c) > 0]
    if hits:
        return hits
    centre = (seg.x0 + seg.x1) / 2
    return [min(range(len(cols)), key=lambda j: min(abs(centre - cols[j][0]), abs(centre - cols[j][1])))]


def _header_lines(layout: Layout, first: int, cols: list[tuple[float, float]], left: float, full: float) -> int:
    """How many lines directly above the block are its column headers."""
    lines = layout.lines
    value_left = cols[1][0] if len(cols) > 1 else cols[0][0]
    reach = value_left - 0.5 * (value_left - left)

    def close(i: int) -> bool:
        ln, below = lines[i], lines[i + 1]
        return below.top - ln.bottom <= 1.8 * max(ln.height, below.height) + 2

    def heading(ln: Line) -> bool:
        over_values = all(s.x0 >= reach for s in ln.segments)
        return (over_values and (ln.x1 - ln.x0) < 0.9 * full) or (len(ln.segments) >= 2 and ln.n_numeric >= 1)

    def section(ln: Line) -> bool:
        return len(ln.segments) == 1 and ln.segments[0].x0 < reach and (ln.x1 - ln.x0) < 0.6 * full

    n, i, skipped = 0, first - 1, 0
    while i >= 0 and n - skipped < 4 and close(i):
        ln = lines[i]
        if not heading(ln):
            # section rows ("Assets" / "Current assets") between the column headers and the first row
            k = i
            while n == 0 and k > 0 and i - k < 3 and section(lines[k]) and close(k - 1):
                k -= 1
            if k < i and heading(lines[k]) and all(s.x0 >= reach for s in lines[k].segments):
                n, i, skipped = n + i - k, k, i - k
                continue
            break
        if all(FOOTNOTE.match(s.text) for s in ln.segments):
            skipped += 1  # a line of footnote marks is no header line of its own
        n, i = n + 1, i - 1
    return n


def _caption(layout: Layout, first: int) -> tuple[str, str]:
    """Title (nearest line above that reads like one) and a few lines of context above the table."""
    above = []
    i = first - 1
    while i >= 0 and len(above) < 4:
        ln = layout.lines[i]
        if layout.lines[min(i + 1, len(layout.lines) - 1)].top - ln.bottom > 40:
            break
        above.append(ln.text.strip())
        i -= 1
    above.reverse()
    captions = [t for t in above if not (t.startswith("(") and t.endswith(")")) and len(t) < 160]
    title = captions[-1] if captions else (above[-1] if above else "")
    context = "\n".join(above[-4:])  # one caption per line: a statement's title is a line of its own
    if not find_scale(context):
        # the scale stated once higher up ("(MILLIONS)" under the page head, "... as follows (in millions):"
        # a paragraph above): the nearest such line on the page goes first, the farthest from the table
        for k in range(i, max(-1, i - SCALE_LOOKBACK), -1):
            if k >= 0 and len(layout.lines[k].text) < 400 and find_scale(layout.lines[k].text):
                context = layout.lines[k].text.strip() + "\n" + context
                break
    return title, context


def _is_data_line(ln: Line, cols: list[tuple[float, float]]) -> bool:
    """A line with a non-year number in a value column (the first such line ends the header). Footnote marks
    ("(1)") over the columns of a header, with no row label, are not numbers."""
    values = [s for s in ln.segments if s.numeric and s.x0 > cols[0][1] - 1 and not _yearish(s.text)]
    if values and all(FOOTNOTE.match(s.text) for s in values) and not any(s.x1 <= cols[0][1] for s in ln.segments):
        return False
    return bool(values)


def _yearish(t: str) -> bool:
    t = t.strip()
    return len(t) == 4 and t.isdigit() and t[:2] in ("19", "20")


def _numeric_columns(data: list[list[str | None]], width: int) -> set[int]:
    """Value columns: most of their filled data cells are numbers (empty set when the table has no text column)."""
    from ingest.tables.layout import is_numeric_text

    out = set()
    for j in range(1, width):
        cells = [r[j] for r in data if r[j]]
        if cells and sum(is_numeric_text(c) for c in cells) * 2 > len(cells):
            out.add(j)
    return out if len(out) < width - 1 else set()


def _spread_group_headers(rows, lines: list[Line], cols, data_start: int) -> None:
    """A header line of group titles ("Years Ended December 31," or "Three Months Ended | Six Months Ended")
    is often narrower than the columns it heads: each empty value column takes the nearest title. A title over
    a text column (a "Location of Gain (Loss)" column between the labels and the numbers) heads that one only."""
    numeric = _numeric_columns(rows[data_start:], len(cols))
    for k in range(min(data_start, len(rows))):
        right = [s for s in lines[k].segments if s.x0 > cols[0][1]]  # a caption over the labels may sit beside
        segs = [s for s in right if not s.numeric or _yearish(s.text)]
        if not segs or len(segs) != len(right) or all(rows[k][j] for j in range(1, len(cols))):
            continue
        if not all(GROUP_HEADER.search(s.text) for s in segs):
            continue  # "EPS" over one column heads that column only
        if numeric and not any(rows[k][j] is not None for j in numeric):
            continue
        for j in range(1, len(cols)):
            if rows[k][j] is None and (not numeric or j in numeric):
                centre = (cols[j][0] + cols[j][1]) / 2
                near = min(segs, key=lambda s: abs((s.x0 + s.x1) / 2 - centre))
                rows[k][j] = near.text


def detect_borderless(layout: Layout) -> list[Grid]:
    grids = []
    lines = layout.lines
    if not lines:
        return grids
    left, right = _text_width(layout)
    full = max(1.0, right - left)
    for block in _blocks(layout):
        body = [lines[i] for i in block]
        cols = _columns(body)
        if len(cols) < 2:
            continue
        n_head = _header_lines(layout, block[0], cols, left, full)
        first = block[0] - n_head
        all_lines = lines[first:block[-1] + 1]
        # header = lines before the first line with a (non-year) number in a value column
        data_start = next((k for k, ln in enumerate(all_lines) if _is_data_line(ln, cols)), len(all_lines))
        if data_start >= len(all_lines) - 1 and sum(ln.n_numeric for ln in all_lines) == 0 and len(cols) < 3:
            continue
        rows: list[list[str | None]] = []
        indents: list[float | None] = []
        for k, ln in enumerate(all_lines):
            row: list[str | None] = [None] * len(cols)
            lead = ln.segments[0]
            indents.append(lead.x0 if _overlap(lead, cols[0]) > 0 else None)
            for s in ln.segments:
                hits = _assign(s, cols)
                if k >= data_start and len(hits) > 1:
                    # a data cell bridging columns: the column holding most of it
                    hits = [max(hits, key=lambda j: _overlap(s, cols[j]))]
                    if s.numeric is False and hits[0] != 0 and _overlap(s, cols[0]) > 0:
                        hits = [0]
                for j in hits:
                    row[j] = s.text if row[j] is None else f"{row[j]} {s.text}"
            rows.append(row)
        x0 = min(ln.x0 for ln in all_lines)
        x1 = max(ln.x1 for ln in all_lines)
        title, context = _caption(layout, first)
        _spread_group_headers(rows, all_lines, cols, data_start)
        grids.append(Grid((x0, all_lines[0].top, x1, all_lines[-1].bottom), rows, data_start, indents, title,
                          context, all_lines))
    return grids
