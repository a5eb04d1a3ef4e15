"""Characters of a pypdfium2 text page as the char dicts the table layout reads (top-left coordinates, font
size, upright or turned), so pages without ruling lines are searched for tables without pdfminer."""
from __future__ import annotations

import ctypes
import math


def pdfium_chars(textpage, text: str, page_height: float) -> list[dict]:
    import pypdfium2.raw as raw

    rect = raw.FS_RECTF()
    out = []
    for i, ch in enumerate(text):
        if ch.isspace() or ch in "\x02\ufffe":
            continue
        if not raw.FPDFText_GetLooseCharBox(textpage.raw, i, ctypes.byref(rect)):
            continue
        left, right, bottom, top = rect.left, rect.right, rect.bottom, rect.top
        if right - left <= 0 and top - bottom <= 0:
            continue
        angle = float(raw.FPDFText_GetCharAngle(textpage.raw, i))
        size = float(raw.FPDFText_GetFontSize(textpage.raw, i)) or (top - bottom)
        out.append({"text": ch, "x0": left, "x1": right, "top": page_height - top, "bottom": page_height - bottom,
                    "doctop": page_height - top, "size": round(size, 1), "upright": abs(math.sin(angle)) < 0.5,
                    "width": right - left, "height": top - bottom,
                    "matrix": (1.0, 0.0, 0.0, 1.0, left, page_height - bottom)})
    return out
