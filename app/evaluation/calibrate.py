"""``lexicon calibrate RESULT.json ...``: fit the verifier's weights and its one threshold on dev-set results.

Each result file is what ``lexicon eval`` wrote: every answer carries the verifier's candidates with their
features (``app.agent.verifier``). Each candidate is labelled right or wrong by the dataset's own scorer, as if
it were the answer. The questions are split by document (a stable hash): the weights are fitted on one half
(logistic regression), and the threshold is the lowest at which the *simulated agent* (the best-scoring
candidate that passes the gates is the answer) reaches the target supported precision on that half, in every
result file alike (one threshold for all sets and kinds). The other half, untouched by the fit, is reported
beside it, so a number that only holds where it was fitted shows as such.
"""
from __future__ import annotations

import hashlib
from collections import Counter
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.agent.verifier import FEATURES, PRIOR, candidate_kind
from app.evaluation.adapters import load_dataset
from app.evaluation.scoring import score



MIN_KIND = 20  # candidates of a kind (route:source) the fit must see before its weights apply to that kind


@dataclass
class Question:
    source: str  # result file
    category: str
    half: int  # 0: fitted on, 1: held out
    xs: list  # feature vectors of the candidates
    ys: list  # candidate right?
    gated: list  # candidate failed a hard gate?
    routes: list  # candidate's route


def _half(doc: str) -> int:
    return int(hashlib.sha1(doc.encode()).hexdigest(), 16) % 2


def load_questions(path: Path) -> list[Question]:
    data = json.loads(Path(path).read_text())
    cfg = data["config"]
    base = Path(cfg["index_dir"]).parent
    ds = load_dataset(Path(cfg["dataset"]), cfg["kind"], base / "rendered", max_docs=cfg.get("docs"),
                      names=cfg.get("names", True), categories=cfg.get("categories"),
                      render=cfg.get("render") or "html")
    items = {i.id: i for i in ds.items}
    out = []
    for row in data["records"]:
        item, verdict = items.get(row["id"]), row.get("verdict") or {}
        cands = verdict.get("candidates") or []
        if item is None:
            continue
        xs, ys, gated, routes = [], [], [], []
        for c in cands:
            rec = {"answer": {"answer": c.get("answer") or "", "citations": c.get("citations") or [],
                              "supported": True}}
            ys.append(bool(score(item, rec, {}).get("correct")))
            xs.append([float(c["features"].get(k, 0.0)) for k in FEATURES])
            gated.append(bool(c.get("gated")))
            routes.append(candidate_kind(c))
        out.append(Question(str(path), row.get("category") or "", _half(row["doc"]), xs, ys, gated, routes))
    return out


def fit(xs: np.ndarray, ys: np.ndarray, l2: float = 1.0, iters: int = 50) -> np.ndarray:
    """Logistic regression by Newton's method, L2 on every weight but the bias, the prior as the start."""
    w = np.array([PRIOR[k] for k in FEATURES], dtype=float)
    reg = np.full(len(FEATURES), l2)
    reg[0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xs @ w, -30, 30)))
        grad = xs.T @ (p - ys) + reg * w
        hess = (xs * (p * (1 - p))[:, None]).T @ xs + np.diag(reg + 1e-6)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return w


def simulate(questions: list[Question], w: np.ndarray, t: float) -> dict:
    """The agent's answers under weights ``w`` and threshold ``t``: accuracy, supported rate and precision."""
    n = right = sup = sup_right = 0
    for q in questions:
        n += 1
        if not q.xs:
            continue
        s = 1.0 / (1.0 + np.exp(-np.clip(np.array(q.xs) @ w, -30, 30)))
        order = sorted(range(len(s)), key=lambda i: (q.gated[i], -s[i], i))
        b = order[0]
        right += q.ys[b]
        if not q.gated[b] and s[b] >= t:
            sup += 1
            sup_right += q.ys[b]
    return {"questions": n, "accuracy": right / n if n else None, "supported_rate": sup / n if n else None,
            "supported_precision": sup_right / sup if sup else None, "supported": sup}


def pick_threshold(groups: dict[str, list[Question]], w: np.ndarray, target: float, min_support: int = 5) -> float:
    """The lowest threshold at which every group's simulated supported precision reaches ``target``."""
    for t in np.arange(0.30, 0.99, 0.01):
        ok = True
        for qs in groups.values():
            r = simulate(qs, w, float(t))
            if r["supported"] >= min_support and (r["supported_precision"] or 0.0) < target:
                ok = False
                break
        if ok:
            return round(float(t), 2)
    return 0.99


def pick_floor(questions: list[Question], w: np.ndarray, t: float, max_lost: float = 0.05) -> float:
    """The highest score under which the simulated answers are right at most ``max_lost`` of the time: below
    it the answer says the documents do not contain it (what was found is listed as related)."""
    best = []
    for q in questions:
        if q.xs:
            s = 1.0 / (1.0 + np.exp(-np.clip(np.array(q.xs) @ w, -30, 30)))
            b = sorted(range(len(s)), key=lambda i: (q.gated[i], -s[i], i))[0]
            best.append((float(s[b]), q.ys[b]))
    floor = 0.05
    for f in np.arange(0.05, t, 0.01):
        below = [y for s, y in best if s < f]
        if below and sum(below) / len(below) > max_lost:
            break
        floor = float(f)
    return round(floor, 2)


def calibrate(paths: list[Path], out: Path, target: float = 0.9) -> dict:
    questions = [q for p in paths for q in load_questions(p)]
    fit_on = [q for q in questions if q.half == 0]
    xs = np.array([x for q in fit_on for x, g in zip(q.xs, q.gated) if not g])
    ys = np.array([y for q in fit_on for y, g in zip(q.ys, q.gated) if not g], dtype=float)
    if len(xs) < 20 or ys.min() == ys.max():
        raise ValueError(f"too few labelled candidates to fit ({len(xs)})")
    w = fit(xs, ys)
    by_source: dict[str, list[Question]] = {}
    for q in fit_on:
        by_source.setdefault(q.source, []).append(q)
    t = pick_threshold(by_source, w, target)
    floor = pick_floor(fit_on, w, t)
    report = {}
    for src in sorted({q.source for q in questions}):
        for half, name in ((0, "fitted"), (1, "held_out")):
            qs = [q for q in questions if q.source == src and q.half == half]
            report[f"{Path(src).name}:{name}"] = simulate(qs, w, t)
    result = {"weights": dict(zip(FEATURES, [round(float(v), 4) for v in w])), "threshold": t, "floor": floor, "target": target,
              "source": f"fitted on half 0 of {', '.join(Path(p).name for p in paths)}",
              "candidates": int(len(xs)), "report": report,
              "routes": sorted(k for k, n in Counter(r for q in fit_on for r in q.routes).items() if n >= MIN_KIND)}
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return result
