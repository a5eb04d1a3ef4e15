"""A plain-text PDF for tests: each page a list of lines drawn top-down (reportlab, byte-stable)."""
from __future__ import annotations

from pathlib import Path


def write_lines_pdf(path: Path, pages: list[list[str]]) -> Path:
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=LETTER, invariant=1)
    for lines in pages:
        y = 720
        for line in lines:
            c.drawString(72, y, line)
            y -= 24
        c.showPage()
    c.save()
    return path
