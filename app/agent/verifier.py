"""The one calibrated verifier: does a candidate's cited span answer this question?

Every route (rag, bi, long) hands its candidates here; none of them decides ``supported``. A candidate is a
plain dict: ``answer`` (the text it would state), ``citations`` (verbatim quotes with document, page, section),
``route``, ``source`` (clause | text | model | bi | long | passage), ``rank`` (its order in the route's own
ranking) and ``check`` (the route's own evidence check: a verified quote, a grounded BI program; a feature
here, not the verdict).

General evidence only, as features of (frame, candidate):
- ``sim``: the embedder's cosine of the asking part and the cited span; ``sim_kind``: of the clause kind's
  description and the span (the asking part again when no kind is known);
- ``cov``: the share of the question's content words (synonyms and spellings folded) in the span and its
  section title;
- ``slot``: the answer slot is filled (a jurisdiction, a duration, an amount, parties, a date; a figure for a
  figure question);
- ``fit``: the share of the question's content words the clause kind's data explains (0 with no kind);
  ``rest``: the share of the words it does not explain (all of them with no kind) that the span and its section
  title state: a kind read off one shared word leaves the rest of the question to the span;
- ``phrase``: the longest run of the question's content words, in its order, that the span or its section title
  states word for word ("most favored nation", "right of first refusal"): 0.5 for two words, 1 for three or
  more; ``heading``: the share of the question's content words its section title states (what the clause is
  about, by its own name); what a question of no known kind has instead of a kind's data;
- ``margin``: how far the retrieved passage that holds the cited span stands above the best other passage, in
  the route's own fused score, over the best score (-1..1): a search whose best unit stands out is more often
  right than one whose first few units score alike (0 where no retrieved passage holds the span);
- ``check``, ``rank``, the route, the span's length, whether it is the document's opening (its first 1,500
  characters): ``preamble`` where the kind's answer is the parties or a date, which the opening states, else
  ``opening``; ``defines``: for a value (a date, a duration, ...), the span defines a quoted term the question
  names (the "Effective Date").
Hard gates (never supported, whatever the score): no cited span, a figure or name of the answer missing from its
span, a span (with its heading) that states none of the question's content words where the route's own check did not
hold ("what is the warranty period?" answered by the term clause), a span from a document out of scope, a clause
kind that explains half of the question or less whose span states less than half of the rest ("what exceptions apply
to the non-compete?" answered by the non-compete clause itself; "can confidential information be shared with
affiliates?" by the definition of confidential information), a question that also names another kind ("terminate
renewal" read as the notice period) whose span does not speak of it, a clause that states only another of its
kind's ways than the one a question (not a yes/no one) names (``ClauseKind.alternatives``: "where will disputes be
arbitrated?" answered by a courts clause), a BI program that does not compute the
operation asked ("the change in the average" answered by an average), a date another sentence of the contract
contradicts when the question speaks of how the contract states it ("become effective": ``clauses.restated``), a
clause span that says the question's words only where it refers back to them ("the license granted under this
Agreement will be exclusive": ``clauses.references``), a passage quoted whole that is a table's cells
(``table_cells``: a table is read by the BI route, row by column; a span read off its cells, such as the years of
its header, may answer), or only a heading ("3.0 License Grant": it names the clause; the parties' names aside).
A BI program's ``cov`` is the share of the question's item words its rows, columns and title explain
(``bi.grounding``). The weights and thresholds are calibrated on the dev sets per kind of candidate
(``app/evaluation/calibrate.py`` writes ``app/data/verifier.json``) for supported precision >= 0.9; a kind the
dev sets have not measured is never supported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from app.agent.bi.question import operation_unmet, operations_unstated
from app.agent.calibration import Calibrations, candidate_kind, load_calibration
from app.agent.clauses.definitions import defines
from app.agent.clauses.references import referred_only
from app.agent.clauses.taxonomy import asked_words, share_stated, stems
from app.agent.text import flat, heading_like
from app.agent.text_spans import YEAR
from app.agent.text_terms import key_words
from app.agent.verify import DATE, answer_in_span, has_slot
from app.agent.vocabulary import asks_yes_no


FIGURE_SLOTS = {"amount": "amount", "percent": "amount", "count": "amount", "date": "date", "duration": "duration"}
HALF = 0.5  # a question its clause kind explains half of or less: the span must state half of the rest
NAME_OK = re.compile(r"^(?:Not verified|Governing law|Date|Rows used|Source|SQL)\b")


@dataclass
class Verdict:
    score: float
    supported: bool
    threshold: float
    reasons: list[str] = field(default_factory=list)
    features: dict = field(default_factory=dict)
    gated: bool = False  # a hard gate failed: never supported, and ranked after every ungated candidate

    def to_dict(self) -> dict:
        return {"score": round(self.score, 4), "supported": self.supported, "threshold": self.threshold,
                "gated": self.gated,
                "reasons": self.reasons, "features": {k: round(float(v), 4) for k, v in self.features.items()}}


def span_of(candidate: dict) -> str:
    return " ".join(c.get("quote") or "" for c in candidate.get("citations") or []).strip()


def table_cells(span: str) -> bool:
    """Ingest writes a table's rows as tab-separated lines (``ingest.parsers.rows_as_text``): a span mostly made
    of such lines is a table's cells, which states no answer; a table is read by the BI route, row by column."""
    lines = [line for line in span.splitlines() if line.strip()]
    cells = sum(len(line) for line in lines if line.count("\t") >= 2)
    return cells > 0.5 * sum(len(line) for line in lines)


