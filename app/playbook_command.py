"""``lexicon playbook add|list|remove``: a tenant's own clause kinds (``app.agent.clauses.playbook``).

Written straight to the metadata database of the settings (SQLite or Postgres), which a running server reads
on its next question: no restart, no code. ``add`` takes one kind from options or several from ``--file``
(a YAML list in the format of ``app/data/clause_kinds.yaml``); every kind is validated before anything is
written, and a bad one is reported with its field and reason (exit code 2).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from app.settings import get_settings

playbook_cli = typer.Typer(help="A tenant's own clause kinds (its playbook), merged over the built-in kinds.",
                           no_args_is_help=True)


def _engine():
    from ingest.store.sql import make_engine

    settings = get_settings()
    settings.ensure_dirs()
    return make_engine(settings.resolved_database_url)


def _fail(message: str) -> None:
    typer.echo(f"lexicon playbook: {message}", err=True)
    raise typer.Exit(2)


def _entries_from_file(path: Path) -> list[dict]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        _fail(f"{path}: {exc}")
    if isinstance(data, dict):
        data = data.get("kinds", [data] if "name" in data else None)
    if not isinstance(data, list) or not data:
        _fail(f"{path}: expected a list of clause kinds (name, description, wordings, headings, answer)")
    return data


@playbook_cli.command("add")
def add(
    tenant: str = typer.Option("demo", help="the tenant whose playbook this is"),
    name: Optional[str] = typer.Option(None, help="the kind's name, as a question names it"),
    description: Optional[str] = typer.Option(None, help="one or two sentences: what the clause does"),
    wording: Optional[list[str]] = typer.Option(None, help="repeatable: an example phrase as contracts word it"),
    heading: Optional[list[str]] = typer.Option(None, help="repeatable: a section-heading word or phrase"),
    answer: str = typer.Option("clause", help="jurisdiction | duration | amount | parties | date | clause"),
    synonym: Optional[list[str]] = typer.Option(None, help="repeatable: another name a user may give it"),
    states: Optional[list[str]] = typer.Option(None, help="repeatable: how a clause states itself, in terms and "
                                                          "connectors (\"assign! +12 without +5 consent!\")"),
    not_this: Optional[list[str]] = typer.Option(None, help="repeatable: what says a sentence is not this clause"),
    cue: Optional[list[str]] = typer.Option(None, help="repeatable: a short phrase its sentences use (same syntax)"),
    file: Optional[Path] = typer.Option(None, "--file", help="a YAML list of kinds instead of the options"),
) -> None:
    """Add (or replace, by name) clause kinds of a tenant."""
    from app.agent.clauses import playbook
    from app.agent.clauses.taxonomy import TaxonomyError

    if file is not None:
        if name or description or wording or heading or synonym or states or not_this or cue:
            _fail("give either --file or --name/--description/--wording/..., not both")
        entries = _entries_from_file(file)
    else:
        if not name:
            _fail("--name is required (or --file kinds.yaml)")
        entries = [{"name": name, "description": description, "wordings": list(wording or []) or None,
                    "headings": list(heading or []), "answer": answer, "synonyms": list(synonym or []),
                    "states": list(states or []), "not_this": list(not_this or []), "cues": list(cue or [])}]
    try:
        kinds = playbook.add_kinds(_engine(), tenant, entries)
    except TaxonomyError as exc:
        _fail(str(exc))
    for k in kinds:
        typer.echo(f"added {k.name!r} ({k.answer}) to the playbook of tenant {tenant!r}")


@playbook_cli.command("list")
def list_(tenant: str = typer.Option("demo"),
          built_in: bool = typer.Option(False, "--built-in", help="also list the shipped kinds")) -> None:
    """List a tenant's clause kinds."""
    from app.agent.clauses import playbook
    from app.agent.clauses.taxonomy import built_in as shipped

    kinds = playbook.list_kinds(_engine(), tenant)
    if not kinds:
        typer.echo(f"tenant {tenant!r} has no clause kinds of its own")
    for k in kinds:
        typer.echo(f"{k.name} [{k.answer}]: {k.description}")
    if built_in:
        for k in shipped():
            typer.echo(f"{k.name} [{k.answer}] (built-in): {k.description}")


@playbook_cli.command("remove")
def remove(name: str = typer.Argument(..., help="the kind's name"), tenant: str = typer.Option("demo")) -> None:
    """Remove one clause kind from a tenant's playbook."""
    from app.agent.clauses import playbook

    if not playbook.remove_kind(_engine(), tenant, name):
        _fail(f"tenant {tenant!r} has no clause kind {name!r}")
    typer.echo(f"removed {name!r} from the playbook of tenant {tenant!r}")
