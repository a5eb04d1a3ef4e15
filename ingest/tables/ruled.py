"""Ruled tables of a pypdfium2 page without pdfminer: the page's drawn paths read with pdfium's path API and
turned into the edges pdfplumber would see, then pdfplumber's own grid search (``TableFinder``: snap, join,
intersections, cells, tables) on them, and the cells' text from pdfium's characters.

Parsing a page with pdfminer (what ``page.edges``/``page.chars`` cost in pdfplumber) was ~90% of the parse; the
grid search itself is cheap. The edges follow pdfminer's reading of a path (``PDFLayoutAnalyzer.paint_path``:
subpaths split at each move, a single segment is a line, a closed axis-aligned four-sided one a rectangle,
anything else a curve through its segment end points) and pdfplumber's edges of each (four per rectangle, one
per line, one per curve segment), in pdfplumber's coordinates (x as stored, top = MediaBox height - y).
"""
from __future__ import annotations

import ctypes

from ingest.parsers.document import RawTable

MAX_SEGMENTS = 60_000  # path segments read per page; a drawing with more (a chart, a map) holds no ruled table


class TooManyPaths(Exception):
    """The page draws more path segments than ``MAX_SEGMENTS``."""


def _mul(m, n):
    """Matrix product m x n of PDF matrices (a, b, c, d, e, f): apply m, then n."""
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = n
    return (a * a2 + b * c2, a * b2 + b * d2, c * a2 + d * c2, c * b2 + d * d2,
            e * a2 + f * c2 + e2, e * b2 + f * d2 + f2)


def _paths(container, count, get, matrix, out: list, budget: list) -> None:
    """(matrix, [(op, x, y, close)]) of every path object, forms entered with their matrices composed."""
    import pypdfium2.raw as raw

    fm = raw.FS_MATRIX()
    x, y = ctypes.c_float(), ctypes.c_float()
    x_p, y_p = ctypes.byref(x), ctypes.byref(y)
    get_segment, get_point = raw.FPDFPath_GetPathSegment, raw.FPDFPathSegment_GetPoint
    get_type, get_close = raw.FPDFPathSegment_GetType, raw.FPDFPathSegment_GetClose
    for i in range(count(container)):
        obj = get(container, i)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind not in (raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_FORM):
            continue
        if not raw.FPDFPageObj_GetMatrix(obj, ctypes.byref(fm)):
            continue
        m = _mul((fm.a, fm.b, fm.c, fm.d, fm.e, fm.f), matrix) if matrix else (fm.a, fm.b, fm.c, fm.d, fm.e, fm.f)
        if kind == raw.FPDF_PAGEOBJ_FORM:
            _paths(obj, raw.FPDFFormObj_CountObjects, raw.FPDFFormObj_GetObject, m, out, budget)
            continue
        n = raw.FPDFPath_CountSegments(obj)
        budget[0] -= max(0, n)
        if budget[0] < 0:
            raise TooManyPaths
        segs = []
        for k in range(n):
            seg = get_segment(obj, k)
            if not seg or not get_point(seg, x_p, y_p):
                continue
            segs.append((get_type(seg), x.value, y.value, bool(get_close(seg))))
        out.append((m, segs))


def _shapes(segs) -> list[tuple[str, list[tuple[float, float]]]]:
    """pdfminer's operator string and end points per subpath: 'm' move, 'l' line, 'c' curve (pdfium gives a
    Bezier as three points, the last its end), 'h' close (back to the subpath's start)."""
    import pypdfium2.raw as raw

    out, shape, pts, pending = [], [], [], 0
    for kind, x, y, close in segs:
        if kind == raw.FPDF_SEGMENT_MOVETO:
            if len(shape) > 1:
                out.append(("".join(shape), pts))
            shape, pts, pending = ["m"], [(x, y)], 0
            continue
        if not shape:
            continue  # a path that does not begin with a move is invalid (pdfminer drops it)
        if kind == raw.FPDF_SEGMENT_BEZIERTO:
            pending += 1
            if pending < 3:
                continue
            pending = 0
            shape.append("c")
        else:
            shape.append("l")
        pts.append((x, y))
        if close:
            shape.append("h")
            pts.append(pts[0])
    if len(shape) > 1:
        out.append(("".join(shape), pts))
    return out


def page_edges(page) -> tuple[list[dict], bool]:
    """(pdfplumber's ``page.edges`` for a pypdfium2 page, whether it has lines or rectangles at all: pdfplumber
    searches no table on a page of curves alone)."""
    left, bottom, right, top = page.get_mediabox()
    height = top - bottom
    found: list = []
    import pypdfium2.raw as raw

    _paths(page.raw, raw.FPDFPage_CountObjects, raw.FPDFPage_GetObject, None, found, [MAX_SEGMENTS])
    lines, rects, curves = [], [], []
    for (a, b, c, d, e, f), segs in found:
        for shape, raw_pts in _shapes(segs):
            pts = [(a * px + c * py + e, b * px + d * py + f) for px, py in raw_pts]
            if len(shape) > 3 and shape[-2:] == "lh" and pts[-2] == pts[0]:
                shape = shape[:-2] + "h"
                pts.pop()
            if shape in ("mlh", "ml"):
                lines.append((pts[0], pts[1]))
            elif shape in ("mlllh", "mllll"):
                (x0, y0), (x1, y1), (x2, y2), (x3, y3), _ = pts
                square = (x0 == x1 and y1 == y2 and x2 == x3 and y3 == y0) or \
                         (y0 == y1 and x1 == x2 and y2 == y3 and x3 == x0)
                if pts[0] == pts[4] and square:
                    rects.append((pts[0], pts[2]))
                else:
                    curves.append(pts)
            else:
                curves.append(pts)
    edges = []

    def box(p, q, kind, orientation):
        x0, x1 = min(p[0], q[0]), max(p[0], q[0])
        y0, y1 = min(p[1], q[1]), max(p[1], q[1])
        edges.append({"object_type": kind, "x0": x0, "x1": x1, "y0": y0, "y1": y1, "top": height - y1,
                      "bottom": height - y0, "doctop": height - y1, "width": x1 - x0, "height": y1 - y0,
                      "orientation": orientation})

    for p, q in lines:
        box(p, q, "line", "h" if p[1] == q[1] else "v")
    for p, q in rects:
        x0, x1 = min(p[0], q[0]), max(p[0], q[0])
        y0, y1 = min(p[1], q[1]), max(p[1], q[1])
        box((x0, y1), (x1, y1), "rect_edge", "h")
        box((x0, y0), (x1, y0), "rect_edge", "h")
        box((x0, y0), (x0, y1), "rect_edge", "v")
        box((x1, y0), (x1, y1), "rect_edge", "v")
    for pts in curves:
        for p, q in zip(pts, pts[1:]):
            box(p, q, "curve_edge", "v" if p[0] == q[0] else ("h" if p[1] == q[1] else None))
    return edges, bool(lines or rects)