QUOTED = re.compile(r"\u201c[^\u201d]*\u201d|\"[^\"]*\"", re.S)


def statement_of(candidate: dict) -> str:
    """What the answer states in its own words: the text without its verbatim quotes and without the lines
    that say where they stand (file, page, section): the part whose figures and names must be in the span."""
    text = candidate.get("answer") or ""
    for c in candidate.get("citations") or []:
        for part in (c.get("filename"), f"page {c.get('page')}", c.get("section")):
            if part:
                text = text.replace(str(part), " ")
    return QUOTED.sub(" ", text)


def stated(slot: str, span: str) -> bool:
    """The span states a value of the kind a question asks for: ``has_slot``, where for a date any date or year
    will do (a figure question's "when", not an agreement's date)."""
    if slot == "date":
        return bool(DATE.search(span) or YEAR.search(span))
    return has_slot(slot, span)


def unstated_ask(frame, kind, span: str, defining: bool = False) -> Optional[str]:
    """The value the question asks for (an amount, a date, a duration) where ``span`` does not state it, else
    None. The contract's own definition of the term asked (``defining``: an Effective Date defined by an event)
    answers it."""
    asked = FIGURE_SLOTS.get(frame.ask) if frame is not None else None
    if not asked or defining:
        return None
    if asked == "date" and (_slot_for(frame, kind) == "duration" or kind is None and has_slot("duration", span)):
        # a duration says when: "when does it expire?" of a term ("continues for three (3) years"), and "when must
        # invoices be paid?" of no known kind ("within thirty (30) days of receipt"); a kind's date (an agreement's,
        # an effective date) is a date
        asked = "duration"
    return None if stated(asked, span) else asked


def _slot_for(frame, kind) -> Optional[str]:
    if kind is not None and getattr(kind, "answer", None) not in (None, "", "clause"):
        return kind.answer
    return FIGURE_SLOTS.get(frame.ask) if frame is not None else None


def _cov(words: set[str], text: str) -> float:
    if not words:
        return 0.0
    return len(words & key_words(text)) / len(words)


def _named_besides(frame, kind) -> set[str]:
    """The question's words, beyond its clause kind, that name another kind of the shipped taxonomy."""
    if frame is None or kind is None or not hasattr(kind, "rest"):
        return set()
    from app.agent.clauses.taxonomy import built_in

    return built_in().named_besides(kind, frame.query)


def phrase_run(query: str, text: str) -> float:
    """``phrase``: 0 where no two adjacent content words of ``query`` stand together in ``text``, 0.5 for two,
    1.0 for three or more (stop words between them do not break a run: "right of first refusal")."""
    asked = [w for w in stems(query) if not w.isdigit()]
    said = stems(text)
    pairs = set(zip(said, said[1:]))
    best = run = 1
    for a, b in zip(asked, asked[1:]):
        run = run + 1 if (a, b) in pairs else 1
        best = max(best, run)
    return min(1.0, (best - 1) / 2)  # a lone word (best 1) is no run: 0


