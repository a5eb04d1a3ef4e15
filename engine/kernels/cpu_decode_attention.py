"""Batched decode attention on a CPU: the sequences of a step in as few SDPA calls as their KV layout allows.

A CPU has no kernel that walks block tables, and copying every sequence's past into a padded batch costs more
than it saves (a read, a write and a read again of the whole KV). What torch's flash kernel does take is a
batch whose members are *equally spaced* in memory, with any strides. The block manager hands a sequence its
blocks at once and in order, so its past is one run of pool slots; sequences admitted together with the same
reservation lie at equal distances. ``plan_decode`` (once per step, shared by every layer) sorts the
sequences by where their past starts and cuts them into runs of equal spacing and equal new-token count;
each run is one ``as_strided`` view of the pool ``[n, KV, keys, hd]`` and one SDPA call, shorter pasts masked
(additive ``-inf`` past their end; the keys read beyond it are another sequence's or zeros: the CPU pool is
zero-initialised, so they are finite and get weight 0). A step of unrelated sequences degrades to one call
per sequence with no per-call Python beyond the view (the old path paid ~60 us per call in wrappers).

Short query steps (decode, speculative verify: up to ``FOLD_MAX_ROWS`` tokens) fold each kv head's query
heads into rows, so each key is read once per kv head; a group's mask is causal per member.

``paged_decode_attention_cpu`` also takes the kernels' contract (block tables, lengths; one token per
sequence) and builds the plan itself: tests compare it with ``paged_decode_attention_torch``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import torch
import torch.nn.functional as F

MAX_PAD = 1.5  # a group's keys read (members x longest past) stay under this factor of the real keys; padded
# query rows cost little (a decode step is bound by reading the keys, once per kv head for all its rows)


@dataclass
class Group:
    q_rows: Union[slice, torch.Tensor]  # packed q rows, member-major [n * L] (a member's last row repeats as padding)
    out_rows: Union[slice, torch.Tensor]  # packed output rows of the real (unpadded) rows
    real: Optional[torch.Tensor]  # which of the n * L computed rows are real (None: all)
    start: int  # first pool slot of the first member's past
    stride: int  # slots between consecutive members' pasts (0 for a single member)
    n: int  # members
    L: int  # query rows per member (the longest new-token count; shorter ones padded)
    keys: int  # keys read per member (the longest past + L)
    mask: Optional[torch.Tensor] = None  # additive [n, 1, L, keys] fp32, None when nothing is masked
    _masks: dict = field(default_factory=dict)  # the mask in each query dtype and fold (built once per step)

    def mask_as(self, dtype: torch.dtype, group: int) -> Optional[torch.Tensor]:
        if self.mask is None:
            return None
        hit = self._masks.get((dtype, group))
        if hit is None:
            m = self.mask
            if group > 1:  # folded rows are ordered (query head of the group, token)
                m = m.repeat(1, 1, group, 1)
            hit = self._masks[(dtype, group)] = m.to(dtype)
        return hit


@dataclass
class Gather:
    rows: torch.Tensor  # packed-token rows of this sequence's new tokens
    slots: torch.Tensor  # pool slots of its past + new tokens (scattered blocks)
    past: int


@dataclass
class DecodePlan:
    groups: list[Group]
    gathers: list[Gather]
    rest: list[int]  # sequences this plan leaves to the caller (e.g. a long scattered past)
    whole: bool = False  # one group whose rows are the packed rows in order: its output is the whole output


Read = Union[slice, torch.Tensor]


def bf16_decode(model) -> bool:
    """Whether a CPU model's decode steps already round every attention layer's q/k/v to bf16: the model is
    bf16, or its qkv and output projections are int4-packed (the int4 kernel takes and returns bf16, engine/quant/
    cpu_kernels.py). Then decode attention over a bf16 KV pool computes in bf16 on the pool's views
    (PagedContext.decode_bf16) instead of on fp32 copies of every past, within the int4 path's tolerance, and
    hands its bf16 output to the output projection as it is (that GEMM would round it to bf16 anyway)."""
    if model.device.type != "cpu":
        return False
    if model.dtype == torch.bfloat16:
        return True
    attn = [b.mixer for b in model.blocks if b.kind == "attention"]
    return bool(attn) and all(a.qkv_proj.packed_kind == "int4" and a.o_proj.packed_kind == "int4" for a in attn)


def _mask(past: list[int], L: int, keys: int) -> Optional[torch.Tensor]:
    """Additive [n, 1, L, keys]: member i's token l (position past[i] + l) sees keys 0..past[i] + l."""
    if L == 1 and all(p + 1 == keys for p in past):
        return None
    kpos = torch.arange(keys)
    qpos = torch.tensor(past)[:, None] + torch.arange(L)[None, :]  # [n, L]
    allowed = kpos[None, None, :] <= qpos[..., None]
    return torch.zeros(allowed.shape).masked_fill_(~allowed, float("-inf"))[:, None]


