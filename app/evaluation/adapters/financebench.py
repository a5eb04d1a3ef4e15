"""FinanceBench (``questions.jsonl``, ``documents.jsonl``, ``pdfs/``): open questions about real filings.

Evidence pages are 0-based in the data (``evidence_page_num``); our passages count pages from 1, so the
gold page is ``evidence_page_num + 1``. Questions are asked unscoped, as users ask them (they name the
company and period); answers with a number are matched scale-aware with 1% tolerance.
"""
from __future__ import annotations

import json
from pathlib import Path

from app.evaluation.numbers import parse_numbers
from app.evaluation.types import Dataset, EvalItem, Evidence


def detect(root: Path) -> bool:
    return (root / "questions.jsonl").exists() and (root / "pdfs").is_dir()


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load(root: Path, max_docs: int | None = None) -> Dataset:
    root = Path(root)
    pdfs = {p.stem: p for p in sorted((root / "pdfs").iterdir()) if p.suffix.lower() == ".pdf"}
    questions = _read_jsonl(root / "questions.jsonl")
    wanted: list[str] = []
    for q in questions:
        if q["doc_name"] in pdfs and q["doc_name"] not in wanted:
            wanted.append(q["doc_name"])
    if max_docs is not None:
        wanted = wanted[:max_docs]
    items = []
    for q in questions:
        if q["doc_name"] not in wanted:
            continue
        evidence = [Evidence(e.get("evidence_text") or "", int(e["evidence_page_num"]) + 1
                             if e.get("evidence_page_num") is not None else None) for e in q.get("evidence") or []]
        numeric = bool(parse_numbers(q["answer"])) and len(q["answer"]) < 40
        items.append(EvalItem(
            id=q.get("financebench_id") or f"{q['doc_name']}::{len(items)}", question=q["question"],
            doc=pdfs[q["doc_name"]].name, evidence=evidence, answers=[q["answer"]],
            scoring="numeric" if numeric else "text", category=q.get("question_type") or "",
            meta={"question_reasoning": q.get("question_reasoning") or "", "company": q.get("company") or ""}))
    return Dataset("financebench", root.name, root, [pdfs[n] for n in wanted], items)
