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
        final, streamed = None, []
        for event in service.ask_stream(tenant, question, mode=mode, thread_id=thread):
            if event["type"] == "token":
                streamed.append(event["text"])
                console.print(event["text"], end="", markup=False, highlight=False)
            elif event["type"] == "error":
                console.print(f"\n[red]{event['message']}[/red]")
                return 1
            else:
                final = event["answer"]
        console.print()
        print_final(console, final, "".join(streamed))
        return 0
    finally:
        if own:
            service.close()


def _words(text: str) -> str:
    return " ".join((text or "").split())


def print_final(console, final: dict, streamed: str = "") -> None:
    """What the streamed tokens did not already show, each once: the answer (when it was not streamed as it
    stands), its SQL (when the answer does not state it), the support note, citations and route. Text from
    the documents or the SQL is never read as markup; the labels are styled."""
    from rich.text import Text

    answer = final.get("answer") or ""
    shown = _words(streamed)
    if not answer or _words(answer) != shown:
        console.print(Text(answer))
        shown = _words(answer)
    sql = final.get("sql")
    if sql and _words(sql) not in shown:
        console.print(Text.assemble(("SQL: ", "dim"), sql))
    if not final["supported"]:
        console.print(Text("The documents do not support an answer.", style="yellow"))
    for i, c in enumerate(final["citations"], 1):
        console.print(Text(f"[{i}] {c['filename']}, page {c.get('page')}: \u201c{c['quote']}\u201d"))
    console.print(Text(f"route {final['route']} · thread {final['thread_id']}", style="dim"))
