"""``lexicon eval DATASET``: ingest (cached), retrieve, ask, score, print a table, write JSON; resumable."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from app.evaluation.adapters import load_dataset
from app.evaluation.fingerprint import ingest_fingerprint, run_fingerprint
from app.evaluation.journal import Journal, journal_path
from app.evaluation.metrics import summarize
from app.evaluation.report import build_rows, print_summary, write_json
from app.evaluation.runner import RunOptions, document_texts, run, tenant_for

MODES = ("auto", "rag", "long", "bi")
SOURCES = ("table", "text", "table-text")  # TAT-QA answer_from


def wanted(item, categories: list[str]) -> bool:
    """TAT-QA answer types / FinanceBench question types / JSONL categories, and TAT-QA answer sources:
    any of the given values of one kind, all kinds given (``--category arithmetic --category table``)."""
    sources = [c for c in categories if c in SOURCES]
    kinds = [c for c in categories if c not in SOURCES]
    return (not kinds or item.category in kinds) and (not sources or item.meta.get("answer_from") in sources)


def eval_command(settings, dataset_dir: Path, kind: Optional[str] = None, limit: Optional[int] = None,
                 docs: Optional[int] = None, mode: str = "auto", retrieval_only: bool = False,
                 out: Optional[Path] = None, data_dir: Optional[Path] = None, names: bool = True,
                 categories: Optional[list[str]] = None, render: str = "html", k: int = 10, workers: int = 1,
                 report_only: bool = False, unseen_kinds: bool = False,
                 progress: bool = True, quiet: bool = False) -> dict:
    """Returns the summary dict (also written to ``out``); raises ValueError for a bad dataset or option.
    ``unseen_kinds``: the shipped clause kinds are not read, so every question is of a kind nobody wrote (as a
    held-out CUAD category is): the mechanism that answers from the question's own words, on labelled kinds."""
    from app.service import LexiconService

    if mode not in MODES:
        raise ValueError(f"--mode must be one of {', '.join(MODES)}")
    dataset_dir = Path(dataset_dir)
    if not dataset_dir.exists():
        raise ValueError(f"{dataset_dir}: no such dataset folder")
    base = Path(data_dir) if data_dir else settings.data_dir / "eval"
    dataset = load_dataset(dataset_dir, kind, base / "rendered", max_docs=docs, names=names,
                           categories=categories, render=render)
    items = dataset.items
    if categories and dataset.kind != "cuad":
        items = [i for i in items if wanted(i, categories)]
    items = items[:limit] if limit else items
    if not items:
        raise ValueError(f"{dataset_dir}: no questions to evaluate")
    if limit or (categories and dataset.kind != "cuad"):  # ingest only the documents the chosen questions need
        needed = {i.doc for i in items}
        dataset.documents = [d for d in dataset.documents if d.name in needed]
    # LEXICON_EVAL_INGEST_FP pins the index (e.g. while ingest code changes under a long agent study); the
    # results' config records the pin, so a pinned run is never mistaken for one on today's ingest code
    pinned = os.environ.get("LEXICON_EVAL_INGEST_FP", "")
    ifp = pinned or ingest_fingerprint(settings, render if dataset.kind == "tatqa" else "")
    run_settings = settings.model_copy(update={"data_dir": base / f"{dataset.kind}-{ifp}"})
    if unseen_kinds:
        run_settings = run_settings.model_copy(update={"built_in_clause_kinds": False})
    opts = RunOptions(mode=mode, retrieval_only=retrieval_only, k=k, limit=limit, workers=max(1, workers),
                      report_only=report_only)
    fp = run_fingerprint(run_settings, ifp, mode, retrieval_only, k)
    suffix = (("" if names else "-nonames") + ("-unseen" if unseen_kinds else "")
              + ("-retrieval" if retrieval_only else f"-{mode}"))
    out = Path(out) if out else base / "results" / f"{dataset.kind}-{dataset.name}{suffix}.json"
    journal = Journal(journal_path(out))
    service = LexiconService(run_settings)
    started = time.perf_counter()
    try:
        records, state = run(service, dataset, items, journal, fp, opts, progress)
        rows = build_rows(items, records, document_texts(service, tenant_for(dataset), state))
    finally:
        journal.close()
        service.close()
    summary = summarize(rows, dataset.kind)
    summary["documents"] = {"total": len(dataset.documents), "ingested": len(state.doc_ids),
                            "in_index": state.in_index,
                            "failed": dict(list(state.failed.items())[:20])}
    config = {"dataset": str(dataset_dir), "kind": dataset.kind, "name": dataset.name, "mode": mode,
              "retrieval_only": retrieval_only, "names": names, "unseen_kinds": unseen_kinds,
              "categories": categories, "k": k, "limit": limit,
              "docs": docs,
              "workers": opts.workers, "report_only": report_only,
              "render": render if dataset.kind == "tatqa" else None, "retriever": state.retriever,
              "index_dir": str(run_settings.data_dir), "fingerprint": fp, "ingest_pinned": bool(pinned), "journal": str(journal.path),
              "seconds": round(time.perf_counter() - started, 1)}
    write_json(out, config, summary, rows)
    if not quiet:
        print_summary(summary, f"lexicon eval {dataset.kind} {dataset.name} ({len(rows)} questions, "
                               f"{'retrieval only' if retrieval_only else 'mode ' + mode}) -> {out}")
    return {"config": config, "summary": summary, "out": str(out)}