def _rows(rows: list[int]) -> Union[slice, torch.Tensor]:
    """Consecutive rows as a slice (a view of q), others as an index."""
    if rows == list(range(rows[0], rows[0] + len(rows))):
        return slice(rows[0], rows[0] + len(rows))
    return torch.tensor(rows, dtype=torch.long)


def plan_decode(starts: list[int], lengths: list[int], pasts: list[int], reads: list[Read], pool_slots: int,
                long_rest: Optional[int] = None, long_slices: bool = False) -> DecodePlan:
    """Group the sequences of a step (their packed-row starts, new-token counts, past lengths and pool reads:
    a slice of consecutive slots or an index of scattered ones). ``long_rest``: sequences with more keys than
    this and a scattered past (with ``long_slices``, any past: the pool's dtype differs from the query's, so
    a view would be copied whole) are left to the caller (``rest``), which reads them block by block."""
    groups: list[Group] = []
    gathers: list[Gather] = []
    rest: list[int] = []
    runs: list[tuple[int, int, int, int]] = []  # (slot start, past, new tokens, seq)
    for i, (r, L, p) in enumerate(zip(reads, lengths, pasts)):
        if long_rest is not None and p + L > long_rest and (long_slices or not isinstance(r, slice)):
            rest.append(i)
        elif isinstance(r, slice):
            runs.append((r.start, p, L, i))
        else:
            gathers.append(Gather(torch.arange(starts[i], starts[i] + L), r, p))

    def shape(members: list[tuple[int, int, int, int]]) -> tuple[int, int]:
        L = max(m[2] for m in members)
        return L, max(m[1] for m in members) + L

    def close(members: list[tuple[int, int, int, int]]) -> None:
        L, keys = shape(members)
        stride = members[1][0] - members[0][0] if len(members) > 1 else 0
        q_rows = [starts[s] + min(j, n - 1) for _, _, n, s in members for j in range(L)]
        out_rows = [starts[s] + j for _, _, n, s in members for j in range(n)]
        real = [i * L + j for i, (_, _, n, _) in enumerate(members) for j in range(n)]
        padded = len(real) < len(q_rows)
        groups.append(Group(_rows(q_rows), _rows(out_rows), torch.tensor(real) if padded else None,
                            members[0][0], stride, len(members), L, keys, _mask([m[1] for m in members], L, keys)))

    runs.sort()
    cur: list[tuple[int, int, int, int]] = []
    for it in runs:
        if cur:
            L, keys = shape(cur + [it])
            stride_ok = len(cur) == 1 or it[0] - cur[-1][0] == cur[1][0] - cur[0][0]
            fits = it[0] + keys <= pool_slots
            padded_ok = (len(cur) + 1) * keys <= MAX_PAD * sum(m[1] + m[2] for m in cur + [it])  # keys read
            if not (stride_ok and fits and padded_ok):
                close(cur)
                cur = []
        cur.append(it)
    if cur:
        close(cur)
    T = max((st + n for st, n in zip(starts, lengths)), default=0)
    whole = (not gathers and not rest and len(groups) == 1 and groups[0].real is None
             and groups[0].out_rows == slice(0, T) and groups[0].q_rows == slice(0, T))
    return DecodePlan(groups, gathers, rest, whole)


