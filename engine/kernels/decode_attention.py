"""Paged decode attention: one query token per sequence over its paged K/V, every sequence of the batch
and every kv head in ONE launch per layer (flash-decoding: the key range is also split, so a handful of
1M-token sequences still fills the GPU; a second step merges the splits by their log-sum-exp).

Pool layout (engine/paged_context.py): K and V ``[n_kv, num_blocks * block_size, head_dim]``, head-major;
FP8 pools carry int8 power-of-two exponents ``[n_kv, num_blocks]`` per (block, kv head) (engine/kv_quant.py),
applied to the scores (K) and to the probabilities (V), so fp8 values enter the dot as they are.
GQA: the ``group = n_heads / n_kv`` query heads of a kv head are the rows of one tile (padded to 16 for
``tl.dot``), so each K/V tile is read once per kv head.

``paged_decode_attention_torch`` is the reference the Triton kernel must equal (tests/engine/kernels).
"""
from __future__ import annotations

import math
from typing import Optional

import torch


def paged_decode_attention_torch(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                                 block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                                 block_size: int, k_scale: Optional[torch.Tensor] = None,
                                 v_scale: Optional[torch.Tensor] = None, max_len: Optional[int] = None
                                 ) -> torch.Tensor:
    """q [B, H, D]; caches [KV, S, D]; block_tables [B, max_blocks] int; seq_lens [B] (keys incl. this token)
    -> [B, H, D] in q's dtype. Plain fp32 softmax per sequence over its gathered (dequantized) keys."""
    B, H, D = q.shape
    KV = k_cache.shape[0]
    out = torch.empty_like(q)
    for b in range(B):
        n = int(seq_lens[b])
        pos = torch.arange(n, device=q.device)
        blk = block_tables[b, pos // block_size].long()
        slots = blk * block_size + pos % block_size
        k = k_cache.index_select(1, slots).float()  # [KV, n, D]
        v = v_cache.index_select(1, slots).float()
        if k_scale is not None:
            k = k * torch.exp2(k_scale.index_select(1, blk).float())[..., None]
            v = v * torch.exp2(v_scale.index_select(1, blk).float())[..., None]
        qh = q[b].float().view(KV, H // KV, D)
        p = torch.softmax(torch.einsum("kgd,knd->kgn", qh, k) * scale, dim=-1)
        out[b] = torch.einsum("kgn,knd->kgd", p, v).reshape(H, D).to(q.dtype)
    return out


def num_splits_for(max_len: int, batch: int, n_kv: int, block_n: int, target_programs: int,
                   min_split: int = 256) -> tuple[int, int]:
    """-> (splits, split_len): enough programs to fill the device, splits no shorter than ``min_split`` keys."""
    want = max(1, -(-target_programs // max(1, batch * n_kv)))
    split_len = max(min_split, -(-max_len // want))
    split_len = -(-split_len // block_n) * block_n
    return -(-max_len // split_len), split_len


_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def paged_decode_kernel(Q, K, V, KS, VS, BT, LENS, O, LSE,
                            stride_qb, stride_qh, stride_kh, stride_ks, stride_sh, stride_bt,
                            stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
                            sm_scale, split_len,
                            GROUP: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr,
                            BLOCK_SIZE: tl.constexpr, BLOCK_N: tl.constexpr, HAS_SCALE: tl.constexpr,
                            DOT: tl.constexpr, PREC: tl.constexpr):
        b = tl.program_id(0)
        kvh = tl.program_id(1)
        sp = tl.program_id(2)
        seq_len = tl.load(LENS + b)
        start = sp * split_len
        end = tl.minimum(seq_len, start + split_len)
        g = tl.arange(0, BLOCK_G)
        d = tl.arange(0, D)
        gmask = g < GROUP
        heads = kvh * GROUP + g
        q = tl.load(Q + b * stride_qb + heads[:, None] * stride_qh + d[None, :], mask=gmask[:, None], other=0.0)
        q = (q.to(tl.float32) * sm_scale).to(DOT)
        m = tl.full([BLOCK_G], float("-inf"), tl.float32)
        l_sum = tl.zeros([BLOCK_G], tl.float32)
        acc = tl.zeros([BLOCK_G, D], tl.float32)
        for n0 in range(start, end, BLOCK_N):
            pos = n0 + tl.arange(0, BLOCK_N)
            pmask = pos < end
            blk = tl.load(BT + b * stride_bt + pos // BLOCK_SIZE, mask=pmask, other=0)
            slot = blk.to(tl.int64) * BLOCK_SIZE + pos % BLOCK_SIZE
            kv_off = kvh * stride_kh + slot[:, None] * stride_ks + d[None, :]
            k = tl.load(K + kv_off, mask=pmask[:, None], other=0.0)
            v = tl.load(V + kv_off, mask=pmask[:, None], other=0.0)
            s = tl.dot(q, tl.trans(k.to(DOT)), out_dtype=tl.float32, input_precision=PREC)  # [G, N]
            if HAS_SCALE:
                ke = tl.load(KS + kvh * stride_sh + blk, mask=pmask, other=0).to(tl.float32)
                s = s * tl.exp2(ke)[None, :]
            s = tl.where(pmask[None, :], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            p = tl.exp(s - m_new[:, None])
            alpha = tl.exp(m - m_new)
            l_sum = l_sum * alpha + tl.sum(p, 1)
            if HAS_SCALE:
                ve = tl.load(VS + kvh * stride_sh + blk, mask=pmask, other=0).to(tl.float32)
                p = p * tl.exp2(ve)[None, :]
            acc = acc * alpha[:, None] + tl.dot(p.to(DOT), v.to(DOT), out_dtype=tl.float32,
                                                  input_precision=PREC)
            m = m_new
        has = l_sum > 0
        o = acc / tl.where(has, l_sum, 1.0)[:, None]
        lse = tl.where(has, m + tl.log(tl.where(has, l_sum, 1.0)), float("-inf"))
        tl.store(O + b * stride_ob + heads[:, None] * stride_oh + sp * stride_os + d[None, :], o,
                 mask=gmask[:, None])
        tl.store(LSE + b * stride_lb + heads * stride_lh + sp, lse, mask=gmask)

    return paged_decode_kernel


def _dot_dtype(q_dtype: torch.dtype, dot_dtype: Optional[torch.dtype]):
    import triton.language as tl
    dt = dot_dtype or (q_dtype if q_dtype in (torch.float16, torch.bfloat16) else torch.float32)
    return {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}[dt]


def _precision(dot) -> str:
    """tl.dot's input precision for ``dot`` operands: "ieee" (true fp32 products) for fp32, which a GPU would
    otherwise multiply as TF32 (a 10-bit mantissa); half operands multiply exactly either way ("tf32" is the
    default that leaves them alone)."""
    import triton.language as tl
    return "ieee" if dot == tl.float32 else "tf32"


def paged_decode_attention_triton(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                                  block_tables: torch.Tensor, seq_lens: torch.Tensor, scale: float,
                                  block_size: int, k_scale: Optional[torch.Tensor] = None,
                                  v_scale: Optional[torch.Tensor] = None, max_len: Optional[int] = None,
                                  dot_dtype: Optional[torch.dtype] = None, block_n: int = 64,
                                  target_programs: int = 264) -> torch.Tensor:
    """Same contract as ``paged_decode_attention_torch``. ``max_len`` bounds the splits (pass it to avoid a
    host sync); ``dot_dtype`` is what ``tl.dot`` multiplies in (default: q's half dtype, else fp32; the
    Triton interpreter gets bf16 dots wrong, so tests use fp16/fp32)."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    B, H, D = q.shape
    KV = k_cache.shape[0]
    group = H // KV
    if max_len is None:
        max_len = int(seq_lens.max())
    splits, split_len = num_splits_for(max_len, B, KV, block_n, target_programs)
    o = torch.empty(B, H, splits, D, dtype=torch.float32, device=q.device)
    lse = torch.empty(B, H, splits, dtype=torch.float32, device=q.device)
    q = q.contiguous()
    has_scale = k_scale is not None
    ks = k_scale if has_scale else seq_lens  # any tensor; not read
    vs = v_scale if has_scale else seq_lens
    dot = _dot_dtype(q.dtype, dot_dtype)
    _kernel[(B, KV, splits)](
        q, k_cache, v_cache, ks, vs, block_tables, seq_lens, o, lse,
        q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), ks.stride(0) if has_scale else 0,
        block_tables.stride(0), o.stride(0), o.stride(1), o.stride(2), lse.stride(0), lse.stride(1),
        scale, split_len,
        GROUP=group, BLOCK_G=max(16, 1 << (group - 1).bit_length()), D=D, BLOCK_SIZE=block_size,
        BLOCK_N=block_n, HAS_SCALE=has_scale, DOT=dot, PREC=_precision(dot))
    if splits == 1:
        return o[:, :, 0].to(q.dtype)
    w = torch.exp(lse - lse.amax(-1, keepdim=True))  # merge the splits by their log-sum-exp
    return ((o * w[..., None]).sum(2) / w.sum(-1)[..., None]).to(q.dtype)


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def triton_supports(head_dim: int, group: int) -> bool:
    return _pow2(head_dim) and head_dim >= 16 and math.isfinite(group)
