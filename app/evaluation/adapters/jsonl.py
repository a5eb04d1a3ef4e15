"""Users' own sets: a ``*.jsonl`` of ``{"id"?, "question", "doc", "evidence"?, "answer"?, "page"?}`` with the
document files beside it (``doc`` is a path relative to the JSONL's folder). ``evidence`` may be a string or
a list; ``answer`` a string (numbers are matched scale-aware, text by token overlap)."""
from __future__ import annotations

import json
from pathlib import Path

from app.evaluation.numbers import parse_numbers
from app.evaluation.types import Dataset, EvalItem, Evidence


def detect(root: Path) -> bool:
    return any(root.glob("*.jsonl"))


def load(root: Path, max_docs: int | None = None) -> Dataset:
    root = Path(root)
    files = sorted(root.glob("*.jsonl")) if root.is_dir() else [root]
    folder = root if root.is_dir() else root.parent
    docs: list[Path] = []
    items = []
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{f.name}:{n}: not JSON ({exc})") from None
            if not str(row.get("question") or "").strip() or not row.get("doc"):
                raise ValueError(f"{f.name}:{n}: needs 'question' and 'doc'")
            doc = (folder / row["doc"]).resolve()
            if not doc.is_file():
                raise ValueError(f"{f.name}:{n}: document {row['doc']!r} not found beside the JSONL")
            if doc not in docs:
                if max_docs is not None and len(docs) >= max_docs:
                    continue
                docs.append(doc)
            ev = row.get("evidence") or []
            ev = [ev] if isinstance(ev, str) else list(ev)
            page = row.get("page")
            answer = str(row.get("answer") or "")
            numeric = bool(answer) and bool(parse_numbers(answer)) and len(answer) < 40
            items.append(EvalItem(
                id=str(row.get("id") or f"{f.stem}:{n}"), question=row["question"].strip(), doc=doc.name,
                evidence=[Evidence(e, page) for e in ev], answers=[answer] if answer else [],
                scoring="numeric" if numeric else ("text" if answer else "clause"),
                scoped=bool(row.get("scoped", False)), category=str(row.get("category") or "")))
    return Dataset("jsonl", root.stem if root.is_file() else root.name, root, docs, items)
