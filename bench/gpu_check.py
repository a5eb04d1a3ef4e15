"""One prepared GPU check (< 8 minutes on one H100/H200) that succeeds or names the cause: every kernel against
its torch reference at Puzzle-75B-A9B's real dimensions, Puzzle decode at 8 x 1M tokens sized by the engine's
own budget from the device, chunked prefill, Nemotron-3-Super dimensions. Exits non-zero on any failure.

    python bench/gpu_check.py                  # on a CUDA machine (imports the engine only: torch + triton)
    python bench/gpu_check.py --cap-gib 79.1   # size as an H100 on a larger card
    TRITON_INTERPRET=1 python bench/gpu_check.py --tiny   # every check at toy sizes on CPU (a test runs it)

1. seeded sampling on the device; every kernel against its torch reference (bench/gpu_kernels.py: fused
   NVFP4 MoE, NVFP4 GEMM, FP8 GEMM, SSD scan, prefill attention, decode attention, Mamba2 update), each
   with its max error, tolerance and (GPU) time and bytes/s.
2. Puzzle-75B-A9B at its real dimensions (the engine preset; checked against ../shared/reference when
   present): random NVFP4 weights made on the device; the contexts the engine's budget
   (engine/memory_budget.py, from torch.cuda.mem_get_info) fits, checked against the requested count; N
   sequences whose KV (fp8 + scales) and Mamba state are filled directly; decode steps as the engine runs
   them (engine/cuda_graphs.py: static buffers, one CUDA graph per padded batch size, sampling on the
   device, one copy to the host). Asserted: replayed and eager logits agree (``GRAPH_TOL`` of the largest
   logit) and are finite, prefill logits finite, step time <= ``TARGET`` x the bandwidth ideal (bytes a
   step must read / measured device copy bandwidth). Printed: step time replayed and eager, host time,
   tokens/s, peak memory.
3. prefill throughput of one sequence over a chunked prefill (64K tokens).
4. Nemotron-3-Super dimensions: 1 context.
On a CPU (--tiny) the same static-buffer step runs without capture, and the speed target is not asserted.
Helpers (model with random NVFP4 weights, bytes per step, bandwidth): bench/gpu_model.py.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from gpu_model import (GIB, build_model, check_against_reference, copy_bandwidth, log, step_bytes, sync,  # noqa: E402
                       timed, tiny_config)

from engine.config import ModelConfig  # noqa: E402



# -- 1. kernels ---------------------------------------------------------------------------------------------
def kernel_checks(device: str, tiny: bool) -> bool:
    """Seeded sampling on the device, then every kernel against its torch reference (bench/gpu_kernels.py)."""
    import os

    from gpu_kernels import kernel_checks as every_kernel

    from engine.kernels import triton_available
    from engine.sampling import SamplingParams, sample

    params = [SamplingParams(temperature=1.0, seed=5), SamplingParams(temperature=0.7, top_k=40, top_p=0.9, seed=6)]
    logits = torch.randn(2, 1000, generator=torch.Generator().manual_seed(0))
    a = sample(logits.to(device), params, [5, 6], [10, 10])
    b = sample(logits.to(device), params, [5, 6], [10, 10])
    same = a == sample(logits, params, [5, 6], [10, 10])
    log(f"seeded sampling on {device}: counter-based on the device, reproducible {a == b}, equal to cpu {same}")
    ok = a == b and same
    if not triton_available() or (device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1"):
        log("kernels: NOT CHECKED (no triton, or CPU without TRITON_INTERPRET=1)")
        return False
    failed = every_kernel(device, tiny)
    log(f"kernel checks: {'all ok' if not failed else 'FAILED: ' + '; '.join(failed)}")
    return ok and not failed


# -- 2. a model at real dimensions with random NVFP4 weights -----------------------------------------------
def replay_vs_eager(graphs, states, row) -> tuple[float, float, bool]:
    """The same one-sequence decode step replayed and run eagerly from the same Mamba state (its KV write is
    the same token at the same slot both times) -> (largest logits difference, largest |logit|, both finite)."""
    slot = row.state_slot
    saved = [(c[slot].clone(), s[slot].clone()) for c, s in zip(states.conv, states.ssm)]

    def restore():
        for (c, s), (c0, s0) in zip(zip(states.conv, states.ssm), saved):
            c[slot].copy_(c0)
            s[slot].copy_(s0)

    a = graphs.run([row], replay=True).clone()
    restore()
    b = graphs.run([row], replay=False)
    restore()
    finite = bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())
    return (a.float() - b.float()).abs().max().item(), b.float().abs().max().item(), finite


class _Row:
    """What a decode step reads of a running sequence, for a sequence whose tokens were never materialised."""

    def __init__(self, i: int, blocks: int, pos: int, vocab: int):
        self.block_table, self.state_slot, self.num_cached = list(range(i * blocks, (i + 1) * blocks)), i + 1, pos
        self.token_ids = {pos: (7 * i + 3) % vocab}


def engine_fit(label, config, model, device, dtype, n_seqs: int, context: int, cap_gib) -> int:
    """How many ``context``-token sequences the engine's own budget (engine/memory_budget.py, the figure
    ``lexicon plan`` prints) gives this model on this device now (CUDA: from torch.cuda.mem_get_info)."""
    from engine.llm_engine import EngineConfig, _weights_bytes
    from engine.memory_budget import engine_budget, resolve_engine_config
    try:
        ecfg = resolve_engine_config(EngineConfig(max_model_len=context, max_num_seqs=n_seqs, kv_dtype="fp8",
                                                  device=device, memory_gib=cap_gib), device)
        budget = engine_budget(config, _weights_bytes(model), ecfg, device, dtype.itemsize)
    except Exception as exc:  # noqa: BLE001 (the check goes on with the requested count and names why)
        log(f"[{label}] engine budget: {type(exc).__name__}: {exc}")
        return n_seqs
    fit = budget.num_kv_blocks // max(1, budget.blocks_per_seq)
    log(f"[{label}] engine budget ({budget.source}): {fit} of {n_seqs} contexts of {context:,} tokens, "
        f"KV pool {budget.kv_pool_bytes / GIB:.2f} GiB")
    return fit


GRAPH_TOL = 1e-3  # replayed vs eager logits, relative to the largest logit (the same kernels: ~0 expected)
TARGET = 3.0  # decode step time / bandwidth ideal


def run_model(label: str, config: ModelConfig, device: str, dtype, n_seqs: int, context: int, steps: int,
              prefill: int, chunk: int, kernels: str, budget_s: float, graphs_on: bool = True,
              cap_gib=None) -> list[str]:
    """-> the failed checks (empty: all held): graph vs eager, finite logits, contexts that fit, step / ideal."""
    from engine.forward_context import SeqSpan
    from engine.kernels import select_ops
    from engine.paged_context import KVPool, PagedContext
    from engine.memory_budget import kv_bytes_per_token, kv_scale_bytes_per_token, mamba_state_bytes
    from engine.cuda_graphs import DecodeGraphs
    from engine.model_runner import ModelRunner
    from engine.sampling import SamplingBatch, SamplingParams, sample_tokens
    from engine.state_pool import StatePool
    from engine.static_decode import StaticDecodeContext

    t0 = time.perf_counter()
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    model = build_model(config, device, dtype)
    ops = select_ops(device, kernels)
    model.use_ops(ops)
    sync(device)
    log(f"[{label}] built {len(config.blocks)} layers with random NVFP4 weights in {time.perf_counter() - t0:.1f} s"
        + (f"; {torch.cuda.memory_allocated() / GIB:.2f} GiB allocated" if cuda else "") + f"; kernels {ops.name}")
    bs, failed = 16, []
    fit = engine_fit(label, config, model, device, dtype, n_seqs, context, cap_gib)
    if fit < n_seqs:
        failed.append(f"{label}: only {fit} of {n_seqs} contexts fit")
        n_seqs = max(1, fit)
    attn = [b.attention for b in config.blocks if b.kind == "attention"]
    bps = -(-context // bs)
    kv = KVPool(len(attn), n_seqs * bps + 1, bs, attn[0].num_kv_heads, attn[0].head_dim, torch.float8_e4m3fn, device)
    for t in kv.k + kv.v:  # fill directly: positive e4m3 codes below 0x7F (no NaN), one exponent per block
        t.view(torch.uint8).random_(0, 0x7F)
    for s in kv.k_scale + kv.v_scale:
        s.fill_(-6)
    states = StatePool(n_seqs, model.mamba_state_shapes(), dtype, device)
    for c, s in zip(states.conv, states.ssm):
        c.normal_(0, 0.1)
        s.normal_(0, 0.1)
    scratch = n_seqs * bps  # the engine's extra KV block: padded decode rows write there
    ctx = PagedContext(kv, states, ops)
    rows = [_Row(i, bps, context - 1, config.vocab_size) for i in range(n_seqs)]
    tables, slots = [r.block_table for r in rows], [r.state_slot for r in rows]
    params = [SamplingParams()] * (n_seqs - 1) + [SamplingParams(temperature=0.8, top_k=50, seed=1)]
    sync(device)
    log(f"[{label}] {n_seqs} sequences x {context:,} tokens: KV {kv.nbytes / GIB:.2f} GiB (fp8 + scales), "
        f"Mamba state {sum(t.numel() * t.element_size() for t in states.conv + states.ssm) / GIB:.2f} GiB")
    tc = time.perf_counter()
    sctx = StaticDecodeContext(kv, states, ops, n_seqs, context, scratch)
    graphs = DecodeGraphs(model, sctx, n_seqs, capture=cuda and graphs_on)
    log(f"[{label}] decode graphs: captured sizes {graphs.captured or 'none'}"
        + (f" in {time.perf_counter() - tc:.1f} s" if graphs.captured else "")
        + (f" (capture failed: {graphs.capture_error})" if graphs.capture_error else "")
        + ("" if cuda else " (CPU: the static-buffer step runs eagerly)"))

    def step(replay: bool):
        """One engine decode step: rows into the static buffers, replay (or run eagerly), sample on the
        device, one copy of the ids to the host. -> host seconds spent before the device work was queued."""
        th = time.perf_counter()
        logits = graphs.run(rows, replay=replay)
        host = time.perf_counter() - th
        batch = SamplingBatch.prepare(params, [0] * n_seqs, [context] * n_seqs, logits.shape[-1], device)
        ModelRunner._to_host(sample_tokens(logits, batch))
        return host

    def measure(replay: bool) -> tuple[float, float, int]:
        step(replay)  # warm-up (Triton compiles)
        times, hosts = [], []
        for _ in range(steps):
            t1 = time.perf_counter()
            hosts.append(step(replay))
            times.append(time.perf_counter() - t1)
            if time.perf_counter() - t0 > budget_s:
                break
        return sorted(times)[len(times) // 2], min(hosts), len(times)

    if cuda and graphs_on and not graphs.captured:
        failed.append(f"{label}: CUDA graph capture failed ({graphs.capture_error})")
    diff, scale, finite = replay_vs_eager(graphs, states, rows[0])
    good = finite and diff <= GRAPH_TOL * max(1.0, scale)
    log(f"[{label}] graph vs eager step, one sequence: max |logits diff| {diff:.2e} (tol {GRAPH_TOL:g} x "
        f"{max(1.0, scale):.2f}), logits finite {finite}: {'ok' if good else 'FAIL'}")
    if not good:
        failed.append(f"{label}: graph vs eager logits")
    st, host, n = measure(replay=True)
    need = step_bytes(config, n_seqs, context, kv_bytes_per_token(config, "fp8") +
                      kv_scale_bytes_per_token(config, "fp8", bs), mamba_state_bytes(config, dtype.itemsize))
    bw = copy_bandwidth(device)
    ideal = need["total"] / bw if cuda else float("nan")
    peak = torch.cuda.max_memory_allocated() / GIB if cuda else float("nan")
    how = "CUDA graph replay" if graphs.captured else "static buffers, eager"
    log(f"[{label}] decode step ({how}, median of {n}): {st * 1e3:.1f} ms (host {host * 1e3:.2f} ms), "
        f"{n_seqs / st:.1f} tok/s; peak memory {peak:.2f} GiB")
    if graphs.captured:
        se, host_e, _ = measure(replay=False)
        log(f"[{label}] the same step eager: {se * 1e3:.1f} ms (host {host_e * 1e3:.2f} ms); eager / graph = "
            f"{se / st:.2f}x")
    log(f"[{label}] a step must read {need['total'] / 1e9:.1f} GB (weights {need['weights'] / 1e9:.1f}, KV "
        f"{need['kv'] / 1e9:.1f}, Mamba state r+w {need['state'] / 1e9:.1f}); copy bandwidth {bw / 1e12:.2f} TB/s "
        f"-> ideal {ideal * 1e3:.1f} ms; step / ideal = {st / ideal:.1f}x (target <= {TARGET:g}x"
        + (", not asserted off a GPU)" if not cuda else ": ok)" if st / ideal <= TARGET else ": MISSED)"))
    if cuda and not st / ideal <= TARGET:
        failed.append(f"{label}: step {st / ideal:.1f}x the bandwidth ideal (target {TARGET:g}x)")
    del graphs, sctx
    if prefill:
        done, t2 = 0, time.perf_counter()
        with torch.inference_mode():
            while done < prefill and time.perf_counter() - t0 < budget_s:
                n = min(chunk, prefill - done)
                ctx.prepare([SeqSpan(0, n, done)], [tables[0]], [slots[0]])
                h = model(torch.randint(0, config.vocab_size, (n,), device=device),
                          torch.arange(done, done + n, device=device), ctx)
                done += n
            last = model.compute_logits(h[-1:])
        sync(device)
        if not bool(torch.isfinite(last).all()):
            failed.append(f"{label}: prefill logits not finite")
        dt = time.perf_counter() - t2
        log(f"[{label}] chunked prefill: {done:,} of {prefill:,} tokens (chunks of {chunk}) in {dt:.1f} s = "
            f"{done / dt:.0f} tok/s" + ("" if done == prefill else " (stopped at the time budget)"))
    from engine.kernels.fallback import failures
    for name, cause in failures(ops).items():  # a kernel that could not be built ran as its torch reference
        failed.append(f"{label}: kernel {name} fell back to its reference ({cause})")
    del model, kv, states, ctx
    if cuda:
        torch.cuda.empty_cache()
    return failed


def _model_part(failed: list[str], label: str, *args, **kwargs) -> None:
    """run_model, its failures collected; an error (out of memory, a kernel that raised) is a failure named
    with its cause, and the next part still runs."""
    try:
        failed.extend(run_model(label, *args, **kwargs))
    except Exception as exc:  # noqa: BLE001
        import traceback
        from engine.kernels.fallback import summary
        log(f"[{label}] FAILED: {type(exc).__name__}: {summary(exc)}")
        log(traceback.format_exc(limit=4))
        failed.append(f"{label}: {type(exc).__name__}")
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="toy sizes on CPU (CI)")
    ap.add_argument("--seqs", type=int, default=8)
    ap.add_argument("--context", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--prefill", type=int, default=65536)
    ap.add_argument("--chunk", type=int, default=2048, help="prefill chunk (the engine's CUDA default)")
    ap.add_argument("--kernels", default="auto", help="auto | default | torch | triton")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: kernels,puzzle,super")
    ap.add_argument("--no-graphs", action="store_true", help="decode eagerly (no CUDA graph capture)")
    ap.add_argument("--cap-gib", type=float, default=None,
                    help="use at most this much device memory (e.g. 79.1: an H100's on a larger card); "
                         "default: the device's own, from torch.cuda.mem_get_info")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    start = time.perf_counter()
    failed: list[str] = []
    if args.tiny:
        import os
        device, dtype = "cpu", torch.float32
        kernels = "triton" if os.environ.get("TRITON_INTERPRET") == "1" and args.kernels == "auto" else args.kernels
        kernels = "default" if kernels == "auto" else kernels
        if "kernels" not in skip and not kernel_checks(device, True):
            failed.append("kernels")
        torch.manual_seed(0)
        if "puzzle" not in skip:
            _model_part(failed, "tiny puzzle", tiny_config(), device, dtype, 2, 256, 2, 64, 32, kernels, 900)
        return _finish(failed, start, "gpu_check --tiny")
    if not torch.cuda.is_available():
        log("no CUDA device: run with --tiny for the CPU toy check")
        return 2
    device, dtype = "cuda", torch.bfloat16
    props = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info()
    if args.cap_gib and total > args.cap_gib * GIB:
        torch.cuda.set_per_process_memory_fraction(args.cap_gib * GIB / total)
    log(f"device {props.name}, {props.multi_processor_count} SMs, {total / GIB:.1f} GiB ({free / GIB:.1f} free)"
        + (f", capped at {args.cap_gib:g} GiB" if args.cap_gib else "") + f"; torch {torch.__version__}")
    if "kernels" not in skip and not kernel_checks(device, False):
        failed.append("kernels")
    from engine.presets import get_preset
    if "puzzle" not in skip:
        cfg = get_preset("puzzle")
        check_against_reference(cfg)
        _model_part(failed, "puzzle-75b-a9b", cfg, device, dtype, args.seqs, args.context, args.steps, args.prefill,
                    args.chunk, args.kernels, 300, not args.no_graphs, cap_gib=args.cap_gib)
    if "super" not in skip and time.perf_counter() - start < 360:
        _model_part(failed, "nemotron-3-super", get_preset("super"), device, dtype, 1, args.context, 3, 0,
                    args.chunk, args.kernels, 100, not args.no_graphs, cap_gib=args.cap_gib)
    return _finish(failed, start, "gpu_check")


def _finish(failed: list[str], start: float, name: str) -> int:
    log(f"{name} done in {time.perf_counter() - start:.1f} s: " + ("ok" if not failed else "FAIL: " + "; ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
