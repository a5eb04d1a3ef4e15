"""Characters of a pypdfium2 text page as the char dicts the table layout reads (top-left coordinates, font
size, upright or turned), so pages are searched for tables without pdfminer."""
from __future__ import annotations

import ctypes
import math


def pdfium_chars(textpage, text: str, page_height: float, like_pdfminer: bool = False) -> list[dict]:
    """The page's characters in pdfplumber's coordinates (``page_height``: the MediaBox height).

    ``like_pdfminer``: the boxes and sizes pdfminer gives (what pdfplumber's ruled-table text was read from): the
    size is the font size times the text matrix's scale, the box runs from the baseline's descent to one font
    size above it (pdfium's loose box reaches the font's ascent), and word spaces are kept (pdfplumber's text
    extraction ends a word at one). Otherwise
    pdfium's loose boxes and nominal font sizes, without spaces (what the aligned-table search was tuned on).
    """
    import pypdfium2.raw as raw

    tp = textpage.raw
    rect, mat = raw.FS_RECTF(), raw.FS_MATRIX()
    rect_p, mat_p = ctypes.byref(rect), ctypes.byref(mat)
    loose_box, font_size, char_matrix = raw.FPDFText_GetLooseCharBox, raw.FPDFText_GetFontSize, raw.FPDFText_GetMatrix
    char_angle, hypot, sin = raw.FPDFText_GetCharAngle, math.hypot, math.sin
    out: list[dict] = []
    for i, ch in enumerate(text):
        if ch in "\x02\ufffe":
            if not like_pdfminer:
                continue
            ch = "-"  # a hyphen pdfium marked as a soft one at a line's end
        if ch.isspace():
            if like_pdfminer and ch not in "\r\n":
                _space(tp, text, i, ch, page_height, out, rect)
            continue
        if not loose_box(tp, i, rect_p):
            continue
        left, right, bottom, top = rect.left, rect.right, rect.bottom, rect.top
        if right - left <= 0 and top - bottom <= 0:
            continue
        size = font_size(tp, i)
        if like_pdfminer and char_matrix(tp, i, mat_p):
            scale = hypot(mat.c, mat.d)
            size *= scale
            # pdfium's char angle is atan2(b, a) of this matrix
            upright = abs(mat.b) < 0.5 * (hypot(mat.a, mat.b) or 1.0)
            ux, uy = mat.c, mat.d  # the glyph's up direction: the side opposite the descent is one size away
            if abs(uy) >= abs(ux):
                top, bottom = (bottom + size, bottom) if uy > 0 else (top, top - size)
            else:
                left, right = (right - size, right) if ux < 0 else (left, left + size)
        else:
            upright = abs(sin(char_angle(tp, i))) < 0.5
            size = round(size, 1)
        size = size or (top - bottom)
        out.append({"text": ch, "x0": left, "x1": right, "top": page_height - top, "bottom": page_height - bottom,
                    "doctop": page_height - top, "size": size, "upright": upright, "width": right - left,
                    "height": top - bottom, "matrix": (1.0, 0.0, 0.0, 1.0, left, page_height - bottom)})
    return out


GAP_SPACE = 0.2  # a space pdfium inserted counts where the gap it fills is this share of the font size or more


def _space(tp, text: str, i: int, ch: str, page_height: float, out: list[dict], rect) -> None:
    """A word space as pdfminer has it: a drawn one with its own box; one pdfium inserted (it also replaces some
    drawn ones) spans the gap to the next character when that gap is wide enough for a word space."""
    import pypdfium2.raw as raw

    if not out or not raw.FPDFText_GetLooseCharBox(tp, i, ctypes.byref(rect)):
        return
    prev = out[-1]
    left, right = rect.left, rect.right
    if right - left <= 0 or raw.FPDFText_IsGenerated(tp, i):
        if i + 1 >= len(text) or text[i + 1].isspace() or \
                not raw.FPDFText_GetLooseCharBox(tp, i + 1, ctypes.byref(rect)) or \
                rect.left - prev["x1"] < GAP_SPACE * prev["size"]:
            return
        left, right, ch = prev["x1"], rect.left, " "
    out.append({"text": ch, "x0": left, "x1": right, "top": prev["top"], "bottom": prev["bottom"],
                "doctop": prev["doctop"], "size": prev["size"], "upright": prev["upright"], "width": right - left,
                "height": prev["height"], "matrix": (1.0, 0.0, 0.0, 1.0, left, prev["bottom"])})


def count_paths(page, stop: int) -> int:
    """Path objects on the page and in its forms one level down, counted up to ``stop`` (raw pdfium calls: the
    wrapper objects of ``PdfPage.get_objects`` cost more than the rest of a page's text pass)."""
    import pypdfium2.raw as raw

    path, form = raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_FORM
    n = 0
    for i in range(raw.FPDFPage_CountObjects(page.raw)):
        obj = raw.FPDFPage_GetObject(page.raw, i)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == path:
            n += 1
        elif kind == form:
            for k in range(raw.FPDFFormObj_CountObjects(obj)):
                n += raw.FPDFPageObj_GetType(raw.FPDFFormObj_GetObject(obj, k)) == path
                if n >= stop:
                    return n
        if n >= stop:
            return n
    return n
