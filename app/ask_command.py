"""``lexicon ask QUESTION``: streams the answer, then prints its citations (and SQL for BI answers)."""
from __future__ import annotations

from typing import Optional


def ask_command(settings, question: str, tenant: str = "demo", mode: str = "auto", thread: Optional[str] = None,
                service=None) -> int:
    from rich.console import Console

    from app.service import LexiconService

    console = Console()
    own = service is None
    service = service or LexiconService(settings)
    try:
        try:
            service.validate_question(question, mode)
        except ValueError as exc:
            console.print(f"[red]{exc}[/red]")
            return 2
        final = None
        for event in service.ask_stream(tenant, question, mode=mode, thread_id=thread):
            if event["type"] == "token":
                console.print(event["text"], end="", markup=False, highlight=False)
            elif event["type"] == "error":
                console.print(f"\n[red]{event['message']}[/red]")
                return 1
            else:
                final = event["answer"]
        console.print()
        print_final(console, final)
        return 0
    finally:
        if own:
            service.close()


def print_final(console, final: dict) -> None:
    """The answer's SQL, support note, citations and route (the text itself was streamed before)."""
    if final["route"] == "bi" or not final["answer"]:
        console.print(final["answer"], markup=False)
    if final.get("sql"):
        console.print(f"[dim]SQL:[/dim] {final['sql']}", markup=False)
    if not final["supported"]:
        console.print("[yellow]The documents do not support an answer.[/yellow]")
    for i, c in enumerate(final["citations"], 1):
        console.print(f"[{i}] {c['filename']}, page {c.get('page')}: \u201c{c['quote']}\u201d", markup=False)
    console.print(f"[dim]route {final['route']} · thread {final['thread_id']}[/dim]")
