"""Chunked-prefill attention over the paged cache: every sequence of a step (variable numbers of new tokens
after variable pasts) in ONE launch per layer; causal; K/V read from the paged pool (bf16/fp16/fp32, or fp8
with per-(block, kv head) power-of-two scales); GQA by mapping each query head to its kv head. The new
tokens' K/V are already in the pool (the context writes them first), so a chunk attends to its past and to
itself the same way. Online softmax over key tiles: memory O(tile), not O(L x S).

``paged_prefill_attention_torch`` is the reference (per sequence: gather, dequantize, causal SDPA).
"""
from __future__ import annotations

from typing import Optional

import torch

from engine.forward_context import causal_attention


def paged_prefill_attention_torch(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                                  block_tables: torch.Tensor, q_starts: list[int], q_lens: list[int],
                                  past_lens: list[int], scale: float, block_size: int,
                                  k_scale: Optional[torch.Tensor] = None, v_scale: Optional[torch.Tensor] = None
                                  ) -> torch.Tensor:
    """q [T, H, D] packed; caches [KV, S, D]; block_tables [B, max_blocks]; per sequence its offset in q,
    its new tokens and its past -> [T, H, D] in q's dtype."""
    out = torch.empty_like(q)
    for b, (s0, n, past) in enumerate(zip(q_starts, q_lens, past_lens)):
        total = past + n
        pos = torch.arange(total, device=q.device)
        blk = block_tables[b, pos // block_size].long()
        slots = blk * block_size + pos % block_size
        k = k_cache.index_select(1, slots).float()
        v = v_cache.index_select(1, slots).float()
        if k_scale is not None:
            k = k * torch.exp2(k_scale.index_select(1, blk).float())[..., None]
            v = v * torch.exp2(v_scale.index_select(1, blk).float())[..., None]
        out[s0:s0 + n] = causal_attention(q[s0:s0 + n].float(), k.transpose(0, 1), v.transpose(0, 1), scale,
                                          past).to(q.dtype)
    return out


_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def paged_prefill_kernel(Q, K, V, KS, VS, BT, QSTART, QLEN, PAST, O,
                             stride_qt, stride_qh, stride_kh, stride_ks, stride_sh, stride_bt,
                             stride_ot, stride_oh, sm_scale,
                             GROUP: tl.constexpr, D: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_SCALE: tl.constexpr,
                             DOT: tl.constexpr, PREC: tl.constexpr):
        b = tl.program_id(0)
        h = tl.program_id(1)
        mb = tl.program_id(2)
        q_start = tl.load(QSTART + b)
        q_len = tl.load(QLEN + b)
        past = tl.load(PAST + b)
        kvh = h // GROUP
        m = mb * BLOCK_M + tl.arange(0, BLOCK_M)  # query index within this sequence's new tokens
        mmask = m < q_len
        d = tl.arange(0, D)
        q = tl.load(Q + (q_start + m)[:, None].to(tl.int64) * stride_qt + h * stride_qh + d[None, :],
                    mask=mmask[:, None], other=0.0)
        q = (q.to(tl.float32) * sm_scale).to(DOT)
        qpos = past + m
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, D], tl.float32)
        end = tl.minimum(past + mb * BLOCK_M + BLOCK_M, past + q_len)  # causal: keys up to the last query
        for n0 in range(0, end, BLOCK_N):
            pos = n0 + tl.arange(0, BLOCK_N)
            pmask = pos < end
            blk = tl.load(BT + b * stride_bt + pos // BLOCK_SIZE, mask=pmask, other=0)
            slot = blk.to(tl.int64) * BLOCK_SIZE + pos % BLOCK_SIZE
            off = kvh * stride_kh + slot[:, None] * stride_ks + d[None, :]
            k = tl.load(K + off, mask=pmask[:, None], other=0.0)
            v = tl.load(V + off, mask=pmask[:, None], other=0.0)
            s = tl.dot(q, tl.trans(k.to(DOT)), out_dtype=tl.float32, input_precision=PREC)
            if HAS_SCALE:
                ke = tl.load(KS + kvh * stride_sh + blk, mask=pmask, other=0).to(tl.float32)
                s = s * tl.exp2(ke)[None, :]
            keep = pmask[None, :] & (pos[None, :] <= qpos[:, None])
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            p = tl.exp(s - m_safe[:, None])
            alpha = tl.exp(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, 1)
            if HAS_SCALE:
                ve = tl.load(VS + kvh * stride_sh + blk, mask=pmask, other=0).to(tl.float32)
                p = p * tl.exp2(ve)[None, :]
            acc = acc * alpha[:, None] + tl.dot(p.to(DOT), v.to(DOT), out_dtype=tl.float32,
                                                  input_precision=PREC)
            m_i = m_new
        o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        tl.store(O + (q_start + m)[:, None].to(tl.int64) * stride_ot + h * stride_oh + d[None, :], o,
                 mask=mmask[:, None])

    return paged_prefill_kernel


_spans: tuple = (None, None)  # (key, device tensor) of the last call: every layer of a step passes the same spans


def _spans_on_device(q_starts: list[int], q_lens: list[int], past_lens: list[int], dev) -> torch.Tensor:
    """[3, n] int32 (starts, lens, pasts) on ``dev``: one pinned non-blocking copy for the step's first layer
    (no host sync), reused by the rest (three blocking copies per layer before)."""
    global _spans
    key = (tuple(q_starts), tuple(q_lens), tuple(past_lens), str(dev))
    if _spans[0] != key:
        from engine.sampling import to_device
        _spans = (key, to_device(torch.tensor([q_starts, q_lens, past_lens], dtype=torch.int32), dev))
    return _spans[1]


def paged_prefill_attention_triton(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                                   block_tables: torch.Tensor, q_starts: list[int], q_lens: list[int],
                                   past_lens: list[int], scale: float, block_size: int,
                                   k_scale: Optional[torch.Tensor] = None, v_scale: Optional[torch.Tensor] = None,
                                   dot_dtype: Optional[torch.dtype] = None, block_m: int = 32,
                                   block_n: int = 32) -> torch.Tensor:
    """Same contract as ``paged_prefill_attention_torch``; grid (sequence, query head, query block)."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    from engine.kernels.decode_attention import _dot_dtype, _precision
    dot = _dot_dtype(q.dtype, dot_dtype)
    T, H, D = q.shape
    KV = k_cache.shape[0]
    dev = q.device
    q = q.contiguous()
    o = torch.empty(T, H, D, dtype=torch.float32, device=dev)
    starts, lens, pasts = _spans_on_device(q_starts, q_lens, past_lens, dev)
    has_scale = k_scale is not None
    ks, vs = (k_scale, v_scale) if has_scale else (lens, lens)
    grid = (len(q_lens), H, -(-max(q_lens) // block_m))
    _kernel[grid](q, k_cache, v_cache, ks, vs, block_tables, starts, lens, pasts, o,
                  q.stride(0), q.stride(1), k_cache.stride(0), k_cache.stride(1), ks.stride(0) if has_scale else 0,
                  block_tables.stride(0), o.stride(0), o.stride(1), scale,
                  GROUP=H // KV, D=D, BLOCK_SIZE=block_size, BLOCK_M=block_m, BLOCK_N=block_n,
                  HAS_SCALE=has_scale, DOT=dot, PREC=_precision(dot))
    return o.to(q.dtype)
