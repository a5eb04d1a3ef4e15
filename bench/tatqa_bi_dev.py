"""Dev harness for the BI route on TAT-QA (../shared/eval/tatqa-dev): each context rendered as an HTML
document (paragraphs, then the table), ingested through the real KnowledgeBase, every question asked
through the agent graph with ``doc_ids`` = that document, stopping where the graph hands over to RAG
(no model runs). Prints EM by answer type/source, routing counts and the arithmetic-from-table EM.

    nice -n 10 .venv/bin/python bench/tatqa_bi_dev.py --contexts 20 [--offset 0] [--show-wrong]

Columns: EM|bi is EM over the BI answers; sup counts BI answers marked ``supported`` and P|sup is the
share of those that are right (supported precision). ``--dump FILE`` writes one JSON line per question.

Scoring: numeric answers match within 1% (or 0.01 absolute) of the gold value, also when the gold
is stated in a different scale (percent vs ratio); span answers by normalised containment. Only the
BI answers are scored; a question handed over to RAG counts as unanswered here (``lexicon eval``
measures the whole agent).
"""
from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "eval" / "tatqa-dev" / "tatqa_dataset_dev.json"
NUM = re.compile(r"[-−–]?\$?\(?\d[\d,]*(?:\.\d+)?")


def answer_statement(text: str) -> str:
    try:
        from app.evaluation.scoring import answer_statement as statement
        return statement(text)
    except ImportError:
        return text


def render(ctx: dict) -> str:
    try:  # the same document `lexicon eval` builds
        from app.evaluation.adapters.tatqa_render import render_html
        return render_html(ctx, f"Financial report extract {ctx['table']['uid'][:8]}")
    except ImportError:
        pass
    paras = "".join(f"<p>{html.escape(p['text'])}</p>" for p in sorted(ctx["paragraphs"], key=lambda p: p["order"]))
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in ctx["table"]["table"])
    return f"<html><body>{paras}<table>{rows}</table></body></html>"


def numbers(text: str) -> list[float]:
    out = []
    for m in NUM.finditer(text):
        s = m.group(0).replace("−", "-").replace("–", "-").replace("$", "").replace(",", "").replace("(", "")
        try:
            out.append(float(s))
        except ValueError:
            pass
    return out


def first_number(text: str) -> float | None:
    ns = numbers(text)
    return ns[0] if ns else None


def num_match(pred: float, gold: float) -> bool:
    for g in (gold, gold * 100, gold / 100):
        if abs(pred - g) <= max(0.01, abs(g) * 0.01):
            return True
    return False


def norm(s: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9.%-]+", " ", str(s).lower()).split())


def f1_of(answer: str, q: dict) -> float:
    try:
        from app.evaluation.tatqa_metric import tatqa_scores
        return float(tatqa_scores(answer, q["answer"], q["scale"])["f1"])
    except ImportError:
        return float(correct(answer, q))


