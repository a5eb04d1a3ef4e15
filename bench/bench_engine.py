"""Engine throughput vs transformers ``generate`` on SmolLM2-135M, side by side in one process.

8 concurrent requests, 512-token prompts, 128 new tokens each (greedy, EOS ignored). transformers runs the
packaged Q4_1 GGUF dequantized to fp32; ours runs twice: with the same fp32 weights (the like-for-like
ratio), with the engine's default CPU fp16-weight GEMMs, and with prompt-lookup speculative decoding on top
(outputs must stay identical to greedy). Prints aggregate new tokens/s and the ratios.
Env: BENCH_PROMPT_TOKENS, BENCH_NEW_TOKENS, BENCH_REQUESTS to scale it down.
"""
from __future__ import annotations

import os
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


def load_ours(path: Path, cpu_gemm: str):
    from engine.loader import load_model

    return load_model(path, cpu_gemm=cpu_gemm)


def bench_ours(path: Path, prompts: list[list[int]], loaded,
               speculative: bool = False) -> tuple[float, list[list[int]], dict]:
    from engine.llm_engine import LLM
    from engine.sampling import SamplingParams

    llm = LLM(path, max_model_len=PROMPT + NEW + 16, max_num_seqs=N_REQ, memory_gib=3.0, kv_dtype="float32",
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


def bench_transformers(path: Path, prompts: list[list[int]]) -> tuple[float, list[list[int]]]:
    from engine.loader.hf_reference import transformers_llama_from_gguf

    model = transformers_llama_from_gguf(path)
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


def main() -> int:
    path = packaged_llm_gguf()
    from engine.tokenizer import Tokenizer
    prompts = make_prompts(Tokenizer.from_gguf(path))
    total_new = NEW * len(prompts)
    print(f"SmolLM2-135M fp32 on CPU ({torch.get_num_threads()} threads): {len(prompts)} requests x "
          f"{PROMPT} prompt tokens x {NEW} new tokens")
    t_hf, theirs = bench_transformers(path, prompts)
    print(f"transformers generate (batched, fp32):     {t_hf:7.2f} s  {total_new / t_hf:7.1f} new tok/s")
    runs = (("fp32, engine default oneDNN GEMM", "onednn", False),
            ("fp32, oneDNN GEMM + prompt-lookup speculative", "onednn", True))
    for label, gemm, spec in runs:
        loaded = load_ours(path, gemm)
        t_ours, ours, stats = bench_ours(path, prompts, loaded, speculative=spec)
        same = sum(a == b for a, b in zip(ours, theirs))
        prefix = sum(next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), len(a)) for a, b in zip(ours, theirs))
        print(f"ours ({label}): {t_ours:7.2f} s  {total_new / t_ours:7.1f} new tok/s  "
              f"ratio {t_hf / t_ours:.2f}x  (peak batch {stats['peak_batch']}; greedy outputs identical to "
              f"transformers for {same}/{len(prompts)}, mean common prefix {prefix / len(prompts):.1f}/{NEW}"
              + (f"; mean acceptance length {stats['spec_mean_acceptance_length']:.2f}" if spec else "") + ")")
        del loaded
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
