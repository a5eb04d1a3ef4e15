"""Engine throughput vs transformers ``generate`` on SmolLM2-135M, side by side in one process.

8 concurrent requests (8 caller threads on one ``LLM``), 512-token prompts, 128 new tokens each, greedy, EOS
ignored. The reference is transformers' batched ``generate`` on the same packaged GGUF weights in the same
dtype (its prompt-lookup option does not batch). For each dtype (fp32, then bf16) the runs are interleaved
``BENCH_REPEATS`` times — reference, ours with prompt lookup off, ours as configured by default (prompt
lookup on) — and the medians are printed with the ratio of each repeat's pair, because this shared VM's
speed drifts by 10-20% between minutes. Greedy outputs are compared with the reference's.

    lexicon bench engine      (or: python bench/bench_engine.py)
Env: BENCH_REQUESTS, BENCH_PROMPT_TOKENS, BENCH_NEW_TOKENS, BENCH_REPEATS (2), BENCH_DTYPES (float32,bfloat16).
"""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

from app.settings import packaged_llm_gguf  # noqa: E402

N_REQ = int(os.environ.get("BENCH_REQUESTS", 8))
PROMPT = int(os.environ.get("BENCH_PROMPT_TOKENS", 512))
NEW = int(os.environ.get("BENCH_NEW_TOKENS", 128))
REPEATS = int(os.environ.get("BENCH_REPEATS", 2))
DTYPES = os.environ.get("BENCH_DTYPES", "float32,bfloat16").split(",")
TOPICS = ["a supply contract", "a quarterly balance sheet", "a lease agreement", "an audit report",
          "a loan covenant", "a merger agreement", "an insurance policy", "a cash-flow statement"]


def make_prompts(tokenizer) -> list[list[int]]:
    prompts = []
    for i in range(N_REQ):
        text = f"Document {i}: {TOPICS[i % len(TOPICS)]}. " + " ".join(
            f"Clause {j}: the party {chr(65 + (i + j) % 26)} pays {100 + 7 * j + i} EUR on day {j % 28 + 1}."
            for j in range(400))
        prompts.append(tokenizer.encode(text)[:PROMPT])
    return prompts


def run_ours(path: Path, loaded, prompts: list[list[int]], speculative: bool) -> tuple[float, list[list[int]], dict]:
    from engine.llm_engine import LLM
    from engine.sampling import SamplingParams

    kv = "float32" if loaded.model.dtype == torch.float32 else "bfloat16"  # the reference's cache dtype
    llm = LLM(path, max_model_len=PROMPT + NEW + 16, max_num_seqs=N_REQ, memory_gib=3.0, kv_dtype=kv,
              chunk_tokens=512, loaded=loaded, speculative=speculative)
    params = SamplingParams(max_tokens=NEW, ignore_eos=True)
    llm.generate([prompts[0][:16]], SamplingParams(max_tokens=2))  # warm-up
    outs: list = [None] * len(prompts)

    def call(i: int) -> None:  # concurrent callers, batched by the engine's background loop
        outs[i] = llm.generate([prompts[i]], params)[0]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(prompts))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    stats = llm.stats()
    llm.close()
    return elapsed, [o.token_ids for o in outs], stats


def run_transformers(model, prompts: list[list[int]]) -> tuple[float, list[list[int]]]:
    pad = model.config.eos_token_id if isinstance(model.config.eos_token_id, int) else 0
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.inference_mode():
        model.generate(ids[:1, :16], attention_mask=mask[:1, :16], max_new_tokens=2, do_sample=False)  # warm-up
        t0 = time.perf_counter()
        out = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                             pad_token_id=pad)
        elapsed = time.perf_counter() - t0
    return elapsed, [row[width:].tolist() for row in out]


def agreement(ours: list[list[int]], theirs: list[list[int]]) -> str:
    same = sum(a == b for a, b in zip(ours, theirs))
    prefix = [next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), len(a)) for a, b in zip(ours, theirs)]
    return f"{same}/{len(ours)} identical to transformers, mean common prefix {statistics.mean(prefix):.1f}/{NEW}"


def bench_dtype(path: Path, dtype_name: str, prompts: list[list[int]]) -> None:
    from engine.loader import load_model
    from engine.loader.hf_reference import transformers_llama_from_gguf

    dtype = getattr(torch, dtype_name)
    reference = transformers_llama_from_gguf(path).to(dtype)
    loaded = load_model(path, dtype=dtype)
    times: dict[str, list[float]] = {"ref": [], "plain": [], "spec": []}
    for _ in range(REPEATS):
        t, theirs = run_transformers(reference, prompts)
        times["ref"].append(t)
        t, plain, _ = run_ours(path, loaded, prompts, speculative=False)
        times["plain"].append(t)
        t, spec, stats = run_ours(path, loaded, prompts, speculative=True)
        times["spec"].append(t)
    total = NEW * len(prompts)
    med = {k: statistics.median(v) for k, v in times.items()}

    def ratios(key: str) -> str:
        each = [r / o for r, o in zip(times["ref"], times[key])]
        return f"{statistics.median(each):.2f}x (each repeat: {', '.join(f'{x:.2f}' for x in each)})"

    print(f"\n[{dtype_name}] median of {REPEATS} interleaved repeats")
    print(f"  transformers generate (batched)        {med['ref']:6.2f} s  {total / med['ref']:6.1f} new tok/s")
    print(f"  ours, prompt lookup off                {med['plain']:6.2f} s  {total / med['plain']:6.1f} new tok/s  "
          f"{ratios('plain')}; {agreement(plain, theirs)}")
    print(f"  ours, engine default (prompt lookup)   {med['spec']:6.2f} s  {total / med['spec']:6.1f} new tok/s  "
          f"{ratios('spec')}; outputs equal prompt-lookup-off: {spec == plain}; mean acceptance length "
          f"{stats['spec_mean_acceptance_length']:.2f}; peak batch {stats['peak_batch']}")


def main() -> int:
    from engine.tokenizer import Tokenizer

    path = packaged_llm_gguf()
    prompts = make_prompts(Tokenizer.from_gguf(path))
    print(f"SmolLM2-135M on CPU ({torch.get_num_threads()} threads): {len(prompts)} concurrent requests x "
          f"{PROMPT} prompt tokens x {NEW} new tokens, greedy")
    for dtype_name in DTYPES:
        bench_dtype(path, dtype_name.strip(), prompts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
