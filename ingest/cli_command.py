"""``lexicon ingest PATH...``: a progress bar over files, pages and chunks, then a summary table.

``--resume`` first finishes every ingest job a crash or kill left open (all tenants; the server does the same
at start). Exit code 0 when every file was ingested or unchanged, 1 when any file failed, 2 when nothing was
found.
"""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ingest.types import IngestSummary, ProgressEvent


def ingest_command(settings, paths: list[Path], tenant: str, console: Console | None = None,
                   resume: bool = False) -> int:
    from ingest.jobs import expand_paths
    from ingest.knowledge_base import KnowledgeBase

    console = console or Console()
    files = expand_paths([Path(p) for p in paths or []])
    if not files and not resume:
        console.print("[red]no files to ingest[/red] (supported: PDF, DOCX, HTML, TXT/Markdown, XLSX, CSV)")
        return 2
    kb = KnowledgeBase(settings)
    summaries: list[IngestSummary] = []
    try:
        if resume:
            summaries += kb.resume_unfinished_jobs()
            console.print(f"resumed {len(summaries)} unfinished ingest job(s)")
            if not files:
                for summary in summaries:
                    print_summary(console, summary)
                return 1 if any(s.failed for s in summaries) else 0
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[info]}"), console=console, transient=False) as bar:
            files_task = bar.add_task("files", total=len(files), info="")
            pages_task = bar.add_task("pages", total=None, info="")
            chunks_task = bar.add_task("chunks", total=None, info="")
            ocr_task = bar.add_task("OCR pages", total=None, info="", visible=False)
            totals = {"pages": 0, "chunks": 0}

            def on_progress(e: ProgressEvent) -> None:
                if e.stage == "job_start":
                    bar.update(files_task, completed=e.file_index)
                elif e.stage == "file_start":
                    bar.update(files_task, info=e.filename)
                elif e.stage == "parsed":
                    bar.update(pages_task, advance=e.pages, info=f"{e.filename}: {e.pages} pages parsed")
                    bar.update(chunks_task, total=e.chunks, completed=0, info=f"{e.filename}: embedding")
                elif e.stage == "ocr_page":
                    bar.update(ocr_task, advance=1, visible=True, info=f"{e.filename}: page {e.pages}")
                elif e.stage == "embedded":
                    bar.update(chunks_task, completed=e.chunks_embedded)
                elif e.stage == "file_done" and e.result is not None:
                    if e.result.status == "ingested":
                        totals["pages"] += e.result.pages
                        totals["chunks"] += e.result.chunks
                    bar.update(files_task, advance=1,
                               info=f"{totals['pages']} pages, {totals['chunks']} chunks ingested")

            summary = kb.ingest_paths(list(paths), tenant, progress=on_progress)
    finally:
        kb.close()
    for done in summaries + [summary]:
        print_summary(console, done)
    return 1 if any(s.failed for s in summaries + [summary]) else 0


def print_summary(console: Console, summary: IngestSummary) -> None:
    table = Table(title=f"ingest job {summary.job_id}")
    for col in ("file", "status", "pages", "chunks", "tables", "error"):
        table.add_column(col)
    for r in summary.results:
        colour = {"ingested": "green", "unchanged": "cyan", "failed": "red"}.get(r.status, "white")
        table.add_row(r.filename, f"[{colour}]{r.status}[/{colour}]", str(r.pages), str(r.chunks), str(r.tables),
                      r.error or "")
    console.print(table)
    console.print(
        f"{summary.files} files: {summary.ingested} ingested, {summary.unchanged} unchanged, {summary.failed} failed;"
        f" {summary.pages} pages, {summary.chunks} chunks, {summary.tables} tables in {summary.seconds:.1f} s"
    )
