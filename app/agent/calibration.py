"""The verifier's calibration: the features it scores, the prior weights, and the weights and thresholds fitted per
kind of candidate (route:source) on the dev sets (``app/evaluation/calibrate.py`` writes ``app/data/verifier.json``).
A kind the dev sets have not measured is scored by the prior but never supported."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CALIBRATION = Path(__file__).resolve().parents[1] / "data" / "verifier.json"
FEATURES = ("bias", "check", "sim", "sim_kind", "cov", "slot", "rank", "opening", "length", "bi", "long", "model",
            "fit", "rest", "preamble", "defines", "phrase", "heading", "margin")
# the prior before calibration: the route's own check leads, similarity and coverage decide among the rest
PRIOR = {"bias": -3.5, "check": 4.0, "sim": 1.0, "sim_kind": 0.5, "cov": 1.0, "slot": 0.5, "rank": 1.5,
         "opening": -0.5, "length": -0.3, "bi": 0.0, "long": 0.0, "model": -0.5, "fit": 0.0, "rest": 1.0,
         "preamble": 0.5, "defines": 0.5, "phrase": 0.0, "heading": 0.0, "margin": 0.0}
PRIOR_THRESHOLD = 0.5
PRIOR_FLOOR = 0.2  # below it the best candidate is not worth stating: "the documents do not contain" it


@dataclass(frozen=True)
class Calibration:
    weights: dict
    threshold: float
    source: str  # "prior" or what the calibration was fitted on

    def score(self, x: dict) -> float:
        z = sum(self.weights.get(k, 0.0) * float(x.get(k, 0.0)) for k in FEATURES)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


PRIOR_CALIBRATION = Calibration(dict(PRIOR), PRIOR_THRESHOLD, "prior")


NEVER = 1.01  # a threshold no probability reaches


@dataclass(frozen=True)
class Calibrations:
    """Per kind of candidate (route:source), the fitted weights and threshold. A kind the dev sets have not
    measured yet (a model-written draft, a long-route summary) is scored by the prior but never supported:
    `supported` is a promise only where it was measured. With no calibration file at all, the prior decides."""
    kinds: dict
    floor: float = PRIOR_FLOOR
    source: str = "prior"

    def for_kind(self, kind: str) -> Calibration:
        if kind in self.kinds:
            return self.kinds[kind]
        return Calibration(dict(PRIOR), NEVER, "not measured") if self.kinds else PRIOR_CALIBRATION


def can_support(kind: str) -> bool:
    """Whether a candidate of ``kind`` (route:source) can be supported at all: a route need not spend time
    writing a candidate the verifier will never accept."""
    return load_calibration().for_kind(kind).threshold <= 1.0


@lru_cache(maxsize=4)
def load_calibration(path: str = str(CALIBRATION)) -> Calibrations:
    """The fitted weights and thresholds (read once per path: a data file shipped with the code, not a
    document fact); the prior when no calibration has been written."""
    p = Path(path)
    if not p.exists():
        return Calibrations({})
    data = json.loads(p.read_text())
    src = data.get("source", p.name)
    kinds = {k: Calibration({f: float(v) for f, v in e["weights"].items()}, float(e["threshold"]), src)
             for k, e in (data.get("kinds") or {}).items()}
    return Calibrations(kinds, float(data.get("floor", PRIOR_FLOOR)), src)


def candidate_kind(candidate: dict) -> str:
    """route:source; a passage carrying the clause finder's pick (``picked``: a question of no known kind about an
    agreement, its best sentence weighed over every unit read) is a kind of its own, ``rag:pick``: fitted with the
    other passages (a filing's, a report's) it was held to their threshold, and CUAD-dev asked with the kinds off had
    46 of 1,197 answers supported; fitted apart, 154 (9 wrong; halves 0.960 / 0.924)."""
    kind = f"{candidate.get('route') or 'rag'}:{candidate.get('source') or 'passage'}"
    return "rag:pick" if kind == "rag:passage" and candidate.get("picked") else kind
