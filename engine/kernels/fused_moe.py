"""Fused MoE over NVFP4 experts: tokens sorted by expert, one grouped-GEMM launch per projection, the 4-bit
weights dequantized inside the kernel (H100 has no FP4 tensor cores: e2m1 x e4m3 block scale x global scale
-> the dot dtype in registers), relu² fused into the up projection and the routing weight into the down
projection. No host sync: the per-expert row layout is built on the device with a static upper bound.

Layout (engine/quant/nvfp4.py, ModelOpt): ``packed [E, out, in/2]`` uint8 (element 2j in the low nibble),
``block_scale [E, out, in/16]`` e4m3, ``global_scale [E]`` fp32. The kernel splits each K tile into its even
and odd elements (low / high nibbles), so the packed bytes are used as loaded, without interleaving.

``fused_moe_torch`` is the reference (the engine's per-expert loop on dequantized weights) the Triton path
must equal (tests/engine/kernels/test_fused_moe.py).
"""
from __future__ import annotations

from typing import Optional

import torch

from engine.kernels.decode_attention import _precision
from engine.quant.nvfp4 import BLOCK, Nvfp4Tensor


def stack_experts(parts: list[Nvfp4Tensor]) -> Nvfp4Tensor:
    """Per-expert NVFP4 tensors -> one stacked [E, out, in] tensor (global scales as [E])."""
    return Nvfp4Tensor(torch.stack([p.packed for p in parts]), torch.stack([p.block_scale for p in parts]),
                       torch.stack([p.global_scale.reshape(()) for p in parts]).float())


def fused_moe_torch(x: torch.Tensor, topk_idx: torch.Tensor, topk_w: torch.Tensor, up: Nvfp4Tensor,
                    down: Nvfp4Tensor) -> torch.Tensor:
    """x [T, D], topk_idx/topk_w [T, k], up [E, I, D], down [E, D, I] -> sum_k w * down(relu(up x)^2) [T, D] fp32."""
    out = torch.zeros(x.shape[0], down.shape[1], dtype=torch.float32, device=x.device)
    for e in topk_idx.unique().tolist():
        tok, slot = (topk_idx == e).nonzero(as_tuple=True)
        h = torch.relu(x[tok].float() @ up[e].dequantize().t()).square()
        out.index_add_(0, tok, (h @ down[e].dequantize().t()) * topk_w[tok, slot, None].float())
    return out