def _attend(qg: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], scale: float,
            n: int, L: int, KV: int, group: int, D: int) -> torch.Tensor:
    """qg [n, L, H, D]; k/v [n, KV, keys, D] -> [n * L, H, D] (kv head's query heads folded into rows)."""
    if k.dtype != qg.dtype:
        k, v = k.to(qg.dtype), v.to(qg.dtype)
    if L == 1:
        qf = qg.view(n, KV, group, D)
    else:
        qf = qg.view(n, L, KV, group, D).permute(0, 2, 3, 1, 4).reshape(n, KV, group * L, D)
    out = F.scaled_dot_product_attention(qf, k, v, attn_mask=mask, scale=scale)
    if L == 1:
        return out.reshape(n, KV * group, D)
    return out.view(n, KV, group, L, D).permute(0, 3, 1, 2, 4).reshape(n * L, KV * group, D)


def run_plan(plan: DecodePlan, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, scale: float,
             out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Attention of the packed q [T, H, D] for every sequence the plan covers, written into out's rows (a new
    tensor when None; a ``whole`` plan's one group returns its own output, no copy)."""
    KV, S, D = k_cache.shape
    H = q.shape[1]
    group = H // KV
    sk, ss = k_cache.stride(0), k_cache.stride(1)
    if out is None and not plan.whole:
        out = torch.empty_like(q)
    for g in plan.groups:
        if g.n == 1:  # a view of one past: slicing beats as_strided's bounds checks
            k = k_cache.narrow(1, g.start, g.keys).unsqueeze(0)
            v = v_cache.narrow(1, g.start, g.keys).unsqueeze(0)
        else:
            shape, strides = (g.n, KV, g.keys, D), (g.stride * ss, sk, ss, k_cache.stride(2))
            k = k_cache.as_strided(shape, strides, k_cache.storage_offset() + g.start * ss)
            v = v_cache.as_strided(shape, strides, v_cache.storage_offset() + g.start * ss)
        qg = q[g.q_rows] if isinstance(g.q_rows, slice) else q.index_select(0, g.q_rows)
        o = _attend(qg, k, v, g.mask_as(q.dtype, group if g.L > 1 else 1), scale, g.n, g.L, KV, group, D)
        if plan.whole:
            return o
        if g.real is not None:
            o = o.index_select(0, g.real)
        if isinstance(g.out_rows, slice):
            out[g.out_rows] = o
        else:
            out.index_copy_(0, g.out_rows, o)
    for ga in plan.gathers:
        L = len(ga.rows)
        k = k_cache.index_select(1, ga.slots)[None]
        v = v_cache.index_select(1, ga.slots)[None]
        mask = _mask([ga.past], L, ga.past + L)
        if mask is not None:
            mask = (mask.repeat(1, 1, group, 1) if L > 1 else mask).to(q.dtype)
        out.index_copy_(0, ga.rows, _attend(q.index_select(0, ga.rows), k, v, mask, scale, 1, L, KV, group, D))
    return out


def paged_decode_attention_cpu(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                               block_tables: Optional[torch.Tensor], seq_lens: Optional[torch.Tensor],
                               scale: float, block_size: int, k_scale: Optional[torch.Tensor] = None,
                               v_scale: Optional[torch.Tensor] = None, max_len: Optional[int] = None,
                               plan: Optional[DecodePlan] = None) -> torch.Tensor:
    """The kernels' contract (q [B, H, D], one new token per sequence, its key already in the pool) or, with
    ``plan`` (``plan_decode``; the engine builds it once per step), packed q [T, H, D] of short steps.
    FP8 pools (scales) go to the reference, which dequantizes per sequence."""
    if k_scale is not None or v_scale is not None:
        from engine.kernels.decode_attention import paged_decode_attention_torch
        return paged_decode_attention_torch(q, k_cache, v_cache, block_tables, seq_lens, scale, block_size,
                                            k_scale, v_scale, max_len)
    if plan is None:
        lens = [int(n) for n in seq_lens]
        reads: list[Read] = []
        for b, n in enumerate(lens):
            blocks = block_tables[b, :-(-n // block_size)].long()
            if len(blocks) == 0 or bool((blocks[1:] - blocks[:-1] == 1).all()):
                first = int(blocks[0]) * block_size if len(blocks) else 0
                reads.append(slice(first, first + n))
            else:
                reads.append((blocks[:, None] * block_size + torch.arange(block_size)).flatten()[:n])
        B = q.shape[0]
        plan = plan_decode(list(range(B)), [1] * B, [n - 1 for n in lens], reads, k_cache.shape[1])
    return run_plan(plan, q, k_cache, v_cache, scale)