def _heading(frame, sections: str) -> float:
    return share_stated(asked_words(frame.query), sections) if frame is not None else 0.0


def _rest(frame, kind, text: str) -> tuple[float, float]:
    """(fit, rest) of a candidate: how much of the question the kind explains, and how much of what it does
    not explain the cited text states."""
    query = frame.query if frame is not None else ""
    if kind is not None and hasattr(kind, "rest"):
        fit, residual = kind.fit(query), kind.rest(query)
    else:
        fit, residual = 0.0, asked_words(query)
    return fit, share_stated(residual, text) if residual else 1.0


def features(frame, candidate: dict, sim: float, sim_kind: float, kind=None) -> tuple[dict, list[str]]:
    """-> (features, hard-gate failures) of one candidate."""
    span = span_of(candidate)
    gates: list[str] = []
    if not span:
        gates.append("no cited span")
    answer = statement_of(candidate)
    ok, missing = answer_in_span(answer, [span] + [c.get("section") or "" for c in candidate.get("citations") or []])
    missing = [m for m in missing if not NAME_OK.match(m)]
    if not ok and missing and candidate.get("route") != "bi":
        gates.append(f"not in the cited text: {', '.join(missing[:4])}")
    passage = candidate.get("route") == "rag" and candidate.get("source") == "passage" and bool(span)
    if passage and table_cells(span):
        gates.append("the cited text is a table's cells, not a sentence that states the answer")
    if frame is not None and frame.doc_ids is not None:
        outside = [c for c in candidate.get("citations") or [] if c.get("doc_id") not in frame.doc_ids]
        if outside:
            gates.append("cites a document out of scope")
    words = set(key_words(frame.query)) if frame is not None else set()
    sections = " ".join(c.get("section") or "" for c in candidate.get("citations") or [])
    slot = _slot_for(frame, kind)
    if passage and heading_like(span) and slot != "parties":  # a title line may be the parties' names
        gates.append("the cited text is a heading: it names what a clause is about and states nothing")
    defining = frame is not None and slot not in (None, "", "clause") and defines(frame.query, span)
    asked = unstated_ask(frame, kind, span, defining)
    if asked and span and candidate.get("route") == "rag":
        gates.append(f"no {asked} stated, and the question asks for one")
    if frame is not None and frame.ask == "years" and candidate.get("route") == "rag" and span \
            and not YEAR.search(span):
        gates.append("no year stated, and the question asks which years")  # "presented in the table below"
    if candidate.get("route") == "bi" and frame is not None:
        unmet = operation_unmet(frame.query, candidate.get("op") or "", candidate.get("op_label") or "")
        if unmet:
            gates.append(f"the question asks for {' and '.join(sorted(unmet))}, which the program does not compute")
    if candidate.get("route") != "bi" and frame is not None and span and kind is None \
            and frame.ask in ("amount", "percent", "count", "text"):  # a figure computed ("why" names no computation)
        unstated = operations_unstated(frame.query, f"{sections} {span}")
        if unstated:
            gates.append(f"the question asks for {' and '.join(sorted(unstated))}, which the cited text does not state")
    cover = candidate.get("cover")  # a BI program: the share of the item words its rows and columns explain
    x = {"bias": 1.0, "check": 1.0 if candidate.get("check") else 0.0, "sim": sim, "sim_kind": sim_kind,
         "cov": float(cover) if cover is not None else _cov(words, f"{sections} {span}"),
         "slot": (1.0 if has_slot(slot, span) else 0.0) if slot else 0.5,
         "rank": 1.0 / (1.0 + float(candidate.get("rank") or 0)),
         "opening": 1.0 if candidate.get("opening") and slot not in ("parties", "date") else 0.0,
         "preamble": 1.0 if candidate.get("opening") and slot in ("parties", "date") else 0.0,
         "length": min(1.0, len(span.split()) / 200.0),
         "bi": 1.0 if candidate.get("route") == "bi" else 0.0,
         "long": 1.0 if candidate.get("route") == "long" else 0.0,
         "model": 1.0 if candidate.get("source") == "model" else 0.0}
    if (candidate.get("route") == "rag" and span and words and not x["cov"] and not candidate.get("check")
            and slot not in ("parties", "date")):  # the opening states its parties and date in its own words
        gates.append("the cited text and its heading state none of the question's words")
    x["fit"], x["rest"] = _rest(frame, kind, f"{sections} {span}")
    x["phrase"] = phrase_run(frame.query, f"{sections}. {span}") if frame is not None else 0.0
    x["heading"] = _heading(frame, sections)
    x["defines"] = 1.0 if defining else 0.0
    if kind is not None and candidate.get("route") == "rag" and x["fit"] <= HALF and x["rest"] < HALF:
        gates.append("the question asks more than its clause kind, and the cited text does not say it")
    if candidate.get("contradicted"):  # another sentence of the contract states the value asked otherwise
        gates.append(f"the contract states it otherwise: \u201c{candidate['contradicted'][:160]}\u201d")
    if frame is not None and candidate.get("route") == "rag" and slot in (None, "", "clause") and x["fit"] >= HALF:
        # a question that asks for the kind itself ("what license is granted?"), not for what else holds of it
        # ("is the license non-transferable?", which a back-reference may answer)
        ref = referred_only(frame.query, span)
        if ref:  # "the license granted ... under this Agreement will be exclusive": the grant is stated elsewhere
            gates.append(f"the cited text only refers back to what is asked (\u201c{ref}\u201d)")
    other = (kind.other_way(frame.query, f"{sections} {span}") if frame is not None and hasattr(kind, "other_way")
             and candidate.get("route") == "rag" and not asks_yes_no(frame.query) else None)
    if other:  # "is it arbitrated?" is answered by the courts clause (no); "where is it arbitrated?" is not
        gates.append(f"the question asks about {other[0]}; the cited text provides for {other[1]}")
    besides = _named_besides(frame, kind)
    if besides and candidate.get("route") == "rag" and not {w[:5] for w in besides} & {w[:5] for w in stems(
            f"{sections} {span}")}:
        gates.append(f"the question also names {', '.join(sorted(besides))}, which the cited text does not speak of")
    return x, gates


