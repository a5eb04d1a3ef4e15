"""The verify node: the one place ``supported`` is decided, for every route.

Routes hand over candidates (``app.agent.verifier`` says what one is); this node scores them with the
calibrated verifier and writes the answer. A supported answer is the best candidate as it stands. Below the
threshold the answer states what was found (the best candidate), then a "Not verified:" line saying why, and
lists the passages it rests on as related (citations are support only); when nothing found comes near the
question, or there is no candidate at all, the documents do not contain it.
"""
from __future__ import annotations

from app import prompts
from app.agent.calibration import load_calibration
from app.agent.frame import QuestionFrame
from app.agent.state import AgentDeps, AgentState
from app.agent.text import flat
from app.agent.verifier import judge
from app.agent.verify import FIGURE
from app.agent.vocabulary import asks_yes_no

RELATED = 3


def why_not(verdict) -> str:
    """The verifier's reason in words: a failed gate, or its confidence under the threshold."""
    gates = [r for r in verdict.reasons if not r.startswith("score ")]
    if gates:
        return "; ".join(gates)
    if verdict.threshold > 1:
        return "answers of this kind are not yet shown to reach the verifier's precision target on the dev sets"
    return f"the verifier's confidence {verdict.score:.2f} is under its threshold {verdict.threshold:.2f}"


EXTRAS = ("sql", "columns", "rows", "chart", "op", "op_label", "cover")


def as_candidate(out: dict, route: str, source: str, rank: int = 0, **more) -> dict:
    """A route's answer dict (answer, citations, supported, ...) as a candidate; its own verdict is a feature."""
    cand = {"answer": out.get("answer") or "", "citations": list(out.get("citations") or []), "route": route,
            "source": source, "rank": rank, "check": bool(out.get("supported"))}
    for k in EXTRAS:
        if out.get(k) is not None:
            cand[k] = out[k]
    cand.update(more)
    return cand


def _kind_of(kb, tenant: str, name: str | None):
    if not name:
        return None
    from app.agent.clauses.playbook import taxonomy_for

    return taxonomy_for(kb, tenant).get(name)


def _where(c: dict) -> str:
    parts = [c.get("filename") or ""]
    if c.get("page") not in (None, ""):
        parts.append(f"page {c['page']}")
    if c.get("section"):
        parts.append(f"section {c['section']}")
    return ", ".join(p for p in parts if p)


def _short(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n].rsplit(" ", 1)[0] + " \u2026"


def read_off(best: dict, judged: list[dict], multi: bool = False) -> dict | None:
    """A supported passage and a span the text route read off a sentence of it ("£3.5 million" from "The amount
    of deposits held as collateral at 31 December 2019 is £3.5 million (2018: £3.5 million)."): the span is what
    is asked, the passage (verified) its evidence. The span alone is no promise (the calibration never supports
    a ``rag:text`` candidate by itself), so it answers only beside its verified sentence; where several values
    are asked (``multi``: "... respectively") a span of one figure is not all of them. None otherwise."""
    if best.get("route") != "rag" or best.get("source") != "passage":
        return None
    quoted = flat(" ".join(c.get("quote") or "" for c in best.get("citations") or [])).strip()
    for c in judged:
        v = c.get("verdict") or {}
        quotes = [flat(ci.get("quote") or "").strip() for ci in c.get("citations") or []]
        if (c.get("route") == "rag" and c.get("source") == "text" and c.get("check") and not v.get("gated")
                and quotes and all(q and q in quoted for q in quotes) and flat(c.get("answer") or "").strip() != quoted
                and not (multi and len(FIGURE.findall(c.get("answer") or "")) < 2)):
            return c
    return None


def _no_other_way(frame, kind, best: dict) -> str:
    """The answer, led by "No" where a yes-or-no question names one way of a clause ("are disputes arbitrated?")
    and the cited clause provides only for another (the courts): the kind's ``alternatives``, data."""
    answer = best.get("answer") or ""
    if kind is None or frame is None or not asks_yes_no(frame.query):
        return answer
    quoted = " ".join(c.get("quote") or "" for c in best.get("citations") or [])
    other = kind.other_way(frame.query, quoted) if quoted else None
    return f"No: the cited clause provides for {other[1]}, not {other[0]}.\n{answer}" if other else answer


def make_verify_node(deps: AgentDeps):
    def verify(state: AgentState) -> dict:
        frame = QuestionFrame.from_state(state.get("frame"))
        cands = state.get("candidates") or []
        route = state.get("route") or "rag"
        kind = _kind_of(deps.kb, state["tenant"], frame.clause_kind if frame else None)
        embedder = getattr(deps.kb, "embedder", None)
        best, verdict, judged = judge(frame, cands, embedder, kind, passages=state.get("passages") or [])
        if best is None:
            return {"answer": prompts.NO_SUPPORT, "supported": False, "citations": [], "related": [],
                    "route": route, "verdict": None}
        others = [c for c in judged[1:] if c.get("citations")]
        related = []
        for c in others:
            for cite in c["citations"][:1]:
                if cite not in related and cite not in best.get("citations", []):
                    related.append(cite)
            if len(related) >= RELATED:
                break
        out = {k: best.get(k) for k in EXTRAS}
        out.update(route=best.get("route") or route, verdict=dict(verdict.to_dict(), candidates=[
            {"answer": _short(c.get("answer") or "", 600), "route": c.get("route"), "source": c.get("source"),
             "picked": bool(c.get("picked")),
             "citations": [{k: ci.get(k) for k in ("doc_id", "filename", "page", "section", "quote")}
                           for ci in (c.get("citations") or [])[:2]],
             "score": c["verdict"]["score"], "features": c["verdict"]["features"], "gated": c["verdict"]["gated"],
             "reasons": c["verdict"]["reasons"]}
            for c in judged[:6]]))
        if verdict.supported:
            span = read_off(best, judged, bool(frame and frame.multi))
            if span is not None:  # the figure asked, read off the verified sentence: the span answers, it cites
                out["verdict"]["reasons"] = list(verdict.reasons) + ["the answer is read off the verified sentence"]
                best = dict(best, answer=span["answer"])
            best = dict(best, answer=_no_other_way(frame, kind, best))
            out.update(answer=best["answer"], citations=best.get("citations") or [], supported=True, related=[])
            return out
        # not supported: what was found is stated as such, its passages related (citations are support only)
        related = (list(best.get("citations") or []) + related)[:RELATED]
        if verdict.score < load_calibration().floor or not verdict.features.get("cov"):
            # nothing found comes near (or shares no word with the question): the documents do not say
            answer = prompts.NO_SUPPORT
        else:
            body = "\n".join(line for line in (best.get("answer") or "").splitlines()
                             if not line.startswith("Not verified:"))  # the route's own doubts come in `why`
            own = [line[len("Not verified:"):].strip(" .") for line in (best.get("answer") or "").splitlines()
                   if line.startswith("Not verified:")]
            answer = f"{body}\nNot verified: {'; '.join(own + [why_not(verdict)])}."
        if related:
            answer += "\nRelated passages:\n" + "\n".join(f"- {_where(c)}: \u201c{_short(c.get('quote') or '')}\u201d"
                                                        for c in related)
        out.update(answer=answer, citations=[], supported=False, related=related)
        return out

    return verify
