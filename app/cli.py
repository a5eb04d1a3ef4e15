"""The ``lexicon`` command line. Each subcommand imports its module lazily so ``lexicon --help`` is fast."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Optional

import typer

from app.settings import get_settings

API_KEY_HELP = "API key for a running server (default LEXICON_API_KEY, else the settings' key for --tenant)"


def remote_calls():
    import app.remote
    return app.remote


def beside_server(remote, local, tenant: str, key: Optional[str]) -> int:
    """Run ``remote(client, console)`` against the server on this data dir if one runs, else ``local()``.

    Never a traceback: a failure prints what happened and what to do (LEXICON_DEBUG=1 shows the trace)."""
    import os

    from rich.console import Console

    from app.remote import Client, RemoteError, api_key, find_server

    settings, console = get_settings(), Console()
    client = None
    try:
        url = find_server(settings)
        if url is None:
            return local()
        console.print(f"[dim]a lexicon server runs on {settings.data_dir}: using {url}[/dim]")
        client = Client(url, api_key(settings, tenant, key))
        return remote(client, console)
    except RemoteError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        return 1
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow] (rerun the same command to continue)")
        return 130
    except Exception as exc:
        if os.environ.get("LEXICON_DEBUG"):
            raise
        console.print(f"[red]{type(exc).__name__}: {exc}[/red]", highlight=False, markup=False)
        console.print(f"If another process holds {settings.data_dir} (a server started some other way, another "
                      "command), stop it, or start the server with `lexicon serve` so that this command goes "
                      "through its API, or use another LEXICON_DATA_DIR. LEXICON_DEBUG=1 shows the traceback.",
                      highlight=False, markup=False)
        return 1
    finally:
        if client is not None:
            client.close()


cli = typer.Typer(help="lexicon-rag: long-context RAG for legal and financial documents.", no_args_is_help=True)


@cli.command()
def serve(
    samples: bool = typer.Option(False, "--samples", help="write and ingest the shipped sample corpus first"),
    host: Optional[str] = typer.Option(None, help="bind address (default LEXICON_HOST)"),
    port: Optional[int] = typer.Option(None, help="port (default LEXICON_PORT)"),
) -> None:
    """Serve the web UI and the REST API (with the engine's OpenAI-compatible routes) on one app."""
    from app.server import serve as run_server

    run_server(get_settings(), samples=samples, host=host, port=port)


@cli.command()
def ingest(
    paths: Optional[list[Path]] = typer.Argument(None, help="files or folders to ingest"),
    tenant: str = typer.Option("demo", help="tenant that owns the documents"),
    resume: bool = typer.Option(False, "--resume", help="first finish every ingest job a crash left open"),
    api_key: Optional[str] = typer.Option(None, "--api-key", help=API_KEY_HELP),
) -> None:
    """Ingest documents (PDF, DOCX, HTML, TXT/Markdown, XLSX/CSV) with a progress bar and a summary.

    With a server running on this data dir, the files go through its REST API."""
    from ingest.cli_command import ingest_command

    raise typer.Exit(beside_server(
        lambda client, console: remote_calls().remote_ingest(client, paths or [], console),
        lambda: ingest_command(get_settings(), paths or [], tenant, resume=resume), tenant, api_key))


@cli.command()
def ask(
    question: str = typer.Argument(...),
    tenant: str = typer.Option("demo"),
    mode: str = typer.Option("auto", help="auto | rag | long | bi"),
    thread: Optional[str] = typer.Option(None, help="conversation thread id"),
    api_key: Optional[str] = typer.Option(None, "--api-key", help=API_KEY_HELP),
) -> None:
    """Ask the agent a question; prints the answer and its citations (through a running server if any)."""
    from app.ask_command import ask_command

    raise typer.Exit(beside_server(
        lambda client, console: remote_calls().remote_ask(client, question, mode, thread, console),
        lambda: ask_command(get_settings(), question, tenant=tenant, mode=mode, thread=thread), tenant, api_key))


@cli.command()
def batch(
    docs: Path = typer.Option(..., help="folder of documents"),
    questions: Path = typer.Option(..., help="YAML file of questions"),
    out: Path = typer.Option(..., help="results.jsonl or results.xlsx"),
    tenant: str = typer.Option("demo"),
    api_key: Optional[str] = typer.Option(None, "--api-key", help=API_KEY_HELP),
) -> None:
    """Ask every question of every document; resumable; one row per (document, question)."""
    from app.batch import batch_command, check_args

    def remote(client, console):
        qs, problem = check_args(docs, questions, out)
        if problem:
            console.print(f"[red]{problem}[/red]", highlight=False)
            return 2
        return remote_calls().remote_batch(client, docs, qs, out, console)

    raise typer.Exit(beside_server(remote, lambda: batch_command(get_settings(), docs, questions, out, tenant=tenant),
                                   tenant, api_key))


@cli.command()
def plan(
    model: str = typer.Option("puzzle-75b-a9b", help="preset name or path to a config.json"),
    weights: str = typer.Option("nvfp4", help="bf16 | fp8 | nvfp4"),
    kv_dtype: str = typer.Option("fp8", help="bf16 | fp8"),
    gpu_gib: float = typer.Option(79.1, help="device memory in GiB (an H100 80GB reports 79.1)"),
    context: int = typer.Option(1_000_000, help="tokens per context (the engine's max_model_len)"),
    memory_fraction: Optional[float] = typer.Option(None, help="fraction of device memory the engine may use "
                                                    "(default: the engine's, 1.0 with the runtime reserve counted)"),
    max_num_seqs: int = typer.Option(8, help="the engine's max_num_seqs"),
    chunk_tokens: Optional[int] = typer.Option(None, help="prefill chunk (default: the engine's for the device)"),
    snapshot_slots: Optional[int] = typer.Option(None, help="snapshot state slots (default: the engine's)"),
    spec_seqs: Optional[int] = typer.Option(None, help="sequences that may speculate at once (default: the engine's)"),
    device: str = typer.Option("cuda", help="whose engine defaults: cuda | cpu"),
) -> None:
    """Capacity planner: what the engine allocates (the same budget function) and how many contexts fit."""
    from engine.planner import plan_command

    raise typer.Exit(plan_command(model, weights, kv_dtype, gpu_gib, context, memory_fraction,
                                  max_num_seqs=max_num_seqs, chunk_tokens=chunk_tokens, snapshot_slots=snapshot_slots,
                                  spec_seqs=spec_seqs, device=device))


@cli.command()
def bench(name: str = typer.Argument("all", help="engine | memory | ingest | all")) -> None:
    """Run the benchmarks under bench/ (ratios against a reference run in the same process)."""
    root = Path(__file__).resolve().parent.parent / "bench"
    scripts = sorted(root.glob("bench_*.py")) if name == "all" else [root / f"bench_{name}.py"]
    rc = 0
    for script in scripts:
        if not script.exists():
            typer.echo(f"no benchmark {script.name}", err=True)
            raise typer.Exit(2)
        typer.echo(f"== {script.name}")
        rc |= subprocess.call([sys.executable, str(script)])
    raise typer.Exit(rc)


@cli.command("eval")
def eval_(
    dataset: Path = typer.Argument(..., help="dataset folder (CUAD, FinanceBench, TAT-QA) or a questions .jsonl"),
    kind: Optional[str] = typer.Option(None, help="cuad | financebench | tatqa | jsonl (default: detected)"),
    limit: Optional[int] = typer.Option(None, help="at most N questions"),
    docs: Optional[int] = typer.Option(None, help="at most N documents (and their questions)"),
    mode: str = typer.Option("auto", help="auto | rag | bi | long"),
    retrieval_only: bool = typer.Option(False, "--retrieval-only", help="retrieval metrics only (no LLM)"),
    out: Optional[Path] = typer.Option(None, help="results JSON (a .journal.jsonl beside it makes reruns resume)"),
    data_dir: Optional[Path] = typer.Option(None, help="where the cached evaluation index lives (default DATA_DIR/eval)"),
    names: bool = typer.Option(True, "--names/--no-names", help="CUAD: name the agreement and parties, or ask "
                               "the bare question restricted to the right contract"),
    category: Optional[list[str]] = typer.Option(None, help="repeatable: CUAD categories (default the core 14); TAT-QA answer types and/or sources (arithmetic, table ...); other datasets' categories"),
    render: str = typer.Option("html", help="TAT-QA documents as html | pdf"),
    workers: int = typer.Option(1, help="questions in flight at once (the engine batches them)"),
    report_only: bool = typer.Option(False, "--report-only", help="score what the journal holds; ask nothing new"),
    unseen_kinds: bool = typer.Option(False, "--unseen-kinds", help="without the shipped clause kinds: every "
                                      "question answered as one of a kind nobody wrote"),
) -> None:
    """Evaluate retrieval and answers on a dataset: recall@k, accuracy, citations, supported precision."""
    from app.evaluation.command import eval_command

    try:
        eval_command(get_settings(), dataset, kind=kind, limit=limit, docs=docs, mode=mode,
                     retrieval_only=retrieval_only, out=out, data_dir=data_dir, names=names,
                     categories=category or None, render=render, workers=workers,
                     report_only=report_only, unseen_kinds=unseen_kinds)
    except ValueError as exc:
        typer.echo(f"lexicon eval: {exc}", err=True)
        raise typer.Exit(2)


from app.playbook_command import playbook_cli  # noqa: E402  (its commands import their modules lazily)

cli.add_typer(playbook_cli, name="playbook")


@cli.command("calibrate")
def calibrate_(
    results: list[Path] = typer.Argument(..., help="result JSON files written by lexicon eval (answers, not --retrieval-only)"),
    out: Path = typer.Option(Path(__file__).resolve().parent / "data" / "verifier.json", help="where the weights go"),
    target: float = typer.Option(0.9, help="supported precision to reach on every result file"),
    kind: Optional[list[str]] = typer.Option(None, help="repeatable: refit only these kinds (route:source, e.g. "
                                             "bi:bi) and keep the others as OUT has them"),
) -> None:
    """Fit the verifier's weights and thresholds per kind of candidate on dev-set results (half the documents; the other half reported)."""
    from app.evaluation.calibrate import calibrate

    try:
        result = calibrate(results, out, target, only=kind or None)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        typer.echo(f"lexicon calibrate: {exc}", err=True)
        raise typer.Exit(2)
    for kind, e in result["kinds"].items():
        t = "never" if e["threshold"] > 1 else f"{e['threshold']:.2f}"
        typer.echo(f"{kind:14s} threshold {t:>5s} ({e['candidates']} candidates) -> {out}")
    for name, r in result["report"].items():
        prec = "-" if r["supported_precision"] is None else f"{r['supported_precision']:.3f}"
        typer.echo(f"  {name:60s} n={r['questions']:4d} acc={r['accuracy'] or 0:.3f} "
                   f"supported={r['supported_rate'] or 0:.3f} precision={prec}")


def main() -> None:
    """Run one command; exit with its code once everything it opened is closed (``app.process_exit``)."""
    from app.process_exit import finish

    try:
        cli()
        code = 0
    except SystemExit as exc:  # click ends every command with sys.exit(code)
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    sys.exit(finish(code))


if __name__ == "__main__":
    main()
