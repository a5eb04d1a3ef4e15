"""FP8 (e4m3) KV with one power-of-two scale per (block, kv head): what is stored, and how it is read back.

A K or V value is stored as ``fp8(x / 2**e)`` where ``e`` (int8, E8M0-style as in OCP microscaling) is the
exponent of its block and kv head: the smallest ``e`` with ``amax / 2**e <= 448``. Blocks fill a token at a
time (decode); when a new token's magnitude needs a larger exponent, the block's earlier entries are shifted
down by the exponent difference — a power-of-two rescale, exact except for values that fall into fp8's
subnormal range. Without a scale, values past 448 became NaN and small ones flushed to zero.

Layout: scales ``[n_kv, num_blocks]`` int8 per layer for K and for V, beside the head-major pool
``[n_kv, num_blocks * block_size, head_dim]``. An untouched block has ``EMPTY`` (any write grows it).
Memory: 1 byte per block per kv head per K/V (Puzzle-75B, 16-token blocks: 2 B/token next to 4096 B of KV).
"""
from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
EMPTY = -128  # exponent of a block nothing was written to
E_MIN, E_MAX = -126, 126


def exponent_for(amax: torch.Tensor) -> torch.Tensor:
    """Smallest power-of-two exponent e with amax / 2**e <= FP8_MAX (int32; E_MIN for zeros)."""
    e = torch.ceil(torch.log2(amax.float().clamp_min(2.0 ** -140) / FP8_MAX))
    return e.clamp_(E_MIN, E_MAX).to(torch.int32)


def new_scales(n_kv: int, num_blocks: int, device) -> torch.Tensor:
    return torch.full((n_kv, num_blocks), EMPTY, dtype=torch.int8, device=device)


def touched_blocks(slots: list[int], block_size: int) -> tuple[list[int], list[int]]:
    """(the distinct blocks of ``slots`` in order, each slot's index into them): what ``write_fp8`` needs,
    computed on the host from the step's own lists (engine/paged_context.py) instead of by torch.unique."""
    order: dict[int, int] = {}
    inv = [order.setdefault(s // block_size, len(order)) for s in slots]
    return list(order), inv


def write_fp8(pool: torch.Tensor, scales: torch.Tensor, slots: torch.Tensor, x: torch.Tensor,
              block_size: int, blocks: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """Store x [T, KV, hd] (any float dtype) at pool slots ``slots`` [T] of pool [KV, S, hd] fp8, growing the
    exponents of the touched blocks (and rescaling their earlier entries) where the new values need it.
    ``blocks``: (distinct blocks [U], each slot's index into them [T]) on the pool's device, from
    ``touched_blocks``; without them torch.unique finds them. Every touched block is rescaled by
    2^(old - new), 1 (an exact no-op) where its exponent did not grow: no data-dependent shape, no host sync."""
    if slots.numel() == 0:
        return
    raw = pool.view(torch.uint8)  # CPU index ops lack fp8: move the bytes
    n_kv = pool.shape[0]
    xt = x.float().transpose(0, 1)  # [KV, T, hd]
    need = exponent_for(xt.abs().amax(-1))  # [KV, T]
    ub, inv = blocks if blocks is not None else torch.unique(slots // block_size, return_inverse=True)
    old = scales.index_select(1, ub).to(torch.int32)  # [KV, U]
    new = old.scatter_reduce(1, inv[None].expand(n_kv, -1), need, "amax", include_self=True)
    rows = (ub[:, None] * block_size + torch.arange(block_size, device=pool.device)).flatten()
    cur = raw.index_select(1, rows).view(FP8).float()
    ratio = torch.exp2((old - new).float()).repeat_interleave(block_size, 1)
    raw.index_copy_(1, rows, (cur * ratio[..., None]).to(FP8).view(torch.uint8))
    scales.index_copy_(1, ub, new.to(torch.int8))
    q = (xt * torch.exp2(-new[:, inv].float())[..., None]).to(FP8)
    raw.index_copy_(1, slots, q.view(torch.uint8))


def read_fp8(pool: torch.Tensor, scales: torch.Tensor, slots, block_size: int,
             dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Dequantized [KV, n, hd] of pool slots (a slice or an index tensor)."""
    if isinstance(slots, slice):
        q = pool.view(torch.uint8)[:, slots].view(FP8)
        idx = torch.arange(slots.start, slots.stop, device=pool.device)
    else:
        q = pool.view(torch.uint8).index_select(1, slots).view(FP8)
        idx = slots
    e = scales.index_select(1, idx // block_size).float()  # [KV, n]
    return (q.float() * torch.exp2(e)[..., None]).to(dtype)


def copy_block_scales(scales: torch.Tensor, src: int, dst: int) -> None:
    scales[:, dst] = scales[:, src]
