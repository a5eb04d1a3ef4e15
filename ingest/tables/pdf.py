"""Tables of one pdfplumber page: ruled ones from its drawn lines, borderless ones from text alignment.

Where both find the same table the ruled grid wins (its cells are drawn); every table carries its page
and bounding box in the page's own pdfplumber coordinates (points, origin top-left).
"""
from __future__ import annotations

from typing import Callable

from ingest.parsers.document import RawTable
from ingest.tables.detect import detect_borderless
from ingest.tables.layout import Layout, layout_text, page_layout


def _area(b) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _inter(a, b) -> float:
    return _area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def clean_ruled(rows: list[list]) -> list[list]:
    """pdfplumber's grid: None = covered by the cell to the left (a merged cell). Columns no cell starts in
    are dropped; a merged header cell is repeated over the columns it spans, a merged data cell is not."""
    width = max(len(r) for r in rows)
    rows = [list(r) + [None] * (width - len(r)) for r in rows]
    keep = [j for j in range(width) if any((r[j] or "").strip() for r in rows)]
    first_data = next((i for i, r in enumerate(rows)
                       if any(any(ch.isdigit() for ch in (c or "")) and not _yearish(c) for c in r[1:])), len(rows))
    out = []
    for i, r in enumerate(rows):
        filled, last = [], None
        for j in range(width):
            if r[j] is None and i < min(first_data, 4) and last is not None and j > 1:
                filled.append(last)
            else:
                filled.append(r[j] or "")
                last = r[j] if (r[j] and j > 0) else None
        out.append([filled[j] for j in keep])
    return out


def _yearish(c) -> bool:
    t = (c or "").strip()
    return len(t) == 4 and t.isdigit() and t[:2] in ("19", "20")


def _ruled(page, number: int) -> list[RawTable]:
    if not (page.rects or page.lines):
        return []

    def above(box) -> str:
        return page.crop(box).extract_text() or ""

    return ruled_raw_tables(page.find_tables(), above, float(page.width), number)


def ruled_raw_tables(tables, text_in: Callable[[tuple], str], width: float, number: int) -> list[RawTable]:
    """pdfplumber ``Table`` objects as RawTables: cleaned grids, the caption from the 60 pt above each."""
    out = []
    for table in tables:
        rows = table.extract()
        if len(rows) < 2 or max(len(r) for r in rows) < 2:
            continue
        rows = clean_ruled(rows)
        if len(rows[0]) < 2:
            continue
        top = table.bbox[1]
        above = text_in((0, max(0, top - 60), width, top)) if top > 1 else ""
        lines = [ln.strip() for ln in above.splitlines() if ln.strip()]
        captions = [ln for ln in lines if not (ln.startswith("(") and ln.endswith(")"))]
        title = (captions or lines or [""])[-1]
        out.append(RawTable(number, title, rows, context="\n".join(lines[-3:]), bbox=tuple(table.bbox),
                            source="ruled"))
    return out


def _has_data(row) -> bool:
    return any(any(ch.isdigit() for ch in (c or "")) and not _yearish(c) for c in row[1:])


def _prefer_aligned(ruled: RawTable, aligned: RawTable) -> bool:
    """Shaded rows drawn as rectangles make a poor grid: currency signs in cells of their own, or the
    column headers left outside the rules while the aligned reading has them."""
    cells = [str(c).strip() for r in ruled.rows for c in r if c]
    lone = sum(c in ("$", "€", "£", "%", "¥") for c in cells)
    headless = (_has_data(ruled.rows[0]) and (aligned.header_rows or 0) > 0
                and aligned.bbox[1] < ruled.bbox[1] - 2 and aligned.bbox[3] >= ruled.bbox[3] - 2)
    return lone >= 2 or headless


def _join_continuations(tables: list[RawTable]) -> list[RawTable]:
    """An aligned table without headers right under another of the same columns continues it."""
    out: list[RawTable] = []
    for t in tables:
        prev = out[-1] if out else None
        if (prev is not None and t.source == prev.source == "aligned" and not t.header_rows
                and len(t.rows[0]) == len(prev.rows[0]) and 0 <= t.bbox[1] - prev.bbox[3] < 60
                and min(t.bbox[2], prev.bbox[2]) - max(t.bbox[0], prev.bbox[0]) > 0.7 * (t.bbox[2] - t.bbox[0])):
            prev.rows = prev.rows + t.rows
            prev.indents = (prev.indents + t.indents) if prev.indents and t.indents else None
            prev.bbox = (min(prev.bbox[0], t.bbox[0]), prev.bbox[1], max(prev.bbox[2], t.bbox[2]), t.bbox[3])
            continue
        out.append(t)
    return out


def page_tables(page, number: int) -> tuple[list[RawTable], str | None]:
    """(tables on a pdfplumber page, the page's upright text when it was sideways else None)."""
    layout = page_layout(page)
    return layout_tables(layout, number, [] if layout.rotation else _ruled(page, number))


def layout_tables(layout: Layout, number: int, ruled: list[RawTable]) -> tuple[list[RawTable], str | None]:
    """Borderless tables of a layout beside the ruled ones already found on the page."""
    found = list(ruled)
    for grid in detect_borderless(layout):
        box = layout.to_page(grid.bbox)
        aligned = RawTable(number, grid.title, grid.rows, context=grid.context, bbox=box,
                           header_rows=grid.header_rows, source="aligned", indents=grid.indents)
        clash = [r for r in ruled if _inter(box, r.bbox) > 0.4 * min(_area(box), _area(r.bbox))]
        if clash and all(_prefer_aligned(r, aligned) for r in clash):
            found = [t for t in found if t not in clash]
        elif clash:
            continue
        found.append(aligned)
    found.sort(key=lambda t: (t.bbox[1], t.bbox[0]) if t.bbox else (0, 0))
    return _join_continuations(found), (layout_text(layout) if layout.rotation else None)