class EdgePage:
    """What pdfplumber's ``TableFinder`` and ``Table.extract`` read of a page: its edges, characters and box."""

    def __init__(self, edges: list[dict], chars: list[dict], width: float, height: float):
        self.edges, self.chars = edges, chars
        self.width, self.height = width, height
        self.bbox = (0.0, 0.0, width, height)


def _text_in(chars: list[dict], box) -> str:
    """pdfplumber's ``page.crop(box).extract_text()``: the characters touching the box."""
    from pdfplumber.utils import extract_text

    x0, top, x1, bottom = box
    inside = [c for c in chars if c["x1"] > x0 and c["x0"] < x1 and c["bottom"] > top and c["top"] < bottom]
    return extract_text(inside) if inside else ""


class _Extracting:
    """A pdfplumber ``Table`` whose ``extract()`` gives pdfplumber's cells (a character belongs to the row, then
    the cell, that holds its midpoint; the text by ``extract_text`` in the page's order) with the characters
    sorted by their vertical midpoint once, instead of every character tested against every row."""

    def __init__(self, table, chars: list[dict]):
        self.table, self.bbox = table, table.bbox
        self.mids = sorted(((c["top"] + c["bottom"]) / 2, (c["x0"] + c["x1"]) / 2, k, c) for k, c in enumerate(chars))
        self.vs = [m[0] for m in self.mids]

    def extract(self) -> list[list[str | None]]:
        from bisect import bisect_left

        from pdfplumber.utils import extract_text

        out = []
        for row in self.table.rows:
            x0, top, x1, bottom = row.bbox
            in_row = [m for m in self.mids[bisect_left(self.vs, top):bisect_left(self.vs, bottom)] if x0 <= m[1] < x1]
            in_row.sort(key=lambda m: m[2])
            cells: list[str | None] = []
            for cell in row.cells:
                if cell is None:
                    cells.append(None)
                    continue
                cx0, ctop, cx1, cbottom = cell
                got = [m[3] for m in in_row if cx0 <= m[1] < cx1 and ctop <= m[0] < cbottom]
                cells.append(extract_text(got) if got else "")
            out.append(cells)
        return out


def ruled_tables(page: EdgePage, number: int) -> list[RawTable]:
    """pdfplumber's ``find_tables()`` on the edges, cleaned as ``ingest.tables.pdf`` cleans pdfplumber's own."""
    from pdfplumber.table import TableFinder

    from ingest.tables.pdf import ruled_raw_tables

    tables = [_Extracting(t, page.chars) for t in TableFinder(page, {}).tables]
    return ruled_raw_tables(tables, lambda box: _text_in(page.chars, box), page.width, number)


def pdfium_page_tables(page, number: int, max_chars: int) -> tuple[list[RawTable], str | None] | None:
    """``ingest.tables.pdf.page_tables`` for a pypdfium2 page: (tables, the upright text of a sideways page or
    None); None where pdfplumber must read the page (a /Rotate page, text pdfium cannot place char by char);
    a ``ValueError`` when it has more than ``max_chars`` characters."""
    from ingest.tables.layout import layout_from_chars
    from ingest.tables.pdf import layout_tables
    from ingest.tables.pdfium import pdfium_chars

    if page.get_rotation() != 0:
        return None
    left, bottom, right, top = page.get_mediabox()
    width, height = right - left, top - bottom
    tp = page.get_textpage()
    try:
        n = tp.count_chars()
        text = tp.get_text_range(0, n) if n > 0 else ""
        if len(text) != n:
            return None
        chars = pdfium_chars(tp, text, height, like_pdfminer=True)
    finally:
        tp.close()
    glyphs = [c for c in chars if c["text"].strip()]
    if len(glyphs) > max_chars:
        raise ValueError("too many characters")
    # the word spaces go in too: pdfium's loose boxes overhang ('f' reaches past the space after it), so the
    # gaps alone glue words ('Cost ofsales'); a space char ends a word in pdfplumber's word extractor
    layout = layout_from_chars(chars, width, height)
    ruled: list[RawTable] = []
    if not layout.rotation:
        try:
            edges, has_rules = page_edges(page)
        except TooManyPaths:
            edges, has_rules = [], False
        if has_rules:
            ruled = ruled_tables(EdgePage(edges, chars, width, height), number)
    return layout_tables(layout, number, ruled)
