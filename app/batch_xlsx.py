"""A batch job as a formatted workbook: a results sheet (frozen header, filters, widths, wrapped text, route,
supported, citations with pages) and a summary sheet (counts, per question and per document)."""
from __future__ import annotations

import io
import os
from pathlib import Path

COLUMNS = [("document", 28), ("question_id", 16), ("question", 40), ("answer", 60), ("supported", 11),
           ("route", 8), ("citations", 70), ("status", 9), ("error", 30)]


def citations_text(row: dict) -> str:
    return "\n".join(f"{c.get('filename')} p.{c.get('page') if c.get('page') is not None else '?'}: {c.get('quote', '')}"
                     for c in row.get("citations") or [])


def workbook(rows: list[dict], job: dict | None = None):
    import openpyxl
    from openpyxl.styles import Alignment, Font, PatternFill
    from openpyxl.utils import get_column_letter

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "results"
    header_font, header_fill = Font(bold=True, color="FFFFFF"), PatternFill("solid", fgColor="305496")
    ws.append([name for name, _ in COLUMNS])
    for r in rows:
        supported = None if r.get("supported") is None else ("yes" if r["supported"] else "no")
        ws.append([r.get("document"), r.get("question_id"), r.get("question"), r.get("answer"), supported,
                   r.get("route"), citations_text(r), r.get("status", "done"), r.get("error")])
    wrap = Alignment(wrap_text=True, vertical="top")
    for i, (_, width) in enumerate(COLUMNS, 1):
        ws.column_dimensions[get_column_letter(i)].width = width
    for cell in ws[1]:
        cell.font, cell.fill = header_font, header_fill
    for row in ws.iter_rows(min_row=2):
        for cell in row:
            cell.alignment = wrap
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = f"A1:{get_column_letter(len(COLUMNS))}{max(1, len(rows) + 1)}"

    summary = wb.create_sheet("summary")
    done = [r for r in rows if r.get("status", "done") == "done"]
    lines = [("job", (job or {}).get("id", "")), ("status", (job or {}).get("status", "")),
             ("runner", (job or {}).get("runner", "")), ("documents", len({r.get("document") for r in rows})),
             ("questions", len({r.get("question_id") for r in rows})), ("pairs", len(rows)), ("answered", len(done)),
             ("supported", sum(bool(r.get("supported")) for r in done)),
             ("not supported", sum(r.get("supported") is False for r in done)),
             ("failed", sum(r.get("status") == "failed" for r in rows)),
             ("pending", sum(r.get("status") == "pending" for r in rows))]
    for line in lines:
        summary.append(list(line))
    summary.append([])
    summary.append(["question_id", "question", "answered", "supported", "failed"])
    head = summary.max_row
    for qid in dict.fromkeys(r.get("question_id") for r in rows):
        mine = [r for r in rows if r.get("question_id") == qid]
        summary.append([qid, mine[0].get("question"), sum(r.get("status", "done") == "done" for r in mine),
                        sum(bool(r.get("supported")) for r in mine), sum(r.get("status") == "failed" for r in mine)])
    summary.append([])
    summary.append(["document", "answered", "supported", "failed"])
    doc_head = summary.max_row
    for doc in dict.fromkeys(r.get("document") for r in rows):
        mine = [r for r in rows if r.get("document") == doc]
        summary.append([doc, sum(r.get("status", "done") == "done" for r in mine),
                        sum(bool(r.get("supported")) for r in mine), sum(r.get("status") == "failed" for r in mine)])
    for n in (head, doc_head):
        for cell in summary[n]:
            cell.font, cell.fill = header_font, header_fill
    for n in range(1, len(lines) + 1):
        summary.cell(row=n, column=1).font = Font(bold=True)
    for col, width in zip("ABCDE", (22, 60, 11, 11, 9)):
        summary.column_dimensions[col].width = width
    for row in summary.iter_rows():
        for cell in row:
            cell.alignment = wrap
    return wb


def xlsx_bytes(rows: list[dict], job: dict | None = None) -> bytes:
    buf = io.BytesIO()
    workbook(rows, job).save(buf)
    return buf.getvalue()


def write_atomic(path: Path, data: bytes) -> None:
    """Write next to ``path`` and rename over it: a reader never sees half a file, nothing is left behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
