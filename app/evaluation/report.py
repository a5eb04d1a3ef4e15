"""Per-question rows (item + scores + timings), the printed table and the JSON result file."""
from __future__ import annotations

import json
from pathlib import Path

from app.evaluation.scoring import score
from app.evaluation.types import EvalItem


def build_rows(items: list[EvalItem], records: dict[str, dict], doc_text) -> list[dict]:
    rows = []
    for item in items:
        rec = records.get(item.id)
        if rec is None:
            continue
        s = score(item, rec, doc_text)
        answer = rec.get("answer") or {}
        row = {"id": item.id, "category": item.category, "doc": item.doc, "question": item.question,
               "has_evidence": bool(item.evidence), "retrieval_s": rec.get("retrieval_s"),
               "answer_s": rec.get("answer_s"), "error": rec.get("error"), "route": answer.get("route"),
               "answer_from": item.meta.get("answer_from"), "gold": item.answers[:3], **s}
        if answer:
            row["answer"] = answer.get("answer")
            row["verdict"] = answer.get("verdict")  # the verifier's candidates and features (lexicon calibrate)
            row["citations_list"] = [{"filename": c.get("filename"), "page": c.get("page"), "quote": c.get("quote")}
                                     for c in answer.get("citations") or []]
        row["top"] = [{"filename": p.get("filename"), "page": p.get("page"), "text": (p.get("text") or "")[:160]}
                      for p in (rec.get("retrieved") or [])[:3]]
        rows.append(row)
    return rows


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def print_summary(summary: dict, header: str) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{header}[/bold]")
    main = Table(show_header=True, header_style="bold")
    main.add_column("metric")
    main.add_column("value", justify="right")
    for block in ("retrieval", "retrieval_clauses_only", "answers", "arithmetic_from_table"):
        for k, v in (summary.get(block) or {}).items():
            if isinstance(v, dict):
                v = ", ".join(f"{a}={b}" for a, b in v.items())
            main.add_row(f"{block}.{k}", _fmt(v))
    console.print(main)
    for name in ("by_category", "by_answer_from", "by_route"):
        groups = summary.get(name) or {}
        if not groups:
            continue
        cols = [c for c in ("n", "recall@1", "recall@5", "recall@10", "accuracy", "supported_rate",
                            "supported_precision", "not_found_rate", "em", "f1")
                if any(c in g for g in groups.values())]
        t = Table(title=name, show_header=True, header_style="bold")
        t.add_column(name.replace("by_", ""))
        for c in cols:
            t.add_column(c, justify="right")
        for g, vals in groups.items():
            t.add_row(g, *[_fmt(vals.get(c)) for c in cols])
        console.print(t)


def write_json(path: Path, config: dict, summary: dict, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"config": config, "summary": summary, "records": rows}, indent=1,
                              ensure_ascii=False, default=str), encoding="utf-8")
    tmp.replace(path)
