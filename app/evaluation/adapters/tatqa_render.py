"""TAT-QA contexts rendered as documents users would upload: the table as a real HTML ``<table>`` (header rows
as ``<th>``) plus the paragraphs, or the same as a PDF made with reportlab (the path users hit most)."""
from __future__ import annotations

import html
import re
from pathlib import Path

NUMERIC = re.compile(r"^[\s$(\-\u2212\u2014%]*[\d,.]+[\s)%]*$")


def header_rows(table: list[list[str]]) -> int:
    """Leading rows with no numeric body cell (years count as headers) are header rows."""
    n = 0
    for row in table:
        body = [c for c in row[1:] if str(c).strip()]
        if body and any(NUMERIC.match(str(c)) and not re.fullmatch(r"\s*(19|20)\d\d\s*", str(c)) for c in body):
            break
        n += 1
        if n >= 3:
            break
    return min(n, max(len(table) - 1, 0))


def render_html(context: dict, title: str) -> str:
    table = context["table"]["table"]
    nh = header_rows(table)
    out = [f"<html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head><body>",
           f"<h1>{html.escape(title)}</h1>", "<table>"]
    for i, row in enumerate(table):
        tag = "th" if i < nh else "td"
        out.append("<tr>" + "".join(f"<{tag}>{html.escape(str(c))}</{tag}>" for c in row) + "</tr>")
    out.append("</table>")
    for p in sorted(context.get("paragraphs") or [], key=lambda p: p.get("order", 0)):
        out.append(f"<p>{html.escape(p['text'])}</p>")
    out.append("</body></html>")
    return "\n".join(out)


def render_pdf(context: dict, title: str, path: Path) -> None:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import letter
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    styles = getSampleStyleSheet()
    table = [[str(c) for c in row] for row in context["table"]["table"]]
    nh = header_rows(table)
    story = [Paragraph(html.escape(title), styles["Heading1"])]
    t = Table(table, repeatRows=nh)
    t.setStyle(TableStyle([("FONTSIZE", (0, 0), (-1, -1), 8), ("LINEBELOW", (0, max(nh - 1, 0)), (-1, max(nh - 1, 0)),
                                                                                0.5, colors.black),
                           ("GRID", (0, 0), (-1, -1), 0.25, colors.grey)]))
    story += [t, Spacer(1, 12)]
    for p in sorted(context.get("paragraphs") or [], key=lambda p: p.get("order", 0)):
        story.append(Paragraph(html.escape(p["text"]), styles["BodyText"]))
    SimpleDocTemplate(str(path), pagesize=letter).build(story)


def table_text(context: dict) -> str:
    return "\n".join(" ".join(str(c) for c in row) for row in context["table"]["table"])
