"""TAT-QA (a JSON list of contexts: ``table.table``, ``paragraphs``, ``questions``).

Each context is rendered as one document (HTML by default, ``render="pdf"`` through reportlab) into a
cache folder, ingested, and each of its questions is asked restricted to it (doc_ids). Scored with
TAT-QA-style EM/F1 (``tatqa_metric``), broken down by answer type and answer source.
"""
from __future__ import annotations

import json
from pathlib import Path

from app.evaluation.adapters.tatqa_render import render_html, render_pdf, table_text
from app.evaluation.types import Dataset, EvalItem, Evidence


def detect(root: Path) -> bool:
    return any(root.glob("tatqa_dataset_*.json"))


def load(root: Path, cache_dir: Path, render: str = "html", max_docs: int | None = None) -> Dataset:
    root = Path(root)
    files = sorted(root.glob("tatqa_dataset_*.json"))
    contexts = [c for f in files for c in json.loads(f.read_text(encoding="utf-8"))]
    if max_docs is not None:
        contexts = contexts[:max_docs]
    out_dir = Path(cache_dir) / f"tatqa-{render}"
    out_dir.mkdir(parents=True, exist_ok=True)
    docs, items = [], []
    for ctx in contexts:
        uid = ctx["table"]["uid"]
        title = f"Financial report extract {uid[:8]}"
        path = out_dir / f"tatqa-{uid[:8]}.{render}"
        if render == "pdf":
            if not path.exists():
                tmp = path.with_suffix(".tmp.pdf")
                render_pdf(ctx, title, tmp)
                tmp.replace(path)
        else:
            text = render_html(ctx, title)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
        docs.append(path)
        paragraphs = {str(p.get("order")): p["text"] for p in ctx.get("paragraphs") or []}
        for q in ctx.get("questions") or []:
            evidence = [Evidence(paragraphs[r]) for r in q.get("rel_paragraphs") or [] if r in paragraphs]
            if q.get("answer_from") in ("table", "table-text"):
                evidence.append(Evidence(table_text(ctx)))
            answer = q["answer"]
            items.append(EvalItem(
                id=q["uid"], question=q["question"], doc=path.name, evidence=evidence,
                answers=[str(a) for a in answer] if isinstance(answer, list) else [str(answer)],
                scoring="tatqa", scoped=True, category=q.get("answer_type") or "",
                meta={"answer": answer, "scale": q.get("scale") or "", "answer_from": q.get("answer_from") or "",
                      "answer_type": q.get("answer_type") or "", "derivation": q.get("derivation") or ""}))
    return Dataset("tatqa", f"{root.name}-{render}", root, docs, items)