MAX_CANDIDATES = 8
SIM_CHARS = 400  # the opening of a span: what it is about (the embedder costs grow with its length)


def _similarities(embedder, queries: list[str], spans: list[str]) -> list[list[float]]:
    """Cosines of each query with each span, every distinct text encoded once in one call."""
    if embedder is None or not spans:
        return [[0.0] * len(spans) for _ in queries]
    texts = list(dict.fromkeys([q for q in queries if q.strip()] + [t[:SIM_CHARS] for t in spans]))
    vecs = dict(zip(texts, embedder.encode(texts)))
    out = []
    for q in queries:
        if not q.strip():
            out.append([0.0] * len(spans))
            continue
        out.append([float(np.dot(vecs[q], vecs[t[:SIM_CHARS]])) for t in spans])
    return out


def margin_of(candidate: dict, passages: list[dict]) -> float:
    """``margin``: (the score of the passage that holds the candidate's first cited quote - the best score of
    the other passages) / the best score, in -1..1; 0 where no passage holds the quote, scores are missing or
    the candidate was read off the whole document (``read="document"``: "the key agenda of the 8-K")."""
    cites = candidate.get("citations") or []
    scores = [float(p.get("score") or 0.0) for p in passages]
    if candidate.get("read") == "document" or not cites or len(scores) < 2 or max(scores) <= 0:
        return 0.0  # a whole-document reading ("the key agenda of the 8-K") is no pick of the search's ranking
    quote = flat(cites[0].get("quote") or "").strip()[:120]
    doc = cites[0].get("doc_id")
    i = next((i for i, p in enumerate(passages) if quote and (doc is None or p.get("doc_id") == doc)
              and quote in flat(p.get("text") or "")), None)
    if i is None:
        return 0.0
    other = max(s for j, s in enumerate(scores) if j != i)
    return max(-1.0, min(1.0, (scores[i] - other) / max(scores)))


VALUE_WORDS = 5  # an answer this short states a value (a figure, a date, a name), not a sentence


