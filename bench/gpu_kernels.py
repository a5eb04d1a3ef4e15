"""Kernel checks of bench/gpu_check.py: every Triton kernel the engine runs against its torch reference, at
Puzzle-75B-A9B's real dimensions on a GPU (``tiny=False``) or at toy sizes through Triton's interpreter on a
CPU (``tiny=True``, CI). Each check prints its max error relative to the reference's largest magnitude, its
tolerance, ok / FAIL, and (on a GPU) the kernel's time, the reference's, and the bytes/s it reached.

Tolerances: half-precision dots (bf16 on a GPU, fp16 in the interpreter, whose bf16 dot is wrong) 2e-2 of the
largest output (NVFP4 weights dequantize exactly into bf16's 8 bits, the error is the activations' rounding
and the order of fp32 sums); fp32 dots (``input_precision="ieee"``) 1e-3; the Mamba update (fp32 state) 1e-3
absolute. A kernel that raises, or returns a non-finite value, fails its check with the cause.
"""
from __future__ import annotations

import time
import traceback

import torch
from gpu_model import log, random_nvfp4, sync

HALF_TOL, FP32_TOL = 2e-2, 1e-3


def _secs(fn, device) -> float:
    if torch.device(device).type == "cuda":
        from triton.testing import do_bench
        return do_bench(fn, warmup=5, rep=30) / 1e3
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


class Checks:
    def __init__(self, device: str, tiny: bool):
        self.device, self.tiny = device, tiny
        self.cuda = torch.device(device).type == "cuda"
        self.half = torch.bfloat16 if self.cuda else torch.float16
        self.g = torch.Generator(device=device).manual_seed(0)
        self.failed: list[str] = []

    def randn(self, *shape, scale: float = 1.0, dtype=torch.float32):
        return (torch.randn(*shape, device=self.device, generator=self.g) * scale).to(dtype)

    def compare(self, label: str, kernel, reference, tol: float, nbytes: float = 0.0, relative: bool = True):
        """Run both, compare, time (GPU). A kernel error is a failed check, reported with its cause."""
        try:
            got = kernel()
            want = reference()
            got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
            errs = []
            for a, b in zip(got, want):
                d = (a.float() - b.float()).abs().max().item()
                errs.append(d / max(b.float().abs().max().item(), 1e-6) if relative else d)
            err = max(errs)
            finite = all(bool(torch.isfinite(a.float()).all()) for a in got)
            good = err <= tol and finite
        except Exception as exc:  # a kernel that does not build or run here: the check names the cause
            from engine.kernels.fallback import summary
            log(f"{label}: FAIL ({type(exc).__name__}: {summary(exc)})")
            log(traceback.format_exc(limit=3))
            self.failed.append(label)
            return
        speed = ""
        if self.cuda:
            tk, tr = _secs(kernel, self.device), _secs(reference, self.device)
            speed = f"; {tk * 1e3:.3f} ms vs reference {tr * 1e3:.3f} ms ({tr / tk:.1f}x)"
            if nbytes:
                speed += f", {nbytes / tk / 1e9:.0f} GB/s"
        log(f"{label}: max {'rel ' if relative else ''}err {err:.2e} (tol {tol:g}){'' if finite else ' NOT FINITE'} "
            f"{'ok' if good else 'FAIL'}{speed}")
        if not good:
            self.failed.append(label)

    def tol(self, dot) -> float:
        return FP32_TOL if dot == torch.float32 else HALF_TOL


def fused_moe(c: Checks) -> None:
    from engine.kernels.fused_moe import fused_moe_torch, fused_moe_triton
    E, D = (16, 64) if c.tiny else (512, 1024)
    for inter, k in ([(32, 2)] if c.tiny else [(2688, 12), (1280, 4)]):
        up, down = random_nvfp4((E, inter, D), c.device, c.g), random_nvfp4((E, D, inter), c.device, c.g)
        for T in ((3, 20) if c.tiny else (8, 2048)):
            x = c.randn(T, D, dtype=c.half)
            idx = torch.rand(T, E, device=c.device, generator=c.g).topk(k, dim=-1).indices
            w = torch.rand(T, k, device=c.device, generator=c.g)
            used = idx.unique().numel() * (up.nbytes + down.nbytes) / E
            c.compare(f"fused NVFP4 MoE E={E} D={D} I={inter} top-{k} T={T}",
                      lambda: fused_moe_triton(x, idx, w, up, down), lambda: fused_moe_torch(x.float(), idx, w, up, down),
                      HALF_TOL, used)