def correct(answer: str, q: dict) -> bool:
    try:  # the metric `lexicon eval` reports
        from app.evaluation.tatqa_metric import tatqa_scores
        return bool(tatqa_scores(answer, q["answer"], q["scale"])["em"])
    except ImportError:
        pass
    gold = q["answer"]
    if q["answer_type"] in ("arithmetic", "count") or isinstance(gold, (int, float)):
        try:
            g = float(gold if not isinstance(gold, list) else gold[0])
        except (TypeError, ValueError):
            return False
        p = first_number(answer)
        return p is not None and num_match(p, g)
    golds = gold if isinstance(gold, list) else [gold]
    a = norm(answer)
    ok = True
    for g in golds:
        gn = norm(g)
        gnum = numbers(str(g))
        if gnum and len(gnum) == 1 and re.fullmatch(r"[-$(),.\d\s%]+", str(g).strip()):
            ok &= any(num_match(p, gnum[0]) for p in numbers(answer)[:3])
        else:
            ok &= bool(gn) and gn in a
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", type=int, default=20)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--show-wrong", action="store_true")
    ap.add_argument("--only", default="", help="answer_type:answer_from filter, e.g. arithmetic:table")
    ap.add_argument("--data-dir", default="")
    ap.add_argument("--dump", default="", help="write one JSON line per question here")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"SKIP: {DATA} is absent")
        return 0
    contexts = json.loads(DATA.read_text())[args.offset::args.stride][: args.contexts]

    from app.agent.graph import build_graph
    from app.agent.state import AgentDeps, turn_input
    from app.settings import Settings
    from ingest.knowledge_base import KnowledgeBase

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="tatqa-bi-"))
    settings = Settings(data_dir=data_dir)
    settings.ensure_dirs()
    kb = KnowledgeBase(settings)

    def no_model():
        raise RuntimeError("no model in this harness")

    graph = build_graph(AgentDeps(kb, settings, no_model))
    docs_dir = data_dir / "docs"
    docs_dir.mkdir(exist_ok=True)
    stats: dict = defaultdict(Counter)
    dump = open(args.dump, "w") if args.dump else None
    t0 = time.time()
    for ci, ctx in enumerate(contexts):
        path = docs_dir / f"tatqa_{args.offset + ci * args.stride:03d}.html"
        path.write_text(render(ctx))
        res = kb.ingest_file(path, "tatqa")
        if res.status == "failed":
            print("ingest failed", path, res.error)
            continue
        for q in ctx["questions"]:
            kind = f"{q['answer_type']}:{q['answer_from']}"
            if args.only and kind != args.only:
                continue
            route, answer, supported = "rag", "", False
            try:
                for upd in graph.stream(turn_input("tatqa", q["question"], "auto", [res.doc_id]),
                                        stream_mode="updates"):
                    if "route" in upd and upd["route"]["route"] != "bi":
                        break
                    if "bi" in upd:
                        route = upd["bi"].get("route", "rag")
                        answer = upd["bi"].get("answer", "")
                        supported = bool(upd["bi"].get("supported"))
                        break
            except Exception as exc:  # the caller saw an exception: a bug
                route, answer = "error", f"{type(exc).__name__}: {exc}"
            stated = answer_statement(answer)  # without the Rows used / Source / SQL lines, as lexicon eval scores
            ok = route == "bi" and correct(stated, q)
            f1 = f1_of(stated, q) if route == "bi" else 0.0
            stats[kind]["f1"] += f1
            stats["ALL"]["f1"] += f1
            s = stats[kind]
            s["n"] += 1
            s[route] += 1
            s["em"] += ok
            stats["ALL"]["n"] += 1
            stats["ALL"][route] += 1
            stats["ALL"]["em"] += ok
            for k in (kind, "ALL"):
                stats[k]["sup"] += supported
                stats[k]["sup_ok"] += supported and ok
            if dump is not None:
                dump.write(json.dumps({"kind": kind, "question": q["question"], "gold": q["answer"],
                                       "scale": q["scale"], "route": route, "supported": supported, "em": ok,
                                       "answer": answer}) + "\n")
            if args.show_wrong and route in ("bi", "error") and not ok or (args.show_wrong and kind == "arithmetic:table" and route != "bi"):
                print(f"--- [{kind}] {q['question']}\n    gold {q['answer']} ({q['scale']}) via {q['derivation']!r}"
                      f"\n    {route}: {answer[:300]}")
    kb.close()
    print(f"\n{len(contexts)} contexts in {time.time() - t0:.0f} s")
    print(f"{'type:source':28s} {'n':>5s} {'bi':>5s} {'rag':>5s} {'err':>4s} {'EM':>6s} {'F1':>6s} {'EM|bi':>6s} "
          f"{'sup':>5s} {'P|sup':>6s}")
    for kind, s in sorted(stats.items()):
        em = 100 * s["em"] / max(1, s["n"])
        prec = 100 * s["em"] / max(1, s["bi"])
        f1 = 100 * s["f1"] / max(1, s["n"])
        sup_p = 100 * s["sup_ok"] / max(1, s["sup"])
        print(f"{kind:28s} {s['n']:5d} {s['bi']:5d} {s['rag']:5d} {s['error']:4d} {em:6.1f} {f1:6.1f} {prec:6.1f} "
              f"{s['sup']:5d} {sup_p:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
