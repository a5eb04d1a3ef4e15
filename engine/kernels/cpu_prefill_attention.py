"""Long-context prefill attention on a CPU: torch's flash kernel over the past in large key blocks, merged by
log-sum-exp, so a chunk after thousands of cached tokens needs neither a [L, S] mask nor a Python softmax.

A prefill chunk of L tokens at position ``past`` attends to every past key without a mask and to its own L
keys causally (a square ``is_causal`` block). ``aten::_scaled_dot_product_flash_attention_for_cpu``
returns each part's output and log-sum-exp; parts are merged as flash-decoding does. The past is read in
blocks of ``key_block`` keys through ``load(a, b)`` (a view of the pool, a gather of scattered blocks or a
dequantized copy), so memory stays O(L x key_block) at any context length; a view in the query's dtype is
read in one piece. It replaces the Python online softmax (``blockwise_attention``, kept for sliding windows
and non-CPU devices), which spent most of a 6,000-token prefill's attention time in elementwise ops.
"""
from __future__ import annotations

from typing import Callable

import torch

FLASH_KEY_BLOCK = 8192


def bf16_prefill(model) -> bool:
    """Whether a CPU model's prefill already rounds every attention layer's q/k/v to bf16: its qkv projections
    are int4-packed with a bf16 dense copy for long GEMMs (engine/layers/linear.py), or the model is bf16. Then
    attention over a bf16 KV pool may compute in bf16 too (PagedContext.prefill_bf16), within the int4
    path's tolerance of the fp32 path (docs/engine-serving-speed.md)."""
    if model.device.type != "cpu":
        return False
    if model.dtype == torch.bfloat16:
        return True
    qkv = [b.mixer.qkv_proj for b in model.blocks if b.kind == "attention"]
    return bool(qkv) and all(p.packed_kind == "int4" and p.packed_dtype == torch.bfloat16 and p.dense_packed is not None
                             for p in qkv)


def _flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """q [L, H, D], k/v [S, KV, D] (any strides) -> (out [1, KV, g, L, D] in q's dtype, lse [1, KV, g, L] fp32),
    g = H / KV query heads per kv head (views of the kernel's outputs). Without a mask each kv head's query heads
    are folded into one block of g x L rows: the kernel packs each key block once per kv head instead of once per
    query head (1.2-1.7x faster for short chunks, e.g. a question after a snapshot; ~5% at 512 rows)."""
    L, H, D = q.shape
    kh, vh = k.transpose(0, 1)[None], v.transpose(0, 1)[None]
    if kh.dtype != q.dtype:
        kh, vh = kh.to(q.dtype), vh.to(q.dtype)
    KV = kh.shape[1]
    g = H // KV
    if causal or g == 1:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q.transpose(0, 1)[None], kh, vh,
                                                                              is_causal=causal, scale=scale)[:2]
        return out.unflatten(1, (KV, g)), lse.unflatten(1, (KV, g))
    qf = q.reshape(L, KV, g, D).permute(1, 2, 0, 3).reshape(1, KV, g * L, D)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(qf, kh, vh, scale=scale)[:2]
    return out.unflatten(2, (g, L)), lse.unflatten(2, (g, L))


def prefix_flash_attention(q: torch.Tensor, load: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]],
                           past_len: int, scale: float, whole_past: bool = False,
                           key_block: int = FLASH_KEY_BLOCK) -> torch.Tensor:
    """Causal attention of q [L, H, D] (positions past_len..past_len+L-1) over keys ``load(a, b)`` ->
    k/v [b - a, KV, D]; ``whole_past``: load the past in one piece (a view that costs nothing to read).
    Returns [L, H, D] in q's dtype, or, where parts were merged, fp32 (contiguous; callers cast)."""
    L, H, D = q.shape
    step = past_len if whole_past else key_block
    parts = [_flash(q, *load(past_len, past_len + L), scale, causal=True)]
    for a in range(0, past_len, max(1, step)):
        parts.append(_flash(q, *load(a, min(past_len, a + step)), scale, causal=False))
    if len(parts) == 1:
        return parts[0][0][0].flatten(0, 1).transpose(0, 1)
    w = torch.softmax(torch.stack([p[1] for p in parts]), dim=0)[..., None]  # [P, 1, KV, g, L, 1]: each part's share
    out = torch.empty(L, H, D, dtype=torch.float32, device=q.device)
    KV = parts[0][0].shape[1]
    acc = out.view(L, KV, H // KV, D).permute(1, 2, 0, 3)[None]  # [1, KV, g, L, D], in out's token-major layout
    torch.mul(parts[0][0], w[0], out=acc)
    for p, wp in zip(parts[1:], w[1:]):
        acc.addcmul_(p[0], wp)
    return out