def align_by_expert(topk_idx: torch.Tensor, n_experts: int, block_m: int):
    """-> (row_ids [R] int32: index t*k+j of the routed pair at each padded row, or T*k for padding;
    block_expert [R / block_m] int32: the expert of each block of rows, -1 past the end). R is a static
    bound, so nothing waits on the host: the used experts need at most ceil(n / block_m) + min(E, n) blocks
    (each expert's last block is its only partial one), and at most n + E (block_m - 1) rows; the smaller of
    the two. At decode (8 tokens x top-12 over 512 experts, blocks of 16) that is 102 blocks, not 486: the
    kernel's programs for the rest exit at once (expert -1), but each is still a launch slot."""
    flat = topk_idx.reshape(-1).to(torch.int64)
    n = flat.numel()
    # not bincount: on CUDA it reads the max id back to size its output (a host sync, uncapturable in a graph)
    counts = torch.zeros(n_experts, dtype=torch.int64, device=flat.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    padded = (counts + block_m - 1) // block_m * block_m
    start = torch.cumsum(padded, 0) - padded  # padded start row of each expert
    first = torch.cumsum(counts, 0) - counts  # start of each expert in the sorted order
    order = torch.argsort(flat, stable=True)
    e_sorted = flat[order]
    rank = torch.arange(n, device=flat.device) - first[e_sorted]
    R = min(-(-(n + n_experts * (block_m - 1)) // block_m), -(-n // block_m) + min(n_experts, n)) * block_m
    row_ids = torch.full((R,), n, dtype=torch.int32, device=flat.device)
    row_ids[start[e_sorted] + rank] = order.to(torch.int32)
    ends = torch.cumsum(padded, 0)
    block_start = torch.arange(0, R, block_m, device=flat.device)
    block_expert = torch.searchsorted(ends, block_start, right=True).to(torch.int32)
    block_expert = torch.where(block_expert < n_experts, block_expert, torch.full_like(block_expert, -1))
    return row_ids, block_expert


_kernel = None


def _build():
    from engine.kernels.fused_moe_kernel import moe_nvfp4_gemm  # imports triton: only when the kernel runs
    return moe_nvfp4_gemm


def _tl_dtype(dt: torch.dtype):
    import triton.language as tl
    return {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}[dt]


def fused_moe_triton(x: torch.Tensor, topk_idx: torch.Tensor, topk_w: torch.Tensor, up: Nvfp4Tensor,
                     down: Nvfp4Tensor, dot_dtype: Optional[torch.dtype] = None, block_m: Optional[int] = None,
                     block_n: int = 64, block_k: int = 64) -> torch.Tensor:
    """Same contract as ``fused_moe_torch``; two launches (up + relu², down x routing weight) and a sum over k.
    ``block_m``: rows per tile (default 16 for decode-sized batches, 64 for prefill chunks)."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    T, D = x.shape
    k = topk_idx.shape[1]
    block_m = block_m or (16 if T * k <= 4 * up.packed.shape[0] else 64)
    E, inter = up.packed.shape[0], up.packed.shape[1]
    if D % BLOCK or inter % BLOCK:
        raise ValueError("NVFP4 dims must be multiples of 16")
    dot = _tl_dtype(dot_dtype or (x.dtype if x.dtype in (torch.float16, torch.bfloat16) else torch.float32))
    x = x.contiguous()
    row_ids, block_expert = align_by_expert(topk_idx, E, block_m)
    R = row_ids.numel()
    h = torch.empty(R, inter, dtype=torch.float32 if dot == _tl_dtype(torch.float32) else x.dtype, device=x.device)
    g_up, g_down = up.global_scale.reshape(E).float(), down.global_scale.reshape(E).float()
    _kernel[(R // block_m, -(-inter // block_n))](
        x, up.packed, up.block_scale, g_up, row_ids, block_expert, topk_w, h,
        T * k, inter, D, D, x.stride(0), up.packed.stride(0), up.packed.stride(1), up.block_scale.stride(0),
        up.block_scale.stride(1), h.stride(0), 0,
        TOPK=k, GATHER=True, RELU2=True, WEIGHTED=False, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
        DOT=dot, PREC=_precision(dot))
    y = torch.zeros(T * k, D, dtype=torch.float32, device=x.device)
    w = topk_w.reshape(-1).float().contiguous()
    _kernel[(R // block_m, -(-D // block_n))](
        h, down.packed, down.block_scale, g_down, row_ids, block_expert, w, y,
        T * k, D, inter, inter, h.stride(0), down.packed.stride(0), down.packed.stride(1),
        down.block_scale.stride(0), down.block_scale.stride(1), y.stride(0), 0,
        TOPK=k, GATHER=False, RELU2=False, WEIGHTED=True, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
        DOT=dot, PREC=_precision(dot))
    return y.view(T, k, D).sum(1)


def nvfp4_linear_torch(x: torch.Tensor, w: Nvfp4Tensor) -> torch.Tensor:
    return (x.float() @ w.dequantize().t()).to(x.dtype)


def split_k_for(programs: int, k_tiles: int, device) -> int:
    """Slices of K for a GEMM of ``programs`` output tiles: on CUDA enough to give the SMs two programs each
    (a decode GEMV of 18048 x 4096 has 1 x 282 tiles; of 4096 x 8192 only 1 x 64 for 132 SMs), each slice
    at least 4 K tiles; 1 elsewhere (the interpreter gains nothing)."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return 1
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    if programs >= sms:
        return 1
    return max(1, min(k_tiles // 4, -(-2 * sms // programs)))


def nvfp4_linear_triton(x: torch.Tensor, w: Nvfp4Tensor, dot_dtype: Optional[torch.dtype] = None,
                        block_m: Optional[int] = None, block_n: int = 64, block_k: int = 64,
                        split_k: Optional[int] = None) -> torch.Tensor:
    """A dense NVFP4 projection [T, in] -> [T, out] through the same kernel (one "expert", every row routed
    to it): the weight is dequantized in registers, never materialized. ``split_k`` slices K across programs
    (default ``split_k_for``: skinny decode GEMVs on a GPU), each writing an fp32 partial that one sum adds."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    shape = x.shape
    x = x.reshape(-1, shape[-1]).contiguous()
    T, K = x.shape
    N = w.packed.shape[0]
    block_m = block_m or (16 if T <= 16 else 64)  # a weight tile is dequantized once per row block
    dot = _tl_dtype(dot_dtype or (x.dtype if x.dtype in (torch.float16, torch.bfloat16) else torch.float32))
    R = -(-T // block_m) * block_m
    grid_mn = (R // block_m, -(-N // block_n))
    k_tiles = -(-K // block_k)
    split = split_k or split_k_for(grid_mn[0] * grid_mn[1], k_tiles, x.device)
    k_per = -(-k_tiles // max(1, min(split, k_tiles))) * block_k  # a whole number of K tiles per slice
    split = -(-K // k_per)
    rows = torch.arange(R, dtype=torch.int32, device=x.device)
    rows = torch.where(rows < T, rows, torch.full_like(rows, T))
    bexp = torch.zeros(R // block_m, dtype=torch.int32, device=x.device)
    y = torch.empty(split, T + 1, N, dtype=torch.float32, device=x.device)
    g = w.global_scale.reshape(1).float()
    _kernel[(*grid_mn, split)](
        x, w.packed, w.block_scale, g, rows, bexp, g, y, T, N, K, k_per, x.stride(0), 0, w.packed.stride(0), 0,
        w.block_scale.stride(0), y.stride(1), y.stride(0),
        TOPK=1, GATHER=True, RELU2=False, WEIGHTED=False, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
        DOT=dot, PREC=_precision(dot))
    out = y[0, :T] if split == 1 else y[:, :T].sum(0)
    return out.to(x.dtype).view(*shape[:-1], N)
