"""``lexicon calibrate RESULT.json ...``: fit the verifier's weights and thresholds on dev-set results.

Each result file is what ``lexicon eval`` wrote: every answer carries the verifier's candidates with their
features (``app.agent.verifier``). Each candidate is labelled right or wrong by the dataset's own scorer, as if
it were the answer. The questions are split by document (a stable hash). On one half, each kind of candidate
(route:source: a clause quote, an extracted span, a BI program, ...) seen 20 times or more gets its own logistic
regression over the same general features, so its score is a probability of being right; the answer is the most
probable candidate, and each kind's threshold is the lowest at which the *simulated agent*'s answers of that
kind reach the target precision on that half (a kind that never does is never supported). The other half,
untouched by the fit, is reported beside it, so a number that only holds where it was fitted shows as such.
"""
from __future__ import annotations

import hashlib
from collections import Counter
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from app.agent.calibration import FEATURES, NEVER, PRIOR, PRIOR_THRESHOLD, candidate_kind
from app.agent.verifier import answer_order, is_value, leads, rival_picked
from app.evaluation.adapters import load_dataset
from app.evaluation.scoring import score



CHECK = FEATURES.index("check")
PRIOR_W = np.array([PRIOR[k] for k in FEATURES], dtype=float)  # the start, and what the L2 pulls towards
MIN_KIND = 20  # candidates of a kind (route:source) the fit must see before its weights apply to that kind
MIN_SUPPORTED = 20  # answers a threshold must support on the fitted half before it is a measured promise: 5 of 5
# right says little (the 95% lower bound of their precision is about 0.5), 20 of 20 about 0.83


@dataclass
class Question:
    source: str  # result file
    category: str
    half: int  # 0: fitted on, 1: held out
    xs: list  # feature vectors of the candidates
    ys: list  # candidate right?
    gated: list  # candidate failed a hard gate?
    routes: list  # candidate's route
    values: Optional[list] = None  # candidate's answer is a value (``verifier.is_value``)
    picks: Optional[list] = None  # candidate is a passage carrying the clause finder's pick (``verifier.leads``)


def _half(doc: str) -> int:
    return int(hashlib.sha1(doc.encode()).hexdigest(), 16) % 2


def load_questions(path: Path) -> list[Question]:
    data = json.loads(Path(path).read_text())
    cfg = data["config"]
    base = Path(cfg["index_dir"]).parent
    cats = cfg.get("categories")
    if cats is None and cfg["kind"] == "cuad":  # results written before the config kept them: the records' own
        cats = sorted({r.get("category") for r in data["records"] if r.get("category")}) or None
    ds = load_dataset(Path(cfg["dataset"]), cfg["kind"], base / "rendered", max_docs=cfg.get("docs"),
                      names=cfg.get("names", True), categories=cats,
                      render=cfg.get("render") or "html")
    items = {i.id: i for i in ds.items}
    out = []
    for row in data["records"]:
        item, verdict = items.get(row["id"]), row.get("verdict") or {}
        cands = verdict.get("candidates") or []
        if item is None:
            continue
        xs, ys, gated, routes, values = [], [], [], [], []
        for c in cands:
            values.append(is_value(c))
            rec = {"answer": {"answer": c.get("answer") or "", "citations": c.get("citations") or [],
                              "supported": True}}
            ys.append(bool(score(item, rec, {}).get("correct")))
            xs.append([float(c["features"].get(k, 0.0)) for k in FEATURES])
            gated.append(bool(c.get("gated")))
            routes.append(candidate_kind(c))
        out.append(Question(str(path), row.get("category") or "", _half(row["doc"]), xs, ys, gated, routes, values,
                            [bool(c.get("picked")) for c in cands]))
    return out


def fit(xs: np.ndarray, ys: np.ndarray, l2: float = 1.0, iters: int = 100) -> np.ndarray:
    """Logistic regression by damped Newton steps from the prior; L2 on every weight (lightly on the bias), so
    a feature that is constant within a kind (the route flag, a check that always holds) stays bounded."""
    w = PRIOR_W.copy()
    reg = np.full(len(FEATURES), l2)
    reg[0] = 0.1
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xs @ w, -30, 30)))
        grad = xs.T @ (p - ys) + reg * (w - PRIOR_W)
        hess = (xs * (p * (1 - p))[:, None]).T @ xs + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        norm = np.linalg.norm(step)
        if norm > 2.0:
            step *= 2.0 / norm
        w -= step
        if norm < 1e-6:
            break
    return w


