"""One prepared GPU check (< 8 minutes on one H100/H200): kernels, Puzzle-75B-A9B decode at 8 x 1M tokens,
64K chunked prefill, Nemotron-3-Super dimensions. Prints ratios (kernel vs torch reference, decode step vs the
bandwidth ideal).

    python bench/gpu_check.py            # on a CUDA machine (imports the engine only: torch + triton)
    python bench/gpu_check.py --tiny     # toy sizes on CPU (a test runs it, so the script cannot rot)

1. kernel checks on the device: paged decode attention (bf16 / fp8 + scales) and the Mamba2 multi-token
   update against their torch references (max error, speed ratio); seeded sampling and FP8 KV on the device.
2. Puzzle-75B-A9B at its real dimensions (the engine preset; checked against ../shared/reference when
   present): random NVFP4 weights made on the device, N sequences whose KV (fp8 + scales) and Mamba state
   are filled directly, decode steps: host metadata time, step time, tokens/s, peak memory, and the ratio to
   the bandwidth ideal (bytes a step must read / measured device copy bandwidth).
3. prefill throughput of one sequence over a chunked prefill (64K tokens).
4. Nemotron-3-Super dimensions: 1 context.
No CUDA graphs yet: the step is eager (see the printed host time). Memory is capped at 80 GiB on larger cards.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from engine.config import AttentionSpec, BlockSpec, MambaSpec, ModelConfig, MoeSpec  # noqa: E402

GIB = 1024 ** 3
CAP_GIB = 80.0


def log(*a) -> None:
    print(*a, flush=True)


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, repeat: int = 3) -> tuple[float, object]:
    out = fn()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    sync(device)
    return (time.perf_counter() - t0) / repeat, out


# -- 1. kernels ---------------------------------------------------------------------------------------------
def kernel_checks(device: str, tiny: bool) -> bool:
    import os

    from engine import kv_quant
    from engine.kernels import triton_available
    from engine.kernels.decode_attention import paged_decode_attention_torch, paged_decode_attention_triton
    from engine.kernels.mamba_step import mamba_multi_step_torch, mamba_multi_step_triton
    from engine.sampling import SamplingParams, sample
    from engine.sequence import Sequence

    ok = True
    seq = Sequence([1], SamplingParams(temperature=1.0, seed=5))
    logits = torch.randn(1, 1000, device=device)
    a = sample(logits, [seq.params], [seq.generator_for(logits.device)])
    b = sample(logits, [seq.params], [Sequence([1], seq.params).generator_for(logits.device)])
    log(f"seeded sampling on {device}: generator on {seq.generator.device}, reproducible {a == b}")
    ok &= a == b
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
def random_nvfp4(shape: tuple[int, ...], device, g):
    """Packed e2m1 bytes (no NaN pattern exists in e2m1), unit e4m3 block scales, a global scale that keeps
    outputs near unit scale: rms(e2m1) ~ 2.9."""
    from engine.quant.nvfp4 import BLOCK, Nvfp4Tensor

    *lead, out, inp = shape
    packed = torch.randint(0, 256, (*lead, out, inp // 2), dtype=torch.uint8, device=device, generator=g)
    scale = torch.ones(*lead, out, inp // BLOCK, device=device).to(torch.float8_e4m3fn)
    glob = torch.full((*lead, 1, 1) if lead else (), 1.0 / (2.9 * math.sqrt(inp)), device=device)
    return Nvfp4Tensor(packed, scale, glob)


def build_model(config: ModelConfig, device, dtype, seed: int = 0):
    from torch import nn

    from engine.layers.linear import Linear
    from engine.layers.moe import Experts
    from engine.models.hybrid import HybridLM

    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device("meta"):
        model = HybridLM(config)
    for name, module in model.named_modules():
        if isinstance(module, Linear) and name != "lm_head":
            module.set_weight([random_nvfp4((module.out_features, module.in_features), device, g)], dtype, device)
        elif isinstance(module, Experts):
            E, inter, dim = module.up.shape
            for attr, shape in (("up", (E, inter, dim)), ("down", (E, dim, inter))):
                stacked = random_nvfp4(shape, device, g)
                setattr(module, f"compressed_{attr}", [stacked[e] for e in range(E)])
                setattr(module, attr, nn.Parameter(torch.empty(E, 0, 0, dtype=dtype, device=device),
                                                   requires_grad=False))
    H = config.hidden_size
    for name, p in list(model.named_parameters()):
        if not p.is_meta:
            continue
        mod_name, attr = name.rsplit(".", 1)
        module = model.get_submodule(mod_name)
        if attr == "A_log":
            t = torch.log(torch.linspace(1, 16, p.numel(), device=device))
        elif attr == "dt_bias":
            t = torch.full(p.shape, math.log(math.expm1(0.01)), device=device)
        elif attr == "D" or "norm" in name:
            t = torch.ones(p.shape, device=device)
        elif p.dim() >= 2:
            t = torch.randn(p.shape, device=device, generator=g) / math.sqrt(p.shape[-1])
        else:
            t = torch.zeros(p.shape, device=device)
        fp32 = attr in ("router_weight", "e_score_correction_bias", "A_log", "dt_bias", "D")
        setattr(module, attr, nn.Parameter(t.to(torch.float32 if fp32 else dtype), requires_grad=False))
    if model.lm_head is not None:
        model.lm_head.set_weight([torch.randn(config.vocab_size, H, device=device, generator=g) / math.sqrt(H)],
                                 dtype, device)
    model.share_rotaries(device)
    return model.eval()


def check_against_reference(config: ModelConfig) -> None:
    ref = ROOT.parent / "shared" / "reference" / "puzzle-75b-a9b-block-configs.json"
    if not ref.exists():
        log(f"(no {ref}: the preset's per-layer values are used unchecked)")
        return
    blocks = json.loads(ref.read_text())
    same = len(blocks) == len(config.blocks) and all(
        b["block_type"] == s.kind and (s.kind != "moe" or (b["moe_intermediate_size"], b["num_experts_per_tok"])
                                       == (s.moe.moe_intermediate_size, s.moe.num_experts_per_tok))
        for b, s in zip(blocks, config.blocks))
    log(f"preset vs {ref.name}: {len(blocks)} layers, per-layer kinds/widths/top-k {'equal' if same else 'DIFFER'}")


def step_bytes(config: ModelConfig, n_seqs: int, context: int, kv_per_token: float, mamba_bytes: int) -> dict:
    """Bytes one decode step must move at least: active weights (expected distinct experts for n_seqs random
    tokens), the whole KV of every sequence, Mamba state read + written, the LM head."""
    from engine.planner import WEIGHT_BYTES
    q = WEIGHT_BYTES["nvfp4"]
    H, w = config.hidden_size, 0.0
    for b in config.blocks:
        if b.kind == "mamba":
            m = b.mamba
            w += (H * (m.d_inner + m.conv_dim + m.num_heads) + m.d_inner * H) * q
        elif b.kind == "attention":
            a = b.attention
            w += (H * (a.num_heads + 2 * a.num_kv_heads) * a.head_dim + a.num_heads * a.head_dim * H) * q
        elif b.kind == "moe":
            e = b.moe
            d = e.latent_size or H
            experts = e.n_routed_experts * (1 - (1 - e.num_experts_per_tok / e.n_routed_experts) ** n_seqs)
            w += (experts * 2 * d * e.moe_intermediate_size + 2 * H * e.shared_intermediate_size
                  + (2 * H * e.latent_size if e.latent_size else 0)) * q + e.n_routed_experts * H * 4
    w += config.vocab_size * H * 2
    kv = n_seqs * context * kv_per_token
    state = 2 * n_seqs * mamba_bytes
    return {"weights": w, "kv": kv, "state": state, "total": w + kv + state}


def copy_bandwidth(device) -> float:
    if torch.device(device).type != "cuda":
        return float("nan")
    x = torch.empty(1 * GIB // 2, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    t, _ = timed(lambda: y.copy_(x), device, 5)
    del x, y
    return 2 * (GIB // 2) / t


def run_model(label: str, config: ModelConfig, device: str, dtype, n_seqs: int, context: int, steps: int,
              prefill: int, chunk: int, kernels: str, budget_s: float) -> None:
    from engine.forward_context import SeqSpan
    from engine.kernels import select_ops
    from engine.paged_context import KVPool, PagedContext
    from engine.planner import kv_bytes_per_token, kv_scale_bytes_per_token, mamba_state_bytes
    from engine.sampling import SamplingParams, sample
    from engine.sequence import Sequence
    from engine.state_pool import StatePool

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
    kv = KVPool(len(attn), n_seqs * bps, bs, attn[0].num_kv_heads, attn[0].head_dim, torch.float8_e4m3fn, device)
    for t in kv.k + kv.v:  # fill directly: positive e4m3 codes below 0x7F (no NaN), one exponent per block
        t.view(torch.uint8).random_(0, 0x7F)
    for s in kv.k_scale + kv.v_scale:
        s.fill_(-6)
    states = StatePool(n_seqs, model.mamba_state_shapes(), dtype, device)
    for c, s in zip(states.conv, states.ssm):
        c.normal_(0, 0.1)
        s.normal_(0, 0.1)
    ctx = PagedContext(kv, states, ops)
    tables = [list(range(i * bps, (i + 1) * bps)) for i in range(n_seqs)]
    slots = list(range(1, n_seqs + 1))
    seeded = Sequence([1], SamplingParams(temperature=0.8, top_k=50, seed=1))
    ids = torch.randint(0, config.vocab_size, (n_seqs,), device=device)
    pos = torch.full((n_seqs,), context - 1, device=device)
    sync(device)
    log(f"[{label}] {n_seqs} sequences x {context:,} tokens: KV {kv.nbytes / GIB:.2f} GiB (fp8 + scales), "
        f"Mamba state {sum(t.numel() * t.element_size() for t in states.conv + states.ssm) / GIB:.2f} GiB")

    def step():
        th = time.perf_counter()
        ctx.prepare([SeqSpan(i, 1, context - 1) for i in range(n_seqs)], tables, slots)
        host = time.perf_counter() - th
        with torch.inference_mode():
            hidden = model(ids, pos, ctx)
            logits = model.compute_logits(hidden)
        params = [SamplingParams()] * (n_seqs - 1) + [seeded.params]
        gens = [None] * (n_seqs - 1) + [seeded.generator_for(logits.device)]
        return host, sample(logits, params, gens)

    step()  # warm-up (Triton compiles)
    sync(device)
    times, hosts = [], []
    for _ in range(steps):
        t1 = time.perf_counter()
        host, _ = step()
        sync(device)
        times.append(time.perf_counter() - t1)
        hosts.append(host)
        if time.perf_counter() - t0 > budget_s:
            break
    st = sorted(times)[len(times) // 2]
    need = step_bytes(config, n_seqs, context, kv_bytes_per_token(config, "fp8") +
                      kv_scale_bytes_per_token(config, "fp8", bs), mamba_state_bytes(config, dtype.itemsize))
    bw = copy_bandwidth(device)
    ideal = need["total"] / bw if cuda else float("nan")
    peak = torch.cuda.max_memory_allocated() / GIB if cuda else float("nan")
    log(f"[{label}] decode step (median of {len(times)}): {st * 1e3:.1f} ms (host metadata {min(hosts) * 1e3:.1f} ms), "
        f"{n_seqs / st:.1f} tok/s; peak memory {peak:.2f} GiB")
    log(f"[{label}] a step must read {need['total'] / 1e9:.1f} GB (weights {need['weights'] / 1e9:.1f}, KV "
        f"{need['kv'] / 1e9:.1f}, Mamba state r+w {need['state'] / 1e9:.1f}); copy bandwidth {bw / 1e12:.2f} TB/s "
        f"-> ideal {ideal * 1e3:.1f} ms; step / ideal = {st / ideal:.1f}x (target <= 3x)")
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


def tiny_config() -> ModelConfig:
    mamba = MambaSpec(num_heads=4, head_dim=16, ssm_state_size=12, n_groups=2, chunk_size=16)
    attn = AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=16)
    blocks = []
    for i, ch in enumerate("MEM*EMEM*E"):
        if ch == "M":
            blocks.append(BlockSpec("mamba", mamba=mamba))
        elif ch == "*":
            blocks.append(BlockSpec("attention", attention=attn))
        else:
            blocks.append(BlockSpec("moe", moe=MoeSpec(16, 2 + i % 3, 32, 64, latent_size=32, routed_scaling_factor=5.0)))
    return ModelConfig(arch="nemotron_h_puzzle", vocab_size=256, hidden_size=64, blocks=blocks, name="tiny-puzzle")


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
                      args.chunk, args.kernels, 300)
        except torch.cuda.OutOfMemoryError as exc:
            log(f"[puzzle-75b-a9b] OUT OF MEMORY with {args.seqs} sequences: {str(exc).splitlines()[0]}")
            ok = False
            torch.cuda.empty_cache()
    if "super" not in skip and time.perf_counter() - start < 360:
        try:
            run_model("nemotron-3-super", get_preset("super"), device, dtype, 1, args.context, 3, 0,
                      args.chunk, args.kernels, 100)
        except torch.cuda.OutOfMemoryError as exc:
            log(f"[nemotron-3-super] OUT OF MEMORY: {str(exc).splitlines()[0]}")
            ok = False
    log(f"gpu_check done in {time.perf_counter() - start:.0f} s: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
