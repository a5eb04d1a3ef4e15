"""Micro-benchmark of torch's CPU GEMM kinds on SmolLM2-135M's projection shapes (issue #14).

For each (K, N) of the model and each row count M, times every kind against fp32 oneDNN (what the engine ran
before) in the same process, interleaved, and prints the median time, the ratio to fp32 oneDNN and the max
error against an fp32 GEMM on the same (group-quantized) weight. Run: ``python bench/bench_cpu_quant_gemm.py``
(``BENCH_M=1,8,512`` picks the row counts, ``BENCH_KINDS=fp32,int4`` the kinds).
"""
from __future__ import annotations

import os
import statistics
import time
import warnings

import torch

warnings.filterwarnings("ignore")
SHAPES = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]  # (K, N): q/o, k/v, gate/up, down, head
GROUP = 32


def q4_weight(n: int, k: int, g: int = GROUP):
    """A Q4_1-like weight: per group of g along K an fp16 scale d and min m, codes 0..15; w = d*q + m."""
    w = torch.randn(n, k) * 0.05
    wg = w.view(n, k // g, g)
    lo, hi = wg.amin(-1, keepdim=True), wg.amax(-1, keepdim=True)
    d = ((hi - lo) / 15).half().float().clamp(min=1e-8)
    m = lo.half().float()
    q = ((wg - m) / d).round().clamp(0, 15)
    return (q * d + m).view(n, k), q.view(n, k).to(torch.int32), d.view(n, -1), m.view(n, -1)


def kinds(w, q, d, m):
    n, k = w.shape
    out = {}
    pk = torch.ops.mkldnn._reorder_linear_weight(w, None)
    out["fp32"] = (torch.float32, lambda x: torch.ops.mkldnn._linear_pointwise(x, pk, None, "none", [], ""))
    wb = w.bfloat16()
    pkb = torch.ops.mkldnn._reorder_linear_weight(wb, None)
    out["bf16"] = (torch.bfloat16, lambda x: torch.ops.mkldnn._linear_pointwise(x, pkb, None, "none", [], ""))
    p16, z = torch.fbgemm_pack_gemm_matrix_fp16(w), torch.zeros(n)
    out["fp16"] = (torch.float32, lambda x: torch.fbgemm_linear_fp16_weight(x, p16, z))
    packed4 = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
    # tinygemm convention: w = (q - 8) * scale + zero  ->  zero = m + 8 d
    for dt, name in ((torch.float32, "int4"), (torch.bfloat16, "int4-bf16"), (torch.float16, "int4-fp16")):
        sz = torch.stack([d.t(), (m + 8 * d).t()], dim=-1).to(dt).contiguous()  # [K/g, N, 2]
        out[name] = (dt, lambda x, sz=sz: torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed4, GROUP, sz))
    s8 = w.abs().amax(1) / 127
    w8 = (w / s8[:, None]).round().clamp(-127, 127).to(torch.int8)
    for dt, name in ((torch.float32, "int8"), (torch.bfloat16, "int8-bf16")):
        s = s8.to(dt)
        out[name] = (dt, lambda x, s=s: torch.ops.aten._weight_int8pack_mm(x, w8, s))
    qw = torch.quantize_per_channel(w, s8.double(), torch.zeros(n, dtype=torch.long), 0, torch.qint8)
    pdyn = torch.ops.quantized.linear_prepack(qw, None)
    out["dyn-int8"] = (torch.float32, lambda x: torch.ops.quantized.linear_dynamic(x, pdyn, True))
    return out


def bench(fn, x, reps: int) -> float:
    fn(x)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(x)
        ts.append(time.perf_counter() - t)
    return min(ts)  # the least disturbed run: the machine is shared (medians of rounds are taken below)


def main() -> None:
    ms = [int(v) for v in os.environ.get("BENCH_M", "1,4,8,512").split(",")]
    only = os.environ.get("BENCH_KINDS")
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, capability "
          f"{torch.backends.cpu.get_cpu_capability()}; times are min-of-reps medians over 3 rounds, ratio = fp32 oneDNN time / kind time")
    for k, n in SHAPES:
        w, q, d, m = q4_weight(n, k)
        ks = kinds(w, q, d, m)
        if only:
            ks = {name: v for name, v in ks.items() if name in only.split(",") or name == "fp32"}
        for mm in ms:
            x = torch.randn(mm, k)
            ref = x @ w.t()
            reps = max(5, min(400, int(1e9 / (mm * k * n + 1e6))))
            times = {name: [] for name in ks}
            for _ in range(3):  # interleave the kinds
                for name, (dt, fn) in ks.items():
                    times[name].append(bench(fn, x.to(dt), reps))
            base = statistics.median(times["fp32"])
            row = []
            for name, (dt, fn) in ks.items():
                t = statistics.median(times[name])
                err = (fn(x.to(dt)).float() - ref).abs().max().item() / ref.abs().max().item()
                row.append(f"{name} {t * 1e6:7.0f}us {base / t:4.2f}x e{err:.0e}")
            print(f"K={k:5d} N={n:5d} M={mm:3d} | " + " | ".join(row), flush=True)


if __name__ == "__main__":
    main()