def nvfp4_gemm(c: Checks) -> None:
    from engine.kernels.fused_moe import nvfp4_linear_torch, nvfp4_linear_triton
    shapes = [(48, 64, 3), (48, 224, 1)] if c.tiny else [
        (18048, 4096, 8), (4096, 8192, 8), (4608, 4096, 8), (1024, 4096, 8), (5376, 4096, 8), (4096, 5376, 8),
        (18048, 4096, 2048)]
    for N, K, T in shapes:
        w = random_nvfp4((N, K), c.device, c.g)
        x = c.randn(T, K, dtype=c.half)
        c.compare(f"NVFP4 GEMM {N}x{K} T={T}", lambda: nvfp4_linear_triton(x, w),
                  lambda: nvfp4_linear_torch(x.float(), w), HALF_TOL, w.nbytes)


def fp8_gemm(c: Checks) -> None:
    from engine.kernels.fp8_linear import fp8_linear_torch, fp8_linear_triton
    from engine.quant.fp8 import quantize_fp8
    for N, K, T in ([(48, 200, 2)] if c.tiny else [(4096, 8192, 8), (18048, 4096, 2048)]):
        w = quantize_fp8(c.randn(N, K, scale=K ** -0.5), block=128)
        x = c.randn(T, K, dtype=c.half)
        c.compare(f"FP8 GEMM (128x128 scales) {N}x{K} T={T}", lambda: fp8_linear_triton(x, w),
                  lambda: fp8_linear_torch(x.float(), w), HALF_TOL, w.nbytes)


def ssd_scan(c: Checks) -> None:
    from engine.kernels.ssd_scan import ssd_chunk_scan_triton
    from engine.ops.ssd import ssd_chunk_scan
    L, H, P, G, N, Q = (40, 4, 16, 2, 12, 16) if c.tiny else (4096, 128, 64, 8, 96, 128)
    x = c.randn(L, H, P)
    dt = torch.nn.functional.softplus(c.randn(L, H) - 3)
    A = -torch.linspace(0.5, 8, H, device=c.device)
    B, C = c.randn(L, G, N), c.randn(L, G, N)
    s0 = c.randn(H, P, N, scale=0.1)
    c.compare(f"SSD chunked scan (fp32 dots, ieee) L={L} H={H} P={P} G={G} N={N} chunk {Q}",
              lambda: ssd_chunk_scan_triton(x, dt, A, B, C, Q, s0), lambda: ssd_chunk_scan(x, dt, A, B, C, Q, s0),
              FP32_TOL)