def is_value(candidate: dict) -> bool:
    """The candidate's answer is a value, not a sentence: its first line has ``VALUE_WORDS`` words or fewer."""
    return len(((candidate.get("answer") or "").splitlines() or [""])[0].split()) <= VALUE_WORDS


def leads(check: bool, can_support: bool, value: bool, picked: bool) -> bool:
    """Whether a candidate's own check puts it ahead of those the verifier finds more probable: where its kind can
    be supported (probabilities of different kinds are fitted on different sets: across kinds the check is the
    surer order), where it states a value, or unless the most probable candidate is a passage carrying the clause
    finder's pick (``picked``: a question of no known kind about an agreement). Against it, a sentence extracted by
    a kind that is never supported (``rag:text``) is weighed by probability alone (CUAD-dev, questions of no known
    kind: a wrong extraction was shown ahead of a right passage 43 times, the reverse 8); an extracted figure or
    date still leads the passage that holds it (TAT-QA: the passage states it among other words). A filing's
    passages carry no pick: there the extraction's reads (an 8-K's first item, a list's sentences) lead, as the
    unrestricted order lost two FinanceBench-dev answers."""
    return bool(check) and (can_support or value or not picked)


def rival_picked(picks: list, gated: list, score: list) -> bool:
    """The most probable ungated candidate is a passage carrying the clause finder's pick (``leads``)."""
    open_ = [i for i in range(len(score)) if not gated[i]]
    return bool(open_) and bool(picks[max(open_, key=lambda i: score[i])])


def answer_order(gated: list, supported: list, lead: list, score: list) -> list[int]:
    """The candidates' indices, the answer first: ungated first, then a supported one whenever one is (a passage
    that scores higher but can never be supported does not displace a clause quote that passed its threshold),
    then those that ``lead`` (``leads``), then the most probable. ``lexicon calibrate`` simulates the agent with
    this same order."""
    return sorted(range(len(score)), key=lambda i: (gated[i], not supported[i], not lead[i], -score[i], i))


def judge(frame, candidates: list[dict], embedder=None, kind=None,
          calibration: Optional[Calibrations] = None,
          passages: Optional[list[dict]] = None) -> tuple[Optional[dict], Optional[Verdict], list[dict]]:
    """Score every candidate; -> (the best candidate, its verdict, every candidate with its verdict). The
    best passes the hard gates if any does, is supported if any is, has its route's own check if any has, and
    is the most probable. ``passages``: what the route retrieved, with its scores (for ``margin``)."""
    if not candidates:
        return None, None, []
    candidates = candidates[:MAX_CANDIDATES]  # the routes hand them over best first
    cal = calibration or load_calibration()
    spans = [span_of(c) for c in candidates]
    query = frame.query if frame is not None else ""
    kind_text = " ".join([getattr(kind, "description", "") or ""] + list(getattr(kind, "wordings", ()) or ()))
    sims, sims_kind = _similarities(embedder, [query, kind_text if kind is not None else ""], spans)
    if kind is None or not kind_text.strip():
        sims_kind = sims
    judged = []
    for c, s, sk in zip(candidates, sims, sims_kind):
        x, gates = features(frame, c, s, sk, kind)
        x["margin"] = margin_of(c, passages or [])
        cc = cal.for_kind(candidate_kind(c))
        p = cc.score(x)
        ok = not gates and p >= cc.threshold
        why = gates or ([f"score {p:.2f} >= {cc.threshold:.2f}"] if ok else [f"score {p:.2f} < {cc.threshold:.2f}"])
        judged.append((c, Verdict(p, ok, cc.threshold, why, x, bool(gates))))
    picked = rival_picked([bool(c.get("picked")) for c, _ in judged], [v.gated for _, v in judged],
                          [v.score for _, v in judged])
    lead = [leads(v.features["check"], v.threshold <= 1.0, is_value(c), picked) for c, v in judged]
    order = answer_order([v.gated for _, v in judged], [v.supported for _, v in judged], lead,
                         [v.score for _, v in judged])
    best, verdict = judged[order[0]]
    out = [dict(c, verdict=v.to_dict()) for c, v in (judged[i] for i in order)]
    return best, verdict, out
