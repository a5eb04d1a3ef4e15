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
        if not raw.FPDFText_GetLooseCharBox(tp, i, ctypes.byref(rect)):
            continue
        left, right, bottom, top = rect.left, rect.right, rect.bottom, rect.top
        if right - left <= 0 and top - bottom <= 0:
            continue
        angle = float(raw.FPDFText_GetCharAngle(tp, i))
        upright = abs(math.sin(angle)) < 0.5
        size = float(raw.FPDFText_GetFontSize(tp, i))
        if like_pdfminer and raw.FPDFText_GetMatrix(tp, i, ctypes.byref(mat)):
            size *= math.hypot(mat.c, mat.d)
            ux, uy = mat.c, mat.d  # the glyph's up direction: the side opposite the descent is one size away
            if abs(uy) >= abs(ux):
                top, bottom = (bottom + size, bottom) if uy > 0 else (top, top - size)
            else:
                left, right = (right - size, right) if ux < 0 else (left, left + size)
        size = size or (top - bottom)
        out.append({"text": ch, "x0": left, "x1": right, "top": page_height - top, "bottom": page_height - bottom,
                    "doctop": page_height - top, "size": round(size, 1) if not like_pdfminer else size,
                    "upright": upright, "width": right - left, "height": top - bottom,
                    "matrix": (1.0, 0.0, 0.0, 1.0, left, page_height - bottom)})
    return out


GAP_SPACE = 0.3  # a space pdfium inserted counts where the gap it fills is this share of the font size or more


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
