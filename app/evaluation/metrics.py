"""Aggregate per-question scores into the summary: retrieval, answers, latency, breakdowns."""
from __future__ import annotations

from typing import Iterable, Optional

PREAMBLE = {"Parties", "Agreement Date", "Effective Date", "Document Name"}


def _mean(xs: Iterable) -> Optional[float]:
    xs = [float(x) for x in xs if x is not None]
    return round(sum(xs) / len(xs), 4) if xs else None


def percentile(xs: list[float], q: float) -> Optional[float]:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    i = (len(xs) - 1) * q
    lo, hi = int(i), min(int(i) + 1, len(xs) - 1)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (i - lo), 4)


def retrieval_block(rows: list[dict]) -> dict:
    ranked = [r for r in rows if r.get("has_evidence")]
    out = {"n": len(ranked)}
    for k in (1, 5, 10):
        out[f"recall@{k}"] = _mean((r["rank"] is not None and r["rank"] <= k) for r in ranked)
    for k in (1, 5):
        out[f"doc_hit@{k}"] = _mean((r["doc_rank"] is not None and r["doc_rank"] <= k) for r in rows)
    if any("in_index" in r for r in ranked):  # the ceiling: evidence that some chunk of the document hits
        out["evidence_in_index"] = _mean(r.get("in_index") for r in ranked)
    out["latency_p50_s"] = percentile([r.get("retrieval_s") for r in rows], 0.5)
    out["latency_p95_s"] = percentile([r.get("retrieval_s") for r in rows], 0.95)
    return out


def answer_block(rows: list[dict]) -> dict:
    answered = [r for r in rows if "supported" in r]
    if not answered:
        return {"n": 0}
    graded = [r for r in answered if r.get("correct") is not None]
    supported = [r for r in graded if r["supported"]]
    cites = sum(r.get("citations") or 0 for r in answered)
    out = {
        "n": len(answered),
        "accuracy": _mean(r["correct"] for r in graded),
        "supported_rate": _mean(r["supported"] for r in answered),
        "supported_precision": _mean(r["correct"] for r in supported),
        "not_found_rate": _mean(r["not_found"] for r in answered),
        "citation_precision": round(sum(r.get("citations_precise") or 0 for r in answered) / cites, 4) if cites else None,
        "citation_verbatim": round(sum(r.get("citations_verbatim") or 0 for r in answered) / cites, 4) if cites else None,
        "other_doc_rate": _mean(r.get("other_doc") for r in answered),  # cites a document the question is not about
        "errors": sum(1 for r in answered if r.get("error")),
        "latency_p50_s": percentile([r.get("answer_s") for r in answered], 0.5),
        "latency_p95_s": percentile([r.get("answer_s") for r in answered], 0.95),
    }
    if any("em" in r for r in answered):
        out["em"] = _mean(r.get("em") for r in answered)
        out["f1"] = _mean(r.get("f1") for r in answered)
        out["em_tol1pct"] = _mean(r.get("em_tol") for r in answered)
    routes: dict[str, int] = {}
    for r in answered:
        routes[r.get("route") or "?"] = routes.get(r.get("route") or "?", 0) + 1
    out["routes"] = routes
    return out


def group_block(rows: list[dict]) -> dict:
    out = {"n": len(rows)}
    ret = retrieval_block(rows)
    for k in ("recall@1", "recall@5", "recall@10"):
        out[k] = ret[k]
    ans = answer_block(rows)
    for k in ("accuracy", "supported_rate", "supported_precision", "not_found_rate", "em", "f1"):
        if k in ans:
            out[k] = ans[k]
    return out


def breakdown(rows: list[dict], key: str) -> dict:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(str(r.get(key) or "-"), []).append(r)
    return {k: group_block(v) for k, v in sorted(groups.items())}


def summarize(rows: list[dict], kind: str) -> dict:
    out = {"n_questions": len(rows), "retrieval": retrieval_block(rows), "answers": answer_block(rows),
           "by_category": breakdown(rows, "category")}
    if any("supported" in r for r in rows):  # per route: e.g. the BI route's supported precision
        out["by_route"] = breakdown([r for r in rows if "supported" in r], "route")
    if kind == "cuad":
        clauses = [r for r in rows if r.get("category") not in PREAMBLE]
        out["retrieval_clauses_only"] = retrieval_block(clauses)
    if kind == "tatqa":
        out["by_answer_from"] = breakdown(rows, "answer_from")
        arith = [r for r in rows if r.get("category") == "arithmetic" and r.get("answer_from") == "table"]
        out["arithmetic_from_table"] = group_block(arith)
    return out
