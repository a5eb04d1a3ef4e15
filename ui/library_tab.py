"""Document library: multi-file upload with a progress bar per file, the tenant's documents, delete.

Each uploaded file becomes one ingestion job (``service.upload``); the handler polls ``service.job`` and
redraws one row per file until every job has finished or failed. Upload errors (too large, unsupported
type, a broken PDF) show on that file's row and do not stop the other files.
"""
from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from ui.auth import require_tenant

FINISHED = {"done", "finished", "completed", "complete", "ingested", "unchanged", "succeeded", "success"}
FAILED = {"failed", "error", "cancelled", "rejected"}
POLL_SECONDS = 0.5
JOB_TIMEOUT_SECONDS = 30 * 60
DOC_COLUMNS = ["Document", "Status", "Pages", "Chunks", "Tables", "Error", "ID"]
SHOWN_NAME_CHARS = 80  # a longer file name shows its start and end; the full name is on hover (title)
# a name cell wraps anywhere and never widens the table past the screen (the status and error stay visible)
NAME_CELL = "style='max-width:28em;overflow-wrap:anywhere;word-break:break-word'"


def short_name(name: str, limit: int = SHOWN_NAME_CHARS) -> str:
    """``name`` as a table shows it: whole when short, else its start, an ellipsis and its end (extension)."""
    if len(name) <= limit:
        return name
    tail = max(12, limit // 4)
    return name[: limit - tail - 1] + "…" + name[-tail:]


def name_cell(name: str, cls: str) -> str:
    full = html.escape(name, quote=True)
    return f"<td class='{cls}' title='{full}' {NAME_CELL}>{html.escape(short_name(name))}</td>"


def keep_original_names(component: gr.File) -> gr.File:
    """Make ``component``'s paths carry the name the browser gave (``orig_name``): Gradio's copy on disk has a
    name cut to 200 bytes and stripped of some characters. (Wrapped on the instance: a gr.File subclass would
    make Gradio write a .pyi stub beside this module.)"""
    process = component._process_single_file

    def with_original_name(f):
        out = process(f)
        if isinstance(out, str) and getattr(f, "orig_name", None):
            from gradio.utils import NamedString

            out = NamedString(out)
            out.orig_name = f.orig_name
        return out

    component._process_single_file = with_original_name
    return component


def original_name(path) -> str:
    return getattr(path, "orig_name", None) or Path(path).name


@dataclass
class FileRow:
    filename: str
    job_id: str | None = None
    status: str = "uploading"
    progress: float = 0.0  # 0..1
    detail: str = ""
    error: str = ""
    done: bool = False
    extra: dict = field(default_factory=dict)


def _count(value: Any) -> int | str:
    if isinstance(value, (list, tuple, set)):
        return len(value)
    return "" if value is None else value


def _progress_of(job: dict) -> float:
    """A 0..1 fraction from whichever fields the job reports (a fraction, a percent, or done/total)."""
    p = job.get("progress")
    if isinstance(p, dict):
        done, total = p.get("done") or p.get("completed") or 0, p.get("total") or 0
        return min(1.0, done / total) if total else 0.0
    if isinstance(p, (int, float)):
        return min(1.0, float(p) / 100 if p > 1 else float(p))
    done, total = job.get("done") or job.get("completed"), job.get("total")
    if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total:
        return min(1.0, done / total)
    items = _job_items(job)
    if items:  # per-file items of an ingestion job: the share no longer pending
        return sum(1 for i in items if str(i.get("status")).lower() not in {"pending", "running"}) / len(items)
    return 0.0


def _job_items(job: dict) -> list[dict]:
    items = job.get("documents") or job.get("results") or job.get("items") or []
    return [i for i in items if isinstance(i, dict)]


def apply_job(row: FileRow, job: dict) -> FileRow:
    """Update a file's row from a job dict (``status``, ``progress``, ``error``, per-document results)."""
    status = str(job.get("status") or row.status).lower()
    row.status, row.progress = status, _progress_of(job)
    docs = _job_items(job)
    errors = [d.get("error") for d in docs if d.get("error")]
    row.error = str(job.get("error") or "; ".join(errors) or "")
    if docs:
        doc = docs[0]
        row.status = str(doc.get("status") or status).lower() if status in FINISHED else status
        row.detail = ", ".join(f"{k} {_count(doc[k])}" for k in ("pages", "tables") if doc.get(k) is not None)
    if row.status in FAILED or (row.error and status in FINISHED | FAILED):
        row.done, row.progress = True, row.progress
        row.status = "failed" if row.status not in FAILED else row.status
    elif status in FINISHED:
        row.done, row.progress = True, 1.0
    return row


def progress_html(rows: list[FileRow]) -> str:
    if not rows:
        return "<p class='lx-muted'>No uploads yet.</p>"
    lines = ["<table id='upload-table' style='width:100%;border-collapse:collapse'>",
             "<tr><th align=left>File</th><th align=left>Status</th><th align=left>Progress</th>"
             "<th align=left>Details</th></tr>"]
    for r in rows:
        color = "#c62828" if r.status in FAILED else ("#2e7d32" if r.done else "#1565c0")
        pct = int(round(r.progress * 100))
        detail = html.escape(r.error) if r.error else html.escape(r.detail)
        if r.extra.get("notice"):
            detail += f"<div class='upload-notice'>{html.escape(r.extra['notice'])}</div>"
        lines.append(
            f"<tr class='upload-row' data-status='{html.escape(r.status)}' data-done='{str(r.done).lower()}'>"
            f"{name_cell(r.filename, 'upload-name')}"
            f"<td style='color:{color};font-weight:600' class='upload-status'>{html.escape(r.status)}</td>"
            f"<td><progress max='100' value='{pct}' style='width:12em'></progress> {pct}%</td>"
            f"<td class='upload-detail' style='color:{'#c62828' if r.error else 'inherit'}'>{detail}</td></tr>")
    lines.append("</table>")
    return "\n".join(lines)


def documents_table(service: Any, tenant: str) -> list[list]:
    rows = []
    for d in service.documents(tenant):
        rows.append([d.get("filename"), d.get("status"), _count(d.get("pages")), _count(d.get("chunks")),
                     _count(d.get("tables")), d.get("error") or "", d.get("id") or d.get("doc_id")])
    return rows


def documents_html(rows: list[list]) -> str:
    """The tenant's documents as a table with one ``tr.doc-row`` per document (stable hooks for tests)."""
    if not rows:
        return "<p class='lx-muted' id='lib-docs-empty'>No documents yet.</p>"
    keys = ["name", "status", "pages", "chunks", "tables", "error", "id"]
    head = "".join(f"<th align=left>{c}</th>" for c in DOC_COLUMNS)
    body = []
    for r in rows:
        cells = []
        for key, value in zip(keys, r):
            if key == "name":
                cells.append(name_cell(str(value if value is not None else ""), "doc-name"))
                continue
            style = " style='color:#c62828'" if key == "error" or (key == "status" and value in FAILED) else ""
            cells.append(f"<td class='doc-{key}'{style}>{html.escape(str(value if value is not None else ''))}</td>")
        body.append(f"<tr class='doc-row' data-filename='{html.escape(str(r[0]))}'>{''.join(cells)}</tr>")
    return ("<table id='docs-table' style='width:100%;border-collapse:collapse'>"
            f"<tr>{head}</tr>{''.join(body)}</table>")


def delete_choices(rows: list[list]) -> list[tuple[str, str]]:
    return [(f"{short_name(str(r[0]))} ({r[6]})", str(r[6])) for r in rows if r[6] is not None]


def _follow(service: Any, tenant: str, row: FileRow, rows: list[FileRow], deadline: float):
    """Poll one file's job until it finishes, yielding the progress table after each poll."""
    while not row.done:
        if time.monotonic() > deadline:
            row.status, row.error, row.done = "failed", "timed out waiting for ingestion", True
            break
        time.sleep(POLL_SECONDS)
        try:
            apply_job(row, service.job(tenant, row.job_id))
        except Exception as exc:
            row.status, row.error, row.done = "failed", f"lost track of the job: {exc}", True
        yield progress_html(rows)


def discard_browser_upload(path: str) -> None:
    """Delete Gradio's temporary copy of a browser upload (never a file outside Gradio's upload folder)."""
    from gradio.utils import get_upload_folder

    p = Path(path).resolve()
    if Path(get_upload_folder()).resolve() in p.parents:
        p.unlink(missing_ok=True)
        try:
            p.parent.rmdir()
        except OSError:
            pass


def upload_files(service: Any, tenant: str, paths: list[str]):
    """Generator of progress HTML while the files are uploaded and ingested.

    Files go one at a time, each after the previous one's job has finished: the knowledge base ingests
    serially anyway, and a job submitted while another is writing can hit a locked SQLite store.
    """
    rows = [FileRow(filename=original_name(p), status="queued") for p in paths]
    yield progress_html(rows)
    deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
    for row, path in zip(rows, paths):
        row.status = "uploading"
        yield progress_html(rows)
        try:
            data = Path(path).read_bytes()
            discard_browser_upload(path)  # the service keeps its own copy only while ingesting
            job = service.upload(tenant, row.filename, data)
            row.job_id = str(job.get("job_id") or job.get("id") or "")
            row.extra["notice"] = job.get("notice") or ""  # "x.pdf replaces the earlier version 1 ..."
            apply_job(row, job)
            if not row.job_id and not row.done:
                row.status, row.error, row.done = "failed", "the server returned no job id", True
        except Exception as exc:  # one bad file must not stop the others
            row.status, row.error, row.done = "failed", str(exc) or type(exc).__name__, True
        yield progress_html(rows)
        yield from _follow(service, tenant, row, rows, deadline)


def build_library_tab(service: Any, session: gr.State):
    """Builds the tab; returns (documents table, delete dropdown) for the login hook to fill."""
    gr.Markdown("Upload PDF, DOCX, HTML, TXT/Markdown, XLSX, CSV or scanned pages (PNG, JPEG, TIFF: read by OCR). "
                "Each file keeps its name as given. Each file is parsed, split into "
                "passages with page numbers, embedded, and its tables are extracted for BI questions.")
    files = keep_original_names(gr.File(
        file_count="multiple", type="filepath", label="Documents", elem_id="lib-files",
        file_types=[".pdf", ".docx", ".html", ".htm", ".txt", ".md", ".xlsx", ".csv", ".png", ".jpg", ".jpeg", ".tif",
                    ".tiff"]))
    upload = gr.Button("Upload and ingest", variant="primary", elem_id="lib-upload")
    progress = gr.HTML(progress_html([]), elem_id="lib-progress")
    gr.Markdown("### Your documents")
    docs = gr.HTML(documents_html([]), elem_id="lib-docs")
    with gr.Row():
        to_delete = gr.Dropdown(choices=[], label="Document to delete", elem_id="lib-delete-pick", scale=3)
        delete = gr.Button("Delete", variant="stop", elem_id="lib-delete", scale=1)
        refresh = gr.Button("Refresh", elem_id="lib-refresh", scale=1)
    status = gr.Markdown(elem_id="lib-status")

    def refresh_docs(sess: dict | None):
        return library_values(service, require_tenant(sess))

    def run_upload(paths: list[str] | None, sess: dict | None):
        tenant = require_tenant(sess)
        if not paths:
            raise gr.Error("Choose one or more files first.")
        last = ""
        for last in upload_files(service, tenant, list(paths)):
            yield last, gr.skip(), gr.skip(), gr.skip()
        rows = documents_table(service, tenant)
        yield last, documents_html(rows), gr.Dropdown(choices=delete_choices(rows), value=None), None

    def run_delete(doc_id: str | None, sess: dict | None):
        tenant = require_tenant(sess)
        if not doc_id:
            raise gr.Error("Pick a document to delete.")
        ok = service.delete_document(tenant, doc_id)
        rows = documents_table(service, tenant)
        note = f"Deleted `{doc_id}`." if ok else f"No document `{doc_id}` (already deleted?)."
        return documents_html(rows), gr.Dropdown(choices=delete_choices(rows), value=None), note

    upload.click(run_upload, [files, session], [progress, docs, to_delete, files], concurrency_limit=None)
    delete.click(run_delete, [to_delete, session], [docs, to_delete, status])
    refresh.click(refresh_docs, [session], [docs, to_delete])
    return docs, to_delete


def library_values(service: Any, tenant: str) -> tuple:
    """Values for (documents table, delete dropdown) right after login."""
    rows = documents_table(service, tenant)
    return documents_html(rows), gr.Dropdown(choices=delete_choices(rows), value=None)
