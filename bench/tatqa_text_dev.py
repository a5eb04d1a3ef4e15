"""Dev harness for the extractive text answerer (app/agent/text_answer.py) on TAT-QA (../shared/eval/tatqa-dev):
each context rendered as the HTML document `lexicon eval` builds, parsed and chunked by the real ingest code
(no embedding, no store, no model), every question whose answer comes from the paragraphs (answer_from text
or table-text; answer types span, multi-span, count) asked of its document's chunks (ordered by shared
content words, as a scoped search would rank them). Prints EM/F1 by answer type and source, the share
answered (supported) and the supported precision (EM among supported).

    nice -n 10 .venv/bin/python bench/tatqa_text_dev.py [--contexts 278] [--offset 0] [--show-wrong N]

``lexicon eval`` measures the whole agent (routing, retrieval, BI); this isolates the extractor.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "eval" / "tatqa-dev" / "tatqa_dataset_dev.json"


def chunks_of(ctx: dict, tmp: Path) -> list[dict]:
    from app.evaluation.adapters.tatqa_render import render_html
    from ingest.chunker import ChunkConfig, chunk_pages
    from ingest.detect import ZipLimits
    from ingest.pipeline import PipelineLimits, read_and_parse

    name = f"tatqa-{ctx['table']['uid'][:8]}.html"
    path = tmp / name
    path.write_text(render_html(ctx, f"Financial report extract {ctx['table']['uid'][:8]}"), encoding="utf-8")
    cfg = ChunkConfig(256, 32)
    _, parsed = read_and_parse(path, PipelineLimits(2**30, ZipLimits(2**31), cfg))
    return [{"doc_id": name, "filename": name, "page": c.page, "section": c.section, "text": c.text}
            for c in chunk_pages(parsed.pages, cfg)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", type=int, default=278)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--show-wrong", type=int, default=0)
    ap.add_argument("--kind", default="", help="only questions of this text_spans kind")
    ap.add_argument("--source", default="", help="only questions of this answer_from (text, table-text)")
    ap.add_argument("--supported-only", action="store_true", help="--show-wrong: only wrong supported answers")
    args = ap.parse_args()
    if not DATA.exists():
        sys.exit(f"{DATA} not found (the TAT-QA dev set lives in ../shared/eval)")
    from app.agent.text import content_words
    from app.agent.text_answer import text_answer
    from app.agent.text_spans import ask_of
    from app.evaluation.tatqa_metric import tatqa_scores

    contexts = json.loads(DATA.read_text(encoding="utf-8"))[args.offset: args.offset + args.contexts]
    groups: dict[str, list] = defaultdict(list)
    wrong = []
    with tempfile.TemporaryDirectory() as t:
        for ctx in contexts:
            passages = None
            for q in ctx["questions"]:
                if q["answer_from"] == "table" or q["answer_type"] == "arithmetic":
                    continue
                kind = ask_of(q["question"]).kind
                if (args.kind and kind != args.kind) or (args.source and q["answer_from"] != args.source):
                    continue
                passages = passages or chunks_of(ctx, Path(t))
                qw = content_words(q["question"])
                ranked = sorted(passages, key=lambda p: -len(qw & content_words(p["text"])))
                got = text_answer(q["question"], ranked)
                text = got["answer"] if got else "The documents do not state it."
                s = tatqa_scores(text, q["answer"], q.get("scale") or "")
                row = (s["em"], s["f1"], bool(got))
                for g in ("all", q["answer_type"], q["answer_from"], f"kind:{kind}"):
                    groups[g].append(row)
                if s["em"] < 1 and (got or not args.supported_only):
                    wrong.append((kind, q["question"], q["answer"], text,
                                  got["citations"][0]["quote"][:160] if got else ""))
    print(f"{'group':22} {'n':>5} {'EM':>6} {'F1':>6} {'answered':>9} {'sup.prec':>9}")
    for g, rows in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        n = len(rows)
        sup = [r for r in rows if r[2]]
        prec = sum(r[0] for r in sup) / len(sup) if sup else 0.0
        print(f"{g:22} {n:5d} {sum(r[0] for r in rows) / n:6.3f} {sum(r[1] for r in rows) / n:6.3f} "
              f"{len(sup) / n:9.3f} {prec:9.3f}")
    for w in wrong[: args.show_wrong]:
        print("\n[%s] %s\n  gold: %s\n  got:  %s\n  quote: %s" % w)


if __name__ == "__main__":
    main()
