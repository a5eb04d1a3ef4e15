"""CPU prefill of SmolLM2-135M (packaged GGUF, int4 weights, bf16 KV: the app's defaults), the engine's prefill
path against the one it replaced, interleaved in one process (issue #14).

"before": attention over fp32 copies of the bf16 pool (``PagedContext.prefill_bf16`` off) and the int4 gated
MLP's fused dense copy with silu * up as separate fp32 passes (``MLP.prefill_gated`` off; the dense copy is
rebuilt from the int4 weight, the same values). "after": what the engine runs by default.

Workloads: fresh prompts of 512 and 2,000 tokens and the ~6,000-token dossier (real contracts from
``../shared/eval/cuad-dev/txt``; without them a long text of this repository's docs), each timed to its first
token through the ``LLM`` facade as the app calls it, plus the dossier's first token from a snapshot of its
system message. Prints wall seconds, CPU seconds of the process (the fair measure on a shared, loaded VM:
what the work cost, not how long others kept it waiting), the load average, medians and per-repeat ratios.

    python bench/bench_prefill_cpu.py
Env: BENCH_REPEATS (2), BENCH_PREFILL_SIZES (512,2000,dossier), BENCH_CHUNK (512: the app's
engine_chunk_tokens), BENCH_DOSSIER_TOKENS (6000).
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from app.settings import packaged_llm_gguf  # noqa: E402
from engine_workloads import dossier  # noqa: E402

REPEATS = int(os.environ.get("BENCH_REPEATS", 2))
SIZES = os.environ.get("BENCH_PREFILL_SIZES", "512,2000,dossier").split(",")
CHUNK = int(os.environ.get("BENCH_CHUNK", 512))
DOSSIER = int(os.environ.get("BENCH_DOSSIER_TOKENS", 6000))
LLAMA_CPP = {512: 419, 2000: 349}  # tok/s, the quiet-machine measurement


@contextmanager
def before_path(llm):
    """The prefill path before bf16 attention and the gated-MLP epilogues, on the same loaded weights."""
    from engine.layers.linear import _pack_onednn
    from engine.layers.mlp import MLP

    ctx, model = llm.engine.runner.ctx, llm.engine.model
    saved = [(m, m.prefill_gated) for m in model.modules() if isinstance(m, MLP) and m.prefill_gated is not None]
    flag = ctx.prefill_bf16
    ctx.prefill_bf16 = False
    for m, _ in saved:
        m.prefill_gated = None
        m.up_proj.dense_packed = _pack_onednn(m.up_proj.packed.dequantize(torch.bfloat16))
    try:
        yield
    finally:
        ctx.prefill_bf16 = flag
        for m, gated in saved:
            m.prefill_gated, m.up_proj.dense_packed = gated, None


def first_token(llm, prompt: list[int], snapshot=None) -> tuple[float, float]:
    """-> (wall, process CPU seconds) from submitting a greedy request to its first token."""
    from engine.sampling import SamplingParams

    w, c = time.perf_counter(), time.process_time()
    handle = llm.submit(prompt, SamplingParams(max_tokens=1, ignore_eos=True), snapshot=snapshot)
    handle.result()
    return time.perf_counter() - w, time.process_time() - c


def long_prompt(tokenizer, n: int) -> tuple[list[int], list[int] | None, str]:
    got = dossier(tokenizer, n)
    if got is not None:
        return got[0], got[1], "real contracts"
    text = "\n\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    return tokenizer.encode(text)[:n], None, "this repository's docs (../shared/eval is not here)"


def line(name: str, runs: list[tuple[float, float]], tokens: int) -> str:
    wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
    return f"  {name:7s} wall {wall:7.2f} s ({tokens / wall:6.0f} tok/s)  CPU {cpu:7.2f} s ({tokens / cpu:6.0f} tok/CPU-s)"


def main() -> int:
    from engine.llm import LLM
    from engine.loader import load_model

    path = packaged_llm_gguf()
    loaded = load_model(path)
    print(f"SmolLM2-135M int4, bf16 KV, chunk {CHUNK}, {torch.get_num_threads()} threads, load average "
          f"{os.getloadavg()[0]:.1f}: before vs after, interleaved, {REPEATS} repeats")
    docs, prefix, source = long_prompt(loaded.tokenizer, DOSSIER)
    for size in SIZES:
        prompt = docs if size == "dossier" else long_prompt(loaded.tokenizer, int(size) + 200)[0][:int(size)]
        llm = LLM(path, loaded=loaded, max_model_len=len(prompt) + 64, max_num_seqs=2, memory_gib=3.0,
                  kv_dtype="bfloat16", chunk_tokens=CHUNK, speculative=False)
        first_token(llm, prompt[:16])  # warm-up
        runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for _ in range(REPEATS):
            with before_path(llm):
                runs["before"].append(first_token(llm, prompt))
            runs["after"].append(first_token(llm, prompt))
        ratios = ", ".join(f"{b[0] / a[0]:.2f}x wall / {b[1] / a[1]:.2f}x CPU" for b, a in zip(runs["before"], runs["after"]))
        ref = f"; llama.cpp on the issue's quiet machine: {LLAMA_CPP[int(size)]} tok/s" if size != "dossier" else ""
        print(f"\nfresh {len(prompt)}-token prompt ({'dossier, ' + source if size == 'dossier' else source}), "
              f"to the first token{ref}; load average now {os.getloadavg()[0]:.1f}")
        for name, r in runs.items():
            print(line(name, r, len(prompt)))
        print(f"  after vs before, each repeat: {ratios}")
        if size == "dossier" and prefix is not None:
            llm.create_snapshot("dossier", prefix)
            snap = [first_token(llm, prompt[len(prefix):], snapshot="dossier") for _ in range(3)]
            fresh = statistics.median(r[0] for r in runs["after"])
            s = statistics.median(r[0] for r in snap)
            print(f"  from the snapshot of its system message: {s:.3f} s wall, {fresh / s:.0f}x faster than fresh "
                  f"({len(prompt) - len(prefix)} continuation tokens)")
        llm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
