"""One prepared GPU check (< 8 minutes on one H100/H200): kernels, Puzzle-75B-A9B decode at 8 x 1M tokens,
64K chunked prefill, Nemotron-3-Super dimensions. Prints ratios (kernel vs torch reference, decode step vs the
bandwidth ideal).

    python bench/gpu_check.py            # on a CUDA machine (imports the engine only: torch + triton)
    python bench/gpu_check.py --tiny     # toy sizes on CPU (a test runs it, so the script cannot rot)

1. kernel checks on the device: paged decode attention (bf16 / fp8 + scales) and the Mamba2 multi-token
   update against their torch references (max error, speed ratio); seeded sampling and FP8 KV on the device.
2. Puzzle-75B-A9B at its real dimensions (the engine preset; checked against ../shared/reference when
   present): random NVFP4 weights made on the device, N sequences whose KV (fp8 + scales) and Mamba state
   are filled directly, decode steps as the engine runs them (engine/cuda_graphs.py: static buffers, one
   CUDA graph per padded batch size, sampling on the device, one copy to the host): step time replayed and
   eager, host time, tokens/s, peak memory, and the ratio to the bandwidth ideal (bytes a step must read /
   measured device copy bandwidth).
3. prefill throughput of one sequence over a chunked prefill (64K tokens).
4. Nemotron-3-Super dimensions: 1 context.
Memory is capped at 80 GiB on larger cards. On a CPU (--tiny) the same static-buffer step runs without capture.
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

CAP_GIB = 80.0


# -- 1. kernels ---------------------------------------------------------------------------------------------
def kernel_checks(device: str, tiny: bool) -> bool:
    import os

    from engine import kv_quant
    from engine.kernels import triton_available
    from engine.kernels.decode_attention import paged_decode_attention_torch, paged_decode_attention_triton
    from engine.kernels.mamba_step import mamba_multi_step_torch, mamba_multi_step_triton
    from engine.sampling import SamplingParams, sample

    ok = True
    params = [SamplingParams(temperature=1.0, seed=5), SamplingParams(temperature=0.7, top_k=40, top_p=0.9, seed=6)]
    logits = torch.randn(2, 1000, generator=torch.Generator().manual_seed(0))
    a = sample(logits.to(device), params, [5, 6], [10, 10])
    b = sample(logits.to(device), params, [5, 6], [10, 10])
    same = a == sample(logits, params, [5, 6], [10, 10])
    log(f"seeded sampling on {device}: counter-based on the device, reproducible {a == b}, equal to cpu {same}")
    ok &= a == b and same
    if not triton_available() or (device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1"):
        log("kernels: skipped (no triton, or CPU without TRITON_INTERPRET=1)")
        return ok
    B, H, KV, D, L = (2, 4, 2, 16, 70) if tiny else (8, 32, 2, 128, 32768)
    bs = 16
    g = torch.Generator(device=device).manual_seed(0)
    nblk = B * (-(-L // bs))
    table = torch.arange(nblk, device=device, dtype=torch.int32).view(B, -1)
    lens = torch.full((B,), L, dtype=torch.int32, device=device)
    k = torch.randn(nblk * bs, KV, D, device=device, generator=g)
    v = torch.randn(nblk * bs, KV, D, device=device, generator=g)
    q = torch.randn(B, H, D, device=device, generator=g)
    half = torch.float16 if device == "cpu" else torch.bfloat16  # the interpreter's bf16 dot is wrong
    for store in ("half", "fp8"):
        if store == "fp8":
            kc = torch.empty(KV, nblk * bs, D, dtype=kv_quant.FP8, device=device)
            vc = torch.empty_like(kc)
            ks, vs = kv_quant.new_scales(KV, nblk, device), kv_quant.new_scales(KV, nblk, device)
            slots = torch.arange(nblk * bs, device=device)
            kv_quant.write_fp8(kc, ks, slots, k, bs)
            kv_quant.write_fp8(vc, vs, slots, v, bs)
        else:
            kc, vc = k.transpose(0, 1).contiguous().to(half), v.transpose(0, 1).contiguous().to(half)
            ks = vs = None
        qh = q.to(half)
        t_ref, want = timed(lambda: paged_decode_attention_torch(qh, kc, vc, table, lens, D ** -0.5, bs, ks, vs),
                            device, 1)
        t_k, got = timed(lambda: paged_decode_attention_triton(qh, kc, vc, table, lens, D ** -0.5, bs, ks, vs,
                                                               max_len=L), device, 1 if tiny else 5)
        err = (got.float() - want.float()).abs().max().item()
        good = err < 3e-2
        ok &= good
        log(f"kernel decode attention {store:4s} B={B} H={H}/{KV} D={D} L={L}: max err {err:.2e} "
            f"{'ok' if good else 'FAIL'}; {t_k * 1e3:.3f} ms vs torch reference {t_ref * 1e3:.3f} ms "
            f"({t_ref / t_k:.1f}x); KV bytes/s {2 * kc.numel() * kc.element_size() / t_k / 1e9:.1f} GB/s")
    b, H2, P, G, N = (2, 4, 8, 2, 12) if tiny else (8, 128, 64, 8, 96)
    for T in (1, 4):
        state = torch.randn(b + 2, H2, P, N, device=device, generator=g)
        slots = torch.arange(1, b + 1, device=device, dtype=torch.int32)
        x = torch.randn(b, T, H2, P, device=device, generator=g)
        dt = torch.rand(b, T, H2, device=device, generator=g) * 0.1
        A = -torch.rand(H2, device=device, generator=g) * 4
        Bm = torch.randn(b, T, G, N, device=device, generator=g)
        Cm = torch.randn(b, T, G, N, device=device, generator=g)
        ck_ref = torch.empty(b, T, H2, P, N, device=device)
        ck = torch.empty_like(ck_ref)
        s_ref, s_k = state.clone(), state.clone()
        want = mamba_multi_step_torch(s_ref, slots, x, dt, A, Bm, Cm, None, None, ck_ref)
        got = mamba_multi_step_triton(s_k, slots, x, dt, A, Bm, Cm, None, None, ck)
        err = max((got - want).abs().max().item(), (s_k - s_ref).abs().max().item(), (ck - ck_ref).abs().max().item())
        t_ref, _ = timed(lambda: mamba_multi_step_torch(state.clone(), slots, x, dt, A, Bm, Cm), device, 1)
        t_k, _ = timed(lambda: mamba_multi_step_triton(state, slots, x, dt, A, Bm, Cm), device, 1 if tiny else 5)
        good = err < 1e-3
        ok &= good
        log(f"kernel mamba step T={T} b={b} H={H2} P={P} N={N}: max err {err:.2e} {'ok' if good else 'FAIL'}; "
            f"{t_k * 1e3:.3f} ms vs torch reference {t_ref * 1e3:.3f} ms ({t_ref / t_k:.1f}x)")
    return ok


# -- 2. a model at real dimensions with random NVFP4 weights -----------------------------------------------
def replay_vs_eager(graphs, states, row) -> float:
    """The same one-sequence decode step replayed and run eagerly from the same Mamba state (its KV write is
    the same token at the same slot both times) -> the largest logits difference."""
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
    return (a.float() - b.float()).abs().max().item()


class _Row:
    """What a decode step reads of a running sequence, for a sequence whose tokens were never materialised."""

    def __init__(self, i: int, blocks: int, pos: int, vocab: int):
        self.block_table, self.state_slot, self.num_cached = list(range(i * blocks, (i + 1) * blocks)), i + 1, pos
        self.token_ids = {pos: (7 * i + 3) % vocab}


def run_model(label: str, config: ModelConfig, device: str, dtype, n_seqs: int, context: int, steps: int,
              prefill: int, chunk: int, kernels: str, budget_s: float, graphs_on: bool = True) -> None:
    from engine.forward_context import SeqSpan
    from engine.kernels import select_ops
    from engine.paged_context import KVPool, PagedContext
    from engine.planner import kv_bytes_per_token, kv_scale_bytes_per_token, mamba_state_bytes
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
    bs = 16
    from engine.llm_engine import _weights_bytes
    from engine.planner import size_pools
    try:  # what the engine's own sizing (the planner's sum) gives on this device for this model
        cap = int(CAP_GIB * GIB * 0.95) if cuda else None
        pools = size_pools(config, cap, _weights_bytes(model), "fp8", context, n_seqs, chunk, bs, 0,
                           dtype.itemsize, device=device, memory_fraction=0.95)
        log(f"[{label}] engine pools ({pools.source}): {pools.contexts:.2f} contexts of {context:,} tokens "
            f"(exact fit {pools.budget.exact_contexts(context):.3f}), KV {pools.kv_bytes / GIB:.2f} GiB")
    except ValueError as exc:
        log(f"[{label}] engine pools: {exc}")
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

    diff = replay_vs_eager(graphs, states, rows[0])
    log(f"[{label}] graph vs eager step, one sequence: max |logits diff| {diff:.2e}")
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
        f"-> ideal {ideal * 1e3:.1f} ms; step / ideal = {st / ideal:.1f}x (target <= 3x)")
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
            model.compute_logits(h[-1:])
        sync(device)
        dt = time.perf_counter() - t2
        log(f"[{label}] chunked prefill: {done:,} of {prefill:,} tokens (chunks of {chunk}) in {dt:.1f} s = "
            f"{done / dt:.0f} tok/s" + ("" if done == prefill else " (stopped at the time budget)"))
    del model, kv, states, ctx
    if cuda:
        torch.cuda.empty_cache()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="toy sizes on CPU (CI)")
    ap.add_argument("--seqs", type=int, default=8)
    ap.add_argument("--context", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--prefill", type=int, default=65536)
    ap.add_argument("--chunk", type=int, default=8192)
    ap.add_argument("--kernels", default="auto", help="auto | default | torch | triton")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: kernels,puzzle,super")
    ap.add_argument("--no-graphs", action="store_true", help="decode eagerly (no CUDA graph capture)")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    start = time.perf_counter()
    if args.tiny:
        import os
        device, dtype = "cpu", torch.float32
        kernels = "triton" if os.environ.get("TRITON_INTERPRET") == "1" and args.kernels == "auto" else args.kernels
        kernels = "default" if kernels == "auto" else kernels
        ok = kernel_checks(device, True) if "kernels" not in skip else True
        torch.manual_seed(0)
        run_model("tiny puzzle", tiny_config(), device, dtype, 2, 256, 2, 64, 32, kernels, 900)
        log(f"gpu_check --tiny done in {time.perf_counter() - start:.1f} s: {'ok' if ok else 'FAIL'}")
        return 0 if ok else 1
    if not torch.cuda.is_available():
        log("no CUDA device: run with --tiny for the CPU toy check")
        return 2
    device, dtype = "cuda", torch.bfloat16
    props = torch.cuda.get_device_properties(0)
    total = props.total_memory
    if total > CAP_GIB * GIB:
        torch.cuda.set_per_process_memory_fraction(CAP_GIB * GIB / total)
    log(f"device {props.name}, {total / GIB:.1f} GiB (capped at {min(total / GIB, CAP_GIB):.1f} GiB), "
        f"torch {torch.__version__}")
    ok = kernel_checks(device, False) if "kernels" not in skip else True
    from engine.presets import get_preset
    if "puzzle" not in skip:
        cfg = get_preset("puzzle")
        check_against_reference(cfg)
        try:
            run_model("puzzle-75b-a9b", cfg, device, dtype, args.seqs, args.context, args.steps, args.prefill,
                      args.chunk, args.kernels, 300, not args.no_graphs)
        except torch.cuda.OutOfMemoryError as exc:
            log(f"[puzzle-75b-a9b] OUT OF MEMORY with {args.seqs} sequences: {str(exc).splitlines()[0]}")
            ok = False
            torch.cuda.empty_cache()
    if "super" not in skip and time.perf_counter() - start < 360:
        try:
            run_model("nemotron-3-super", get_preset("super"), device, dtype, 1, args.context, 3, 0,
                      args.chunk, args.kernels, 100, not args.no_graphs)
        except torch.cuda.OutOfMemoryError as exc:
            log(f"[nemotron-3-super] OUT OF MEMORY: {str(exc).splitlines()[0]}")
            ok = False
    log(f"gpu_check done in {time.perf_counter() - start:.0f} s: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