Model = dict  # kind (route:source) -> (weights, threshold); kinds not in it: the prior's score, never supported


def _scores(q: Question, model: Model) -> np.ndarray:
    out = []
    for x, kind in zip(q.xs, q.routes):
        w = model[kind][0] if kind in model else PRIOR_W
        out.append(1.0 / (1.0 + np.exp(-np.clip(np.dot(x, w), -30, 30))))
    return np.array(out)


def _best(q: Question, model: Model, can: Optional[set] = None) -> tuple[int, float]:
    """The agent's answer (``verifier.judge``): ungated, supported, checked, most probable, in that order. A
    candidate's check counts where its kind can be supported: by its threshold, or, while thresholds are picked,
    where the kind is in ``can``."""
    s = _scores(q, model)
    sup = [not q.gated[i] and s[i] >= _threshold(q, i, model) for i in range(len(s))]
    ok = [q.routes[i] in can if can is not None else _threshold(q, i, model) <= 1.0 for i in range(len(s))]
    values = q.values or [False] * len(s)
    picked = rival_picked(q.picks or [False] * len(s), q.gated, list(s))
    lead = [leads(x[CHECK], c, v, picked) for x, c, v in zip(q.xs, ok, values)]
    b = answer_order(q.gated, sup, lead, list(s))[0]
    return b, float(s[b])


def _threshold(q: Question, b: int, model: Model) -> float:
    """As the agent does (``Calibrations.for_kind``): a kind the fit did not measure is never supported."""
    kind = q.routes[b]
    return model[kind][1] if kind in model else (NEVER if model else PRIOR_THRESHOLD)


def simulate(questions: list[Question], model: Model) -> dict:
    """The agent's answers under ``model``: accuracy, supported rate and precision."""
    n = right = sup = sup_right = 0
    for q in questions:
        n += 1
        if not q.xs:
            continue
        b, score = _best(q, model)
        right += q.ys[b]
        if not q.gated[b] and score >= _threshold(q, b, model):
            sup += 1
            sup_right += q.ys[b]
    return {"questions": n, "accuracy": right / n if n else None, "supported_rate": sup / n if n else None,
            "supported_precision": sup_right / sup if sup else None, "supported": sup}


FIT = FEATURES.index("fit")


def answer_set(q: Question, b: int) -> str:
    """The set a question's answer is measured in: its result file, and whether the question is of a kind the
    taxonomy knows (the candidate's ``fit`` > 0) or of none (answered from its own words: the kinds nobody
    wrote, which acceptance asks too)."""
    return f"{Path(q.source).name}:{'kind' if q.xs[b][FIT] > 0 else 'no kind'}"


def pick_thresholds(questions: list[Question], model: Model, target: float, min_support: int = 5,
                    min_answers: int = MIN_SUPPORTED, kept: Optional[Model] = None) -> None:
    """Each fitted kind's threshold: the lowest at which the answers of that kind reach ``target`` precision
    in every set (``answer_set``) with ``min_support`` or more of them supported, and over all of them, which
    must be ``min_answers`` or more; never (``NEVER``) where no threshold reaches it. One pooled precision would
    let many answers of known kinds carry a set of questions of no known kind that is mostly wrong. ``kept``: the
    kinds a partial refit keeps (scored by their own weights)."""
    kept = kept or {}
    unpicked = {k: (w, NEVER) for k, (w, _t) in {**kept, **model}.items()}  # ordered before any is supported
    can = set(model) | {k for k, (_w, t) in kept.items() if t <= 1.0}
    best = [(q.routes[b], score, q.ys[b], answer_set(q, b)) for q in questions if q.xs
            for b, score in [_best(q, unpicked, can)] if not q.gated[b]]
    for kind, (w, _t) in list(model.items()):
        mine = [(s, y, g) for k, s, y, g in best if k == kind]
        chosen = NEVER
        for t in np.arange(0.30, 0.99, 0.01):
            above = [(y, g) for s, y, g in mine if s >= t]
            if len(above) < max(min_support, min_answers) or sum(y for y, _ in above) / len(above) < target:
                continue
            sets = {g: [y for y, g2 in above if g2 == g] for g in {g for _, g in above}}
            if all(sum(ys) / len(ys) >= target for ys in sets.values() if len(ys) >= min_support):
                chosen = round(float(t), 2)
                break
        model[kind] = (w, chosen)


