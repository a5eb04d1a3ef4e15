"""FP8 (e4m3) weight projection with the weight dequantized inside the kernel: [T, in] x W[out, in] -> [T, out].

The engine's fallback for an ``Fp8Tensor`` weight dequantizes the whole matrix to the activation dtype on
every call (engine/layers/linear.py), i.e. writes and re-reads 2-4x the weight's bytes per projection and
step. Here each program reads its [BLOCK_N, BLOCK_K] tile of e4m3 bytes once, decodes them in registers
(sign, 4-bit exponent with bias 7, 3-bit mantissa, subnormals; no fp8 loads, so the Triton interpreter runs
it too), multiplies by the tile's scale and accumulates in fp32. Scales: one per tensor, per output row, or
per (b_out x b_in) block (DeepSeek / Nemotron ``weight_scale_inv``), all read through (row, column) strides
of a [rows, cols] scale grid. Split-K as in engine/kernels/fused_moe.py for skinny decode GEMVs.

``fp8_linear_torch`` is the reference (dequantize, then a matmul in fp32).
"""
from __future__ import annotations

from typing import Optional

import torch

from engine.quant.fp8 import Fp8Tensor

_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def fp8_linear_kernel(X, W, S, Y, T, N, K, K_PER_SPLIT, stride_xm, stride_wn, stride_sr, stride_sc,
                          stride_ym, stride_ys, SB_N, SB_K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          DOT: tl.constexpr, PREC: tl.constexpr):
        m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        k_lo = tl.program_id(2) * K_PER_SPLIT
        mmask, nmask = m < T, n < N
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for kk in range(0, K_PER_SPLIT, BLOCK_K):
            k = k_lo + kk + tl.arange(0, BLOCK_K)
            kmask = k < K
            x = tl.load(X + m[:, None].to(tl.int64) * stride_xm + k[None, :], mask=mmask[:, None] & kmask[None, :],
                        other=0.0)
            b = tl.load(W + n[:, None].to(tl.int64) * stride_wn + k[None, :], mask=nmask[:, None] & kmask[None, :],
                        other=0).to(tl.int32)
            e = (b >> 3) & 15
            mant = (b & 7).to(tl.float32)
            mag = tl.where(e == 0, mant * 0.001953125, (mant + 8.0) * tl.exp2((e - 10).to(tl.float32)))
            w = tl.where((b & 128) != 0, -mag, mag)
            s = tl.load(S + (n // SB_N)[:, None] * stride_sr + (k // SB_K)[None, :] * stride_sc,
                        mask=nmask[:, None] & kmask[None, :], other=0.0)
            acc += tl.dot(x.to(DOT), tl.trans((w * s).to(DOT)), out_dtype=tl.float32, input_precision=PREC)
        tl.store(Y + tl.program_id(2).to(tl.int64) * stride_ys + m[:, None].to(tl.int64) * stride_ym + n[None, :],
                 acc, mask=mmask[:, None] & nmask[None, :])

    return fp8_linear_kernel


def _scale_grid(w: Fp8Tensor) -> tuple[torch.Tensor, int, int, int, int]:
    """(scales as a 2-D fp32 grid, its row / column strides, rows / columns of W per scale)."""
    out, inp = w.data.shape
    s = w.scale.float()
    if w.block is not None:
        return s, s.stride(0), s.stride(1), w.block[0], w.block[1]
    if s.numel() == 1:  # per tensor
        return s.reshape(1, 1), 0, 0, out, inp
    s = s.reshape(out, 1)  # per output row
    return s, s.stride(0), 0, 1, inp


def fp8_linear_torch(x: torch.Tensor, w: Fp8Tensor) -> torch.Tensor:
    return (x.float() @ w.dequantize().t()).to(x.dtype)


def fp8_linear_triton(x: torch.Tensor, w: Fp8Tensor, dot_dtype: Optional[torch.dtype] = None,
                      block_m: Optional[int] = None, block_n: int = 64, block_k: int = 64,
                      split_k: Optional[int] = None) -> torch.Tensor:
    """Same contract as ``fp8_linear_torch`` (x [..., in] -> [..., out] in x's dtype)."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    from engine.kernels.decode_attention import _precision
    from engine.kernels.fused_moe import _tl_dtype, split_k_for
    if w.data.dim() != 2:
        raise ValueError(f"fp8_linear takes a 2-D weight, got {tuple(w.data.shape)}")
    shape = x.shape
    x = x.reshape(-1, shape[-1]).contiguous()
    T, K = x.shape
    N = w.data.shape[0]
    block_m = block_m or (16 if T <= 16 else 64)
    dot = _tl_dtype(dot_dtype or (x.dtype if x.dtype in (torch.float16, torch.bfloat16) else torch.float32))
    grid_mn = (-(-T // block_m), -(-N // block_n))
    k_tiles = -(-K // block_k)
    split = split_k or split_k_for(grid_mn[0] * grid_mn[1], k_tiles, x.device)
    k_per = -(-k_tiles // max(1, min(split, k_tiles))) * block_k
    split = -(-K // k_per)
    s, sr, sc, sb_n, sb_k = _scale_grid(w)
    y = torch.empty(split, T, N, dtype=torch.float32, device=x.device)
    _kernel[(*grid_mn, split)](x, w.data.view(torch.uint8), s, y, T, N, K, k_per, x.stride(0),
                               w.data.stride(0), sr, sc, y.stride(1), y.stride(0), sb_n, sb_k,
                               BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, DOT=dot, PREC=_precision(dot))
    out = y[0] if split == 1 else y.sum(0)
    return out.to(x.dtype).view(*shape[:-1], N)
