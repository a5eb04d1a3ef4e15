"""Eight 1M-token contexts on a CPU: the headline's mechanism at the headline's length, on a toy-width hybrid.

A tiny Nemotron-H-shaped model (Mamba2 + 2 NoPE attention layers + MLP, hidden 64, 2 KV heads of 8) whose paged
KV for 8 x 1,000,000 tokens is 8e6 x 256 B = 2.05 GB (1.91 GiB) in fp32 (2 layers x K,V x 2 heads x 8 x 4 B). The KV is filled by the documented fast
path (engine/kv_fill.py: seeded random K/V written into each sequence's blocks through the pool's write path; a
1M prefill is quadratic on two cores), then the engine decodes steps over all cached tokens. Reported:

- the engine's memory budget (engine/memory_budget.py, the function ``lexicon plan`` prints) and the process RSS
  against it: the RSS the sequences add (their token lists, fill and decode) vs what the plan counts per sequence
  (KV blocks + state slot + token-id list), and the RSS since before the engine vs the plan's whole budget;
- step time against total cached tokens, with 1, 2, 4 and 8 sequences of 1M (1M, 2M, 4M, 8M cached): linear
  means ms per million cached tokens stays flat.

Run: ``nice -n 5 .venv/bin/python bench/bench_long_context.py`` (``--context 100000`` for a quick look).
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config import AttentionSpec, BlockSpec, MambaSpec, MlpSpec, ModelConfig  # noqa: E402
from engine.kv_fill import admit_filled  # noqa: E402
from engine.llm_engine import EngineConfig, LLMEngine  # noqa: E402
from engine.memory_budget import GIB, MIB, engine_shape, memory_budget, resolve_engine_config  # noqa: E402
from engine.planner import count_weights  # noqa: E402
from engine.sampling import SamplingParams  # noqa: E402


def toy_config() -> ModelConfig:
    mamba = MambaSpec(num_heads=4, head_dim=16, ssm_state_size=16, n_groups=1, conv_kernel=4, chunk_size=64)
    attn = AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=8)  # NoPE, like Nemotron-H
    blocks = [BlockSpec("mamba", mamba=mamba), BlockSpec("attention", attention=attn), BlockSpec("mlp", mlp=MlpSpec(128)),
              BlockSpec("mamba", mamba=mamba), BlockSpec("attention", attention=attn), BlockSpec("mlp", mlp=MlpSpec(128))]
    return ModelConfig(arch="nemotron_h", vocab_size=256, hidden_size=64, blocks=blocks, name="toy-hybrid",
                       max_position_embeddings=1 << 24)


def toy_model(config: ModelConfig, seed: int = 0):
    from engine.loader import LoadedModel
    from engine.models.hybrid import HybridLM
    torch.manual_seed(seed)
    model = HybridLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(torch.linspace(1, 8, p.numel())))
            elif name.endswith("dt_bias"):
                p.copy_(torch.log(torch.expm1(torch.full_like(p, 0.05))))
            elif name.endswith(".D") or "norm" in name:
                p.fill_(1.0)
            elif p.dim() >= 2:
                p.normal_(0, 1.0 / math.sqrt(p.shape[-1]))
            else:
                p.zero_()
    return LoadedModel(model=model.eval(), config=config, tokenizer=None, path=Path("toy-hybrid"))


def malloc_trim() -> None:
    """Hand the C allocator's free heap pages back (glibc keeps freed temporaries of the fill and of a step's
    first run: tens of MiB that are no live memory)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--context", type=int, default=1_000_000, help="cached tokens per sequence")
    ap.add_argument("--seqs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4, help="timed decode steps per phase")
    ap.add_argument("--kv-dtype", default="float32", help="float32: decode reads the pool in place (the model's dtype "
                    "on a CPU); bfloat16 / fp8 pools are read through fp32 copies of 8192-key blocks")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: a toy-width model's GEMMs gain nothing "
                    "from more, and an oversubscribed machine's OpenMP barriers cost tens of ms a step)")
    ap.add_argument("--out", default="", help="write the figures as JSON here")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(args.threads, os.cpu_count() or 1)))
    config = toy_config()
    loaded = toy_model(config)
    phases = [n for n in (1, 2, 4, 8, 16, 32) if n < args.seqs] + [args.seqs]
    max_tokens = 2 + len(phases) * (args.steps + 2)
    ec = EngineConfig(max_model_len=args.context + max_tokens, max_num_seqs=args.seqs, kv_dtype=args.kv_dtype,
                      n_snapshot_slots=0, speculative=False)

    # the plan: the same budget function the engine calls, weights counted from the config (fp32 on a CPU)
    shape = engine_shape(resolve_engine_config(ec, "cpu"), "cpu", 4)
    plan = memory_budget(config, count_weights(config).bytes("fp32", 4), shape)
    per_seq_plan = plan.per_context_bytes  # its KV blocks, its state slot, its token-id list (host memory on a CPU)
    kv_per_token = plan.kv_block_bytes / shape.block_size
    print(f"toy hybrid {config.pattern}: KV {kv_per_token:g} B/token; {args.seqs} x {args.context:,} tokens = "
          f"{args.seqs * args.context * kv_per_token / GIB:.2f} GiB of KV")
    print(f"plan (engine/memory_budget.py): " + ", ".join(f"{label} {n / MIB:.1f} MiB" for label, n in plan.lines()
                                                          if n) + f"; total {plan.used_bytes / GIB:.3f} GiB")

    base = rss_bytes()
    engine = LLMEngine(loaded, ec)
    assert engine.budget.allocated_bytes == plan.allocated_bytes, "the engine sized itself differently from the plan"
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    prompt = [1] * args.context  # (one list, referenced by every request until it is copied into its sequence)
    seqs, rows = [], []
    malloc_trim()
    before_fill = rss_bytes() - len(prompt) * 8
    for n in phases:
        new = [engine.add_request(prompt, params) for _ in range(n - len(seqs))]
        t0 = time.perf_counter()
        admit_filled(engine, new, seed=len(seqs))
        fill_s = time.perf_counter() - t0
        seqs += new
        engine.step()  # the new sequences' last prompt token (a one-token chunk) with the others' decodes
        times, cpu = [], []
        for _ in range(args.steps):
            t, c = time.perf_counter(), time.process_time()
            engine.step()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)  # CPU seconds: less sensitive to a loaded machine than wall time
        cached = sum(s.num_cached for s in seqs)
        gc.collect()
        raw = rss_bytes()
        malloc_trim()
        rss = rss_bytes()
        grown, planned = rss - before_fill, n * per_seq_plan
        med, med_cpu = sorted(times)[len(times) // 2], sorted(cpu)[len(cpu) // 2]
        rows.append(dict(seqs=n, cached_tokens=cached, step_s=med, step_cpu_s=med_cpu, steps_s=times, fill_s=fill_s, rss=rss,
                         rss_untrimmed=raw, rss_grown=grown, plan_filled=planned))
        print(f"{n} seqs, {cached / 1e6:6.3f} M cached: decode step {med * 1e3:8.1f} ms (median of {len(times)}; "
              f"{med * 1e3 / (cached / 1e6):6.2f} ms per M tokens; CPU {med_cpu * 1e3:7.1f} ms, "
              f"{med_cpu * 1e3 / (cached / 1e6):6.2f} per M); fill {fill_s:5.1f} s; RSS +{grown / GIB:.3f} GiB "
              f"vs plan {planned / GIB:.3f} GiB for {n} filled ({grown / planned:.3f}; before malloc_trim "
              f"+{(raw - before_fill) / GIB:.3f})", flush=True)
    final = rows[-1]
    ratio = final["rss_grown"] / final["plan_filled"]
    total_ratio = (final["rss"] - base) / (plan.used_bytes - plan.weights_bytes)
    per_m = [r["step_s"] / (r["cached_tokens"] / 1e6) for r in rows]
    per_m_cpu = [r["step_cpu_s"] / (r["cached_tokens"] / 1e6) for r in rows]
    lin, lin_cpu = per_m[-1] / per_m[0], per_m_cpu[-1] / per_m_cpu[0]
    print(f"RSS: the fill and decode added {final['rss_grown'] / GIB:.3f} GiB for {final['plan_filled'] / GIB:.3f} GiB "
          f"planned ({ratio:.3f}); since before the engine {(final['rss'] - base) / GIB:.3f} GiB vs the plan's "
          f"budget less weights {(plan.used_bytes - plan.weights_bytes) / GIB:.3f} GiB ({total_ratio:.3f}); process RSS "
          f"{final['rss'] / GIB:.2f} GiB")
    print(f"step time per M cached tokens: " + ", ".join(f"{r['cached_tokens'] / 1e6:.0f}M {p * 1e3:.2f} ms"
                                                         for r, p in zip(rows, per_m))
          + f"; {rows[-1]['cached_tokens'] / rows[0]['cached_tokens']:.0f}x the tokens took "
            f"{rows[-1]['step_s'] / rows[0]['step_s']:.2f}x the time (per-token ratio {lin:.2f}; CPU time "
            f"{rows[-1]['step_cpu_s'] / rows[0]['step_cpu_s']:.2f}x, per-token ratio {lin_cpu:.2f}; 1.00 = linear)")
    if args.out:
        Path(args.out).write_text(json.dumps(dict(plan_used=plan.used_bytes, plan_allocated=plan.allocated_bytes,
                                                  kv_per_token=kv_per_token, rows=rows), indent=1))
    return 0 if abs(ratio - 1) <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