def pick_floor(questions: list[Question], model: Model, max_lost: float = 0.05) -> float:
    """The highest score under which the simulated answers are right at most ``max_lost`` of the time: below
    it the answer says the documents do not contain it (what was found is listed as related)."""
    best = [(score, q.ys[b]) for q in questions if q.xs for b, score in [_best(q, model)]]
    floor = 0.05
    for f in np.arange(0.05, 0.5, 0.01):
        below = [y for s, y in best if s < f]
        if below and sum(below) / len(below) > max_lost:
            break
        floor = float(f)
    return round(floor, 2)


def _read(out: Path) -> dict:
    """An existing calibration file ({} when there is none)."""
    return json.loads(Path(out).read_text()) if Path(out).exists() else {}


def _kept(out: Path, refit: set[str]) -> tuple[Model, dict, list[str]]:
    """The kinds of an existing calibration that are not refitted: (model, their entries, its sources)."""
    return _kept_from(_read(out), refit)


def _kept_from(data: dict, refit: set[str]) -> tuple[Model, dict, list[str]]:
    if not data:
        return {}, {}, []
    entries = {k: e for k, e in (data.get("kinds") or {}).items() if k not in refit}
    for e in entries.values():  # a feature added since that fit weighs nothing in it
        e["weights"] = {f: float(e["weights"].get(f, 0.0)) for f in FEATURES}
    model = {k: (np.array([float(e["weights"].get(f, 0.0)) for f in FEATURES]), float(e["threshold"]))
             for k, e in entries.items()}
    return model, entries, [data["source"]] if data.get("source") else []


def calibrate(paths: list[Path], out: Path, target: float = 0.9, only: Optional[list[str]] = None) -> dict:
    """Fit every kind seen often enough in ``paths``; with ``only``, fit those kinds and keep the others as
    ``out`` has them (e.g. BI programs refitted on new TAT-QA results, clause quotes kept from CUAD's)."""
    questions = [q for p in paths for q in load_questions(p)]
    fit_on = [q for q in questions if q.half == 0]
    old = _read(out) if only else {}  # a partial refit keeps the other kinds, the floor and the earlier report
    model, kept, sources = _kept_from(old, set(only)) if only else ({}, {}, [])
    counts = Counter(r for q in fit_on for r, g in zip(q.routes, q.gated) if not g)
    for kind, n in counts.items():
        if only and kind not in only:
            continue
        rows = [(x, y) for q in fit_on for x, y, g, r in zip(q.xs, q.ys, q.gated, q.routes) if not g and r == kind]
        ys = np.array([y for _, y in rows], dtype=float)
        if n < MIN_KIND or ys.min() == ys.max():
            continue
        model[kind] = (fit(np.array([x for x, _ in rows]), ys), PRIOR_THRESHOLD)
    if not set(model) - set(kept):
        raise ValueError("too few labelled candidates of any kind to fit")
    fitted = {k: v for k, v in model.items() if k not in kept}
    pick_thresholds(fit_on, fitted, target, kept={k: v for k, v in model.items() if k in kept})
    model.update(fitted)
    floor = pick_floor(fit_on, model)
    if old:  # the floor was picked over every kind: a partial refit keeps it
        floor = float(old.get("floor", floor))
    earlier = old.get("report") or {}
    report = {(k if k.endswith("(earlier fit)") else f"{k} (earlier fit)"): v for k, v in earlier.items()
              if not any(k.startswith(Path(p).name + ":") for p in paths)}  # as reported when last fitted
    for src in sorted({q.source for q in questions}):
        for half, name in ((0, "fitted"), (1, "held_out")):
            qs = [q for q in questions if q.source == src and q.half == half]
            report[f"{Path(src).name}:{name}"] = simulate(qs, model)
            by_set: dict[str, list[Question]] = {}  # the questions of a known kind, and of none
            for q in qs:
                if q.xs:
                    by_set.setdefault(answer_set(q, _best(q, model)[0]), []).append(q)
            for answer_in, sub in sorted(by_set.items()):
                report[f"{Path(src).name}:{name}:{answer_in.rsplit(':', 1)[1]}"] = simulate(sub, model)
    kinds = {k: kept.get(k) or {"weights": dict(zip(FEATURES, [round(float(v), 4) for v in w])), "threshold": t,
                                "candidates": counts[k], "fitted_on": [Path(p).name for p in paths]}
             for k, (w, t) in sorted(model.items())}
    source = f"fitted on half 0 of {', '.join(Path(p).name for p in paths)}"
    result = {"kinds": kinds, "floor": floor, "target": target,
              "source": "; ".join(sources + [source + (f" ({', '.join(only)})" if only else "")]), "report": report}
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return result