def _fp8_pool(c: Checks, KV: int, D: int, slots: int, bs: int):
    from engine import kv_quant
    kc = torch.empty(KV, slots, D, dtype=kv_quant.FP8, device=c.device)
    vc = torch.empty_like(kc)
    ks, vs = kv_quant.new_scales(KV, slots // bs, c.device), kv_quant.new_scales(KV, slots // bs, c.device)
    idx = torch.arange(slots, device=c.device)
    kv_quant.write_fp8(kc, ks, idx, c.randn(slots, KV, D), bs)
    kv_quant.write_fp8(vc, vs, idx, c.randn(slots, KV, D), bs)
    return kc, vc, ks, vs


def prefill_attention(c: Checks) -> None:
    from engine.kernels.prefill_attention import paged_prefill_attention_torch, paged_prefill_attention_triton
    H, KV, D, bs = (4, 2, 16, 16) if c.tiny else (32, 2, 128, 16)
    pasts, news = ([0, 40], [37, 9]) if c.tiny else ([0, 3000], [2048, 512])
    need = [-(-(p + n) // bs) for p, n in zip(pasts, news)]
    kc, vc, ks, vs = _fp8_pool(c, KV, D, sum(need) * bs, bs)
    bt = torch.zeros(len(need), max(need), dtype=torch.int32, device=c.device)
    o = 0
    for i, n in enumerate(need):
        bt[i, :n] = torch.arange(o, o + n, dtype=torch.int32, device=c.device)
        o += n
    q = c.randn(sum(news), H, D, dtype=c.half)
    starts = [sum(news[:i]) for i in range(len(news))]
    args = (kc, vc, bt, starts, news, pasts, D ** -0.5, bs, ks, vs)
    c.compare(f"prefill attention fp8 KV H={H}/{KV} D={D} pasts {pasts} new {news}",
              lambda: paged_prefill_attention_triton(q, *args), lambda: paged_prefill_attention_torch(q, *args),
              HALF_TOL)


def decode_attention(c: Checks) -> None:
    from engine.kernels.decode_attention import paged_decode_attention_torch, paged_decode_attention_triton
    B, H, KV, D, L, bs = (2, 4, 2, 16, 70, 16) if c.tiny else (8, 32, 2, 128, 32768, 16)
    nblk = B * (-(-L // bs))
    table = torch.arange(nblk, device=c.device, dtype=torch.int32).view(B, -1)
    lens = torch.full((B,), L, dtype=torch.int32, device=c.device)
    q = c.randn(B, H, D, dtype=c.half)
    kc, vc, ks, vs = _fp8_pool(c, KV, D, nblk * bs, bs)
    c.compare(f"decode attention fp8 KV B={B} H={H}/{KV} D={D} L={L}",
              lambda: paged_decode_attention_triton(q, kc, vc, table, lens, D ** -0.5, bs, ks, vs, max_len=L),
              lambda: paged_decode_attention_torch(q, kc, vc, table, lens, D ** -0.5, bs, ks, vs), HALF_TOL,
              2 * kc.numel())
    kh, vh = c.randn(KV, nblk * bs, D, dtype=c.half), c.randn(KV, nblk * bs, D, dtype=c.half)
    c.compare(f"decode attention {str(c.half).split('.')[-1]} KV B={B} H={H}/{KV} D={D} L={L}",
              lambda: paged_decode_attention_triton(q, kh, vh, table, lens, D ** -0.5, bs, max_len=L),
              lambda: paged_decode_attention_torch(q, kh, vh, table, lens, D ** -0.5, bs), HALF_TOL,
              2 * kh.numel() * kh.element_size())


def mamba_step(c: Checks) -> None:
    from engine.kernels.mamba_step import mamba_multi_step_torch, mamba_multi_step_triton
    b, H, P, G, N = (2, 4, 8, 2, 12) if c.tiny else (8, 128, 64, 8, 96)
    for T in (1, 4):
        state = c.randn(b + 2, H, P, N)
        slots = torch.arange(1, b + 1, device=c.device, dtype=torch.int32)
        x, dt = c.randn(b, T, H, P), torch.rand(b, T, H, device=c.device, generator=c.g) * 0.1
        A = -torch.rand(H, device=c.device, generator=c.g) * 4
        Bm, Cm = c.randn(b, T, G, N), c.randn(b, T, G, N)

        def run(fn):
            s = state.clone()
            ck = torch.empty(b, T, H, P, N, device=c.device)
            y = fn(s, slots, x, dt, A, Bm, Cm, None, None, ck)
            return y, s, ck
        c.compare(f"Mamba2 decode update T={T} b={b} H={H} P={P} N={N} (y, state, checkpoints)",
                  lambda: run(mamba_multi_step_triton), lambda: run(mamba_multi_step_torch), 1e-3,
                  2 * b * H * P * N * 4, relative=False)


ALL = (fused_moe, nvfp4_gemm, fp8_gemm, ssd_scan, prefill_attention, decode_attention, mamba_step)


def kernel_checks(device: str, tiny: bool) -> list[str]:
    """Every check; -> the labels of the failed ones (empty: all passed)."""
    c = Checks(device, tiny)
    for check in ALL:
        check(c)
        sync(device)
        if c.cuda:
            torch.cuda.empty_cache()
    return c.failed
