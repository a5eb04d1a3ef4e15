"""Text PDFs for tests (reportlab, byte-stable): lines drawn top-down per page, or flowing paragraphs."""
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


def write_paragraphs_pdf(path: Path, blocks: list[tuple[str, object]]) -> Path:
    """``blocks``: (text, mark) with mark "h" (a heading), "break" (a page break after it) or None (body text)."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

    styles = getSampleStyleSheet()
    story = []
    for text, mark in blocks:
        story.append(Paragraph(text, styles["Heading2" if mark == "h" else "BodyText"]))
        story.append(Spacer(1, 4))
        if mark == "break":
            story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=LETTER, invariant=1).build(story)
    return path
