"""CUAD (``master_clauses.csv`` + ``pdf/`` + ``txt/``): one question per (contract, category) with a gold clause.

The question names the agreement and its parties, the way lawyers ask ("Consider the Supply Agreement
between A and B; what is the governing law?"): the system must find the contract and then the clause.
``names=False`` asks the bare question restricted to the right contract (diagnosis: is the clause indexed?).
The PDFs are ingested (the path users take); ``txt/`` is the source text for verbatim-quote checks.
"""
from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

from app.evaluation.adapters.cuad_questions import CORE, QUESTIONS, VALUE_CATEGORIES
from app.evaluation.types import Dataset, EvalItem, Evidence

SMALL = {"and", "or", "of", "the", "a", "an", "to", "for", "in", "on", "by", "with"}


def detect(root: Path) -> bool:
    return (root / "master_clauses.csv").exists()


def _spans(cell: str) -> list[str]:
    try:
        value = ast.literal_eval(cell) if cell.strip() else []
    except (ValueError, SyntaxError):
        value = [cell]
    return [str(v).strip() for v in value if str(v).strip()] if isinstance(value, list) else [str(value)]


def title(name: str) -> str:
    if name.upper() != name:
        return name.strip()
    words = name.strip().lower().split()
    return " ".join(w if (i and w in SMALL) else w[:1].upper() + w[1:] for i, w in enumerate(words))


def party_names(row: dict, limit: int = 3) -> list[str]:
    """Signatory names from ``Parties-Answer`` (aliases in parentheses and quotes dropped)."""
    text = row.get("Parties-Answer") or ""
    names = []
    for part in text.split(";"):
        part = re.sub(r"\([^)]*\)?", "", part)
        part = re.sub(r"[\"\u201c\u201d][^\"\u201c\u201d]*[\"\u201c\u201d]", "", part).strip(" ,.;\"'\u201c\u201d")
        if len(part) > 2 and "*" not in part and part.lower() not in {n.lower() for n in names} and len(part) < 80:
            names.append(part)
    if not names:
        spans = sorted(_spans(row.get("Parties", "")), key=len, reverse=True)
        names = [s for s in spans if 2 < len(s) < 80][:2]
    return names[:limit]


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _find(folder: Path, stem: str) -> Path | None:
    for p in folder.iterdir() if folder.is_dir() else []:
        if p.stem == stem:
            return p
    return None


def load(root: Path, categories: list[str] | None = None, names: bool = True, max_docs: int | None = None) -> Dataset:
    root = Path(root)
    with open(root / "master_clauses.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    cats = categories or CORE
    if cats == ["all"]:  # every category this copy of CUAD labels (a dev copy holds back some as unseen kinds)
        cats = [c for c in QUESTIONS if c in (rows[0] if rows else {})]
    unknown = [c for c in cats if c not in QUESTIONS]
    if unknown:
        raise ValueError(f"unknown CUAD categories: {', '.join(unknown)}")
    docs, items, texts = [], [], {}
    for row in rows:
        stem = Path(row["Filename"]).stem
        pdf, txt = _find(root / "pdf", stem), _find(root / "txt", stem)
        if pdf is None:
            continue
        if max_docs is not None and len(docs) >= max_docs:
            break
        docs.append(pdf)
        if txt is not None:
            texts[pdf.name] = txt
        name = title(row.get("Document Name-Answer") or (_spans(row.get("Document Name", "")) or ["agreement"])[0])
        parties = party_names(row)
        for cat in cats:
            spans = _spans(row.get(cat, ""))
            if not spans:
                continue
            if cat == "Parties":  # one-word aliases ("BE", "Owner") would match anywhere
                longer = [s for s in spans if len(s.split()) >= 2]
                spans = longer or spans
            answer = (row.get(f"{cat}-Answer") or row.get(f"{cat}- Answer") or "").strip()
            q = QUESTIONS[cat]
            if names:
                who = f" between {_join(parties)}" if parties else ""
                question = f"Consider the {name}{who}; {q}"
            else:
                question = q[:1].upper() + q[1:]
            items.append(EvalItem(
                id=f"{stem}::{cat}" + ("" if names else "::nonames"), question=question, doc=pdf.name,
                evidence=[Evidence(s) for s in spans], answers=spans, scoring="clause", scoped=not names,
                category=cat, meta={"answer_value": answer if cat in VALUE_CATEGORIES else "",
                                    "party_spans": spans if cat == "Parties" else []}))
    return Dataset("cuad", root.name, root, docs, items, texts)
