"""Dataset adapters: each has ``detect(root) -> bool`` and ``load(root, ...) -> Dataset``."""
from __future__ import annotations

from pathlib import Path

KINDS = ("cuad", "financebench", "tatqa", "jsonl")


def detect_kind(root: Path) -> str:
    from app.evaluation.adapters import cuad, financebench, jsonl, tatqa

    root = Path(root)
    if root.is_file() and root.suffix == ".jsonl":
        return "jsonl"
    for name, mod in (("cuad", cuad), ("financebench", financebench), ("tatqa", tatqa), ("jsonl", jsonl)):
        if root.is_dir() and mod.detect(root):
            return name
    raise ValueError(f"{root}: not a dataset folder lexicon eval knows (CUAD master_clauses.csv, FinanceBench "
                     "questions.jsonl + pdfs/, TAT-QA tatqa_dataset_*.json, or a *.jsonl of questions)")


def load_dataset(root: Path, kind: str | None, cache_dir: Path, max_docs: int | None = None, names: bool = True,
                 categories: list[str] | None = None, render: str = "html"):
    from app.evaluation.adapters import cuad, financebench, jsonl, tatqa

    kind = kind or detect_kind(root)
    if kind == "cuad":
        return cuad.load(root, categories=categories, names=names, max_docs=max_docs)
    if kind == "financebench":
        return financebench.load(root, max_docs=max_docs)
    if kind == "tatqa":
        return tatqa.load(root, cache_dir, render=render, max_docs=max_docs)
    if kind == "jsonl":
        return jsonl.load(root, max_docs=max_docs)
    raise ValueError(f"unknown dataset kind {kind!r} (one of {', '.join(KINDS)})")
