"""Fused NVFP4 MoE (Triton: tokens sorted by expert, grouped GEMMs, 4-bit weights dequantized in the kernel,
relu² and routing weights fused) equals the engine's per-expert loop on dequantized weights, and the
device-side row layout puts every routed pair in its expert's block."""
from __future__ import annotations

import pytest
import torch

from engine.kernels.fused_moe import align_by_expert, fused_moe_torch, fused_moe_triton, stack_experts
from engine.layers.moe import Experts
from engine.quant.nvfp4 import quantize_nvfp4
from kernel_env import DEVICE, DOT_DTYPES, FP32_DOT_TOL


def make_experts(E, inter, dim, seed=0):
    g = torch.Generator().manual_seed(seed)
    ups = [quantize_nvfp4(torch.randn(inter, dim, generator=g) / dim ** 0.5) for _ in range(E)]
    downs = [quantize_nvfp4(torch.randn(dim, inter, generator=g) / inter ** 0.5) for _ in range(E)]
    return ups, downs


def test_rows_are_grouped_by_expert_in_padded_blocks():
    idx = torch.tensor([[3, 0], [3, 1], [0, 3], [2, 3]])
    rows, bexp = align_by_expert(idx, 4, 4)
    flat = idx.reshape(-1)
    for b, e in enumerate(bexp.tolist()):
        blk = rows[b * 4:(b + 1) * 4]
        real = blk[blk < flat.numel()]
        if e < 0:
            assert real.numel() == 0
        else:
            assert (flat[real.long()] == e).all()
    assert sorted(rows[rows < flat.numel()].tolist()) == list(range(flat.numel()))


def test_reference_equals_the_engine_expert_loop():
    E, inter, dim, T, k = 6, 32, 48, 9, 3
    ups, downs = make_experts(E, inter, dim)
    experts = Experts(E, dim, inter)
    experts.compressed_up, experts.compressed_down = ups, downs
    g = torch.Generator().manual_seed(1)
    x = torch.randn(T, dim, generator=g)
    idx = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)])
    w = torch.rand(T, k, generator=g)
    want = experts(x, idx, w)
    got = fused_moe_torch(x, idx, w, stack_experts(ups), stack_experts(downs))
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dot", DOT_DTYPES)
@pytest.mark.parametrize("E,inter,dim,T,k", [(8, 32, 64, 5, 2), (6, 48, 32, 11, 3)])
def test_triton_equals_reference(E, inter, dim, T, k, dot):
    ups, downs = make_experts(E, inter, dim, seed=T)
    up, down = stack_experts(ups), stack_experts(downs)
    g = torch.Generator().manual_seed(T)
    x = torch.randn(T, dim, generator=g)
    idx = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)])
    w = torch.rand(T, k, generator=g)
    want = fused_moe_torch(x, idx, w, up, down)
    mv = lambda t: t.to(DEVICE)  # noqa: E731
    upd = type(up)(mv(up.packed), mv(up.block_scale), mv(up.global_scale))
    downd = type(down)(mv(down.packed), mv(down.block_scale), mv(down.global_scale))
    xin = mv(x).to(dot if dot != torch.float32 else torch.float32)
    got = fused_moe_triton(xin, mv(idx), mv(w), upd, downd, dot_dtype=dot, block_n=16, block_k=32)
    if dot == torch.float32:  # prefill-sized row tiles
        big = fused_moe_triton(xin, mv(idx), mv(w), upd, downd, dot_dtype=dot, block_m=64, block_n=16, block_k=32)
        torch.testing.assert_close(big.cpu(), want, atol=FP32_DOT_TOL, rtol=FP32_DOT_TOL)
    tol = FP32_DOT_TOL if dot == torch.float32 else 3e-2
    torch.testing.assert_close(got.cpu(), want, atol=tol, rtol=tol)


@pytest.mark.parametrize("dot", DOT_DTYPES)
@pytest.mark.parametrize("T,out,inp", [(1, 48, 64), (19, 80, 32)])
def test_dense_nvfp4_linear_equals_dequantized_linear(T, out, inp, dot):
    from engine.kernels.fused_moe import nvfp4_linear_torch, nvfp4_linear_triton

    g = torch.Generator().manual_seed(T)
    w = quantize_nvfp4(torch.randn(out, inp, generator=g))
    x = torch.randn(T, inp, generator=g)
    want = nvfp4_linear_torch(x, w)
    torch.testing.assert_close(want, x @ w.dequantize().t())
    wd = type(w)(w.packed.to(DEVICE), w.block_scale.to(DEVICE), w.global_scale.to(DEVICE))
    xin = x.to(DEVICE).to(dot)
    got = nvfp4_linear_triton(xin, wd, dot_dtype=dot, block_n=16, block_k=32)
    tol = FP32_DOT_TOL if dot == torch.float32 else 3e-2
    torch.testing.assert_close(got.float().cpu(), want, atol=tol * 4, rtol=tol)


@pytest.mark.parametrize("split_k", [1, 2, 3, 7])
def test_split_k_gemv_equals_the_unsplit_one(split_k):
    """Split-K (the skinny decode GEMV): K sliced across programs, fp32 partials summed; 3 slices of a
    7-tile K leave a short last slice, 7 slices one tile each."""
    from engine.kernels.fused_moe import nvfp4_linear_torch, nvfp4_linear_triton

    g = torch.Generator().manual_seed(split_k)
    w = quantize_nvfp4(torch.randn(48, 224, generator=g))
    x = torch.randn(2, 224, generator=g)
    wd = type(w)(w.packed.to(DEVICE), w.block_scale.to(DEVICE), w.global_scale.to(DEVICE))
    got = nvfp4_linear_triton(x.to(DEVICE), wd, dot_dtype=torch.float32, block_n=16, block_k=32, split_k=split_k)
    torch.testing.assert_close(got.cpu(), nvfp4_linear_torch(x, w), atol=FP32_DOT_TOL * 4, rtol=FP32_DOT_TOL)


def test_split_k_is_chosen_for_skinny_gemvs_on_a_gpu_only():
    from engine.kernels.fused_moe import split_k_for

    assert split_k_for(64, 128, "cpu") == 1
    if torch.cuda.is_available():
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        assert split_k_for(64, 128, "cuda") >= 2 * sms // 64  # 4096 x 8192: 64 tiles -> split
        assert split_k_for(4 * sms, 128, "cuda") == 1


@pytest.mark.parametrize("T,k,E,bm", [(8, 12, 512, 16), (1, 4, 512, 16), (2048, 12, 512, 64), (3, 2, 4, 4)])
def test_padded_layout_is_bounded_by_the_used_experts(T, k, E, bm):
    """At most ceil(T*k / bm) + min(E, T*k) blocks (not T*k + E*(bm-1) rows): the blocks past the used ones
    are marked -1, and every routed pair still has a row in its expert's block."""
    idx = torch.rand(T, E, generator=torch.Generator().manual_seed(T)).topk(k, dim=-1).indices
    rows, bexp = align_by_expert(idx, E, bm)
    n = T * k
    assert bexp.numel() == min(-(-(n + E * (bm - 1)) // bm), -(-n // bm) + min(E, n))
    used = int((bexp >= 0).sum())
    counts = torch.bincount(idx.reshape(-1), minlength=E)
    assert used == int(((counts + bm - 1) // bm).sum())
    assert sorted(rows[rows < n].tolist()) == list(range(n))
    flat = idx.reshape(-1)
    for b in range(bexp.numel()):
        real = rows[b * bm:(b + 1) * bm]
        real = real[real < n]
        assert (flat[real.long()] == bexp[b]).all()
