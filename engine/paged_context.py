"""The serving engine's ForwardContext: a paged KV pool for the attention layers + the Mamba state pool.

KV lives in per-attention-layer tensors ``[n_kv, num_blocks * block_size, head_dim]`` (bf16, fp8 e4m3 or
fp32), head-major so that a sequence whose blocks are consecutive in the pool (the common case: admission
reserves all of a sequence's blocks at once) reads its past as a strided view that SDPA takes without a copy.
A sequence's block table maps its positions to pool slots; this step's write positions and each sequence's
read (a slice, or an index tensor for scattered blocks) are built once per step and shared by every layer.
Mamba layers read and write their sequence's slot of the ``StatePool``.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import torch

from engine import kv_quant
from engine.forward_context import FOLD_MAX_ROWS as FOLD_ROWS, SeqSpan, causal_attention
from engine.kernels.cpu_prefill_attention import prefix_flash_attention
from engine.state_pool import StatePool

KV_DTYPES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
             "float32": torch.float32, "fp32": torch.float32, "fp8": torch.float8_e4m3fn,
             "fp8_e4m3": torch.float8_e4m3fn, "float8_e4m3fn": torch.float8_e4m3fn}


def kv_torch_dtype(name: str) -> torch.dtype:
    try:
        return KV_DTYPES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown kv_dtype {name!r}; known: {', '.join(KV_DTYPES)}") from None


LONG_CONTEXT = 2048  # past this many keys, attention that would copy the past runs block by block
FLASH_LONG_PREFILL = True  # on CPU, those blocks go through torch's flash kernel (False: the Python softmax)
# with a bf16 pool, CPU prefill chunks (more than FOLD_ROWS tokens) compute attention in bf16 on the pool's view
# (q and probabilities rounded to bf16; ~2.7x faster on CPUs with AMX/AVX512-BF16) instead of fp32 over upcast
# copies: per context where its prefill GEMMs are bf16 anyway (PagedContext.prefill_bf16, set by the engine),
# everywhere when this is True
LONG_PREFILL_BF16 = False
KEY_BLOCK = 1024


def blockwise_attention(q: torch.Tensor, load: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]], S: int,
                        n_kv: int, scale: float, past_len: int, sliding_window: Optional[int] = None,
                        key_block: int = KEY_BLOCK) -> torch.Tensor:
    """Causal attention of q [L, H, hd] (positions past_len..) over S keys that ``load(a, b)`` returns as
    k/v [b - a, KV, hd] (a view, a gather or a dequantized copy), with an online softmax over key blocks:
    peak memory is O(L x key_block), not O(L x S), so a long context's prefill activations stay bounded by
    the chunk size and fp8 or scattered KV is never materialized whole. GQA: each kv head's query group is
    folded into rows."""
    L, H, hd = q.shape
    KV, g = n_kv, H // n_kv
    qh = q.view(L, KV, g, hd).permute(1, 2, 0, 3).reshape(KV, g * L, hd).float()
    qpos = (past_len + torch.arange(L, device=q.device)).repeat(g)
    m = torch.full((KV, g * L), float("-inf"), device=q.device)
    denom = torch.zeros(KV, g * L, device=q.device)
    acc = torch.zeros(KV, g * L, hd, device=q.device)
    lo = 0 if sliding_window is None else max(0, past_len - sliding_window + 1)
    buf = torch.empty(KV, g * L, key_block, device=q.device)  # scores of a full block, reused (no heap churn)
    for s0 in range(lo - lo % key_block, S, key_block):
        k_blk, v_blk = load(s0, min(S, s0 + key_block))
        kb = k_blk.float().transpose(0, 1)  # [KV, b, hd]
        vb = v_blk.float().transpose(0, 1)
        b = kb.shape[1]
        scores = torch.bmm(qh, kb.transpose(1, 2), out=buf if b == key_block else None).mul_(scale)  # [KV, gL, b]
        kpos = s0 + torch.arange(b, device=q.device)
        if s0 + b - 1 > past_len or sliding_window is not None:
            blocked = kpos[None, :] > qpos[:, None]
            if sliding_window is not None:
                blocked |= kpos[None, :] <= qpos[:, None] - sliding_window
            scores.masked_fill_(blocked, float("-inf"))
        m_new = torch.maximum(m, scores.amax(-1))
        m_safe = m_new.masked_fill(torch.isinf(m_new), 0.0)
        p = scores.sub_(m_safe[..., None]).exp_()  # in place: fewer large blocks for the allocator to juggle
        corr = torch.exp(m - m_safe)
        denom.mul_(corr).add_(p.sum(-1))
        acc.mul_(corr[..., None]).baddbmm_(p, vb)
        m = m_new
    out = acc / denom.clamp_min(1e-30)[..., None]
    return out.view(KV, g, L, hd).permute(2, 0, 1, 3).reshape(L, H, hd).to(q.dtype)


Read = Union[slice, torch.Tensor]  # a sequence's pool slots: consecutive (a view) or scattered (a gather)


def _lazy_zeros(shape: tuple[int, ...], dtype: torch.dtype, device) -> torch.Tensor:
    """Zeros whose pages the OS maps on first touch (calloc) on a CPU; an uninitialised tensor elsewhere."""
    if torch.device(device).type != "cpu":
        return torch.empty(shape, dtype=dtype, device=device)
    import numpy as np
    nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
    return torch.from_numpy(np.zeros(nbytes, dtype=np.uint8)).view(dtype).view(shape)


class KVPool:
    """Per attention layer, k and v as ``[n_kv, num_blocks * block_size, head_dim]`` (head-major); FP8 pools
    carry per-(block, kv head) power-of-two scales ``k_scale`` / ``v_scale`` (engine/kv_quant.py).

    On a CPU the pool is zeros from ``calloc`` (numpy): the pages of a large pool stay out of the resident set
    until sequences use them, and the batched decode attention (engine/kernels/cpu_decode_attention.py), which
    reads masked keys past a sequence's end, only ever meets finite values. Elsewhere it is uninitialised:
    nothing reads a slot before it is written."""

    def __init__(self, n_layers: int, num_blocks: int, block_size: int, n_kv: int, head_dim: int,
                 dtype: torch.dtype, device="cpu"):
        self.block_size, self.dtype = block_size, dtype
        shape = (n_kv, num_blocks * block_size, head_dim)
        self.k = [_lazy_zeros(shape, dtype, device) for _ in range(n_layers)]
        self.v = [_lazy_zeros(shape, dtype, device) for _ in range(n_layers)]
        self.fp8 = dtype == kv_quant.FP8
        self.k_scale = [kv_quant.new_scales(n_kv, num_blocks, device) for _ in range(n_layers)] if self.fp8 else []
        self.v_scale = [kv_quant.new_scales(n_kv, num_blocks, device) for _ in range(n_layers)] if self.fp8 else []

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v + self.k_scale + self.v_scale)

    def copy_blocks(self, pairs: list[tuple[int, int]]) -> None:
        bs = self.block_size
        for src, dst in pairs:
            for k, v in zip(self.k, self.v):
                k[:, dst * bs:(dst + 1) * bs].copy_(k[:, src * bs:(src + 1) * bs])
                v[:, dst * bs:(dst + 1) * bs].copy_(v[:, src * bs:(src + 1) * bs])
            for sc in self.k_scale + self.v_scale:
                kv_quant.copy_block_scales(sc, src, dst)


class PagedContext:
    def __init__(self, kv: KVPool, states: StatePool, ops=None):
        from engine.kernels import DEFAULT
        self.kv, self.states, self.ops = kv, states, ops or DEFAULT
        self.prefill_bf16 = False  # bf16 prefill attention on a bf16 pool (LONG_PREFILL_BF16; engine/llm_engine.py)
        self.write_run: Optional[slice] = None  # this step's KV write slots as one run, where they are (prepare)
        # decode / verify steps over a bf16 pool compute attention in bf16 (q rounded once) instead of over fp32
        # copies of the pasts: set where the qkv GEMMs round q/k/v to bf16 anyway (engine/model_runner.py)
        self.decode_bf16 = False
        self.spans: list[SeqSpan] = []
        self.block_tables: Optional[torch.Tensor] = None  # [B, max_blocks] int32 on the device (batched decode)
        self.seq_lens: Optional[torch.Tensor] = None
        # Per block table (a list the scheduler assigns once and never mutates): (the list, index of its first
        # non-consecutive block, the table as a device tensor). A 1M-token sequence has 62,500 blocks: turning
        # its table into tensors every step cost more host time than the step's GPU work.
        self._tables: dict[int, tuple[list[int], int, torch.Tensor]] = {}

    def _table(self, table: list[int], dev) -> tuple[int, torch.Tensor]:
        hit = self._tables.get(id(table))
        if hit is not None and hit[0] is table:
            return hit[1], hit[2]
        t = torch.tensor(table, dtype=torch.int32)
        breaks = (t[1:] - t[:-1] != 1).nonzero()
        first_break = int(breaks[0]) if len(breaks) else len(table)
        entry = (table, first_break, t.to(dev))
        self._tables[id(table)] = entry
        return entry[1], entry[2]

    def run_start(self, table: list[int], n: int) -> Optional[int]:
        """The first pool slot of a sequence's first ``n`` tokens where they lie in one run of consecutive slots
        (its blocks 0..used-1 follow each other), else None."""
        first_break, _ = self._table(table, self.kv.k[0].device if self.kv.k else "cpu")
        return table[0] * self.kv.block_size if first_break >= -(-n // self.kv.block_size) - 1 else None

    def prepare(self, spans: list[SeqSpan], block_tables: list[list[int]], slots: list[int]) -> "PagedContext":
        bs, dev = self.kv.block_size, self.kv.k[0].device if self.kv.k else "cpu"
        self.spans, self.slots = spans, slots
        self._decode = all(s.length == 1 for s in spans)
        self.slot_tensor = torch.tensor(slots, dtype=torch.long, device=dev)
        write: list[int] = []
        self.read: list[Read] = []
        tables = []
        for s, table in zip(spans, block_tables):
            n = s.past_len + s.length
            write.extend(table[p // bs] * bs + p % bs for p in range(s.past_len, n))
            _, tt = self._table(table, dev)
            tables.append(tt)
            start = self.run_start(table, n)
            if start is not None:  # a view of the pool
                self.read.append(slice(start, start + n))
            else:
                used = -(-n // bs)
                self.read.append((tt[:used].long()[:, None] * bs + torch.arange(bs, device=dev)).flatten()[:n])
        live = {id(t) for t in block_tables}
        self._tables = {k: v for k, v in self._tables.items() if k in live}
        self.write_idx = torch.tensor(write, dtype=torch.long, device=dev)
        self.write_blocks = None
        if self.kv.fp8:  # FP8 KV: the touched blocks from the host lists, once per step (no torch.unique per layer)
            ub, inv = kv_quant.touched_blocks(write, bs)
            both = torch.tensor(ub + inv, dtype=torch.long, device=dev)
            self.write_blocks = (both[:len(ub)], both[len(ub):])
        # one run of consecutive slots (a prefill chunk, a lone decode): a slice copy instead of index_copy_
        run = len(write) > 0 and write[-1] - write[0] == len(write) - 1 and write == list(range(write[0], write[-1] + 1))
        self.write_run = slice(write[0], write[-1] + 1) if run else None
        self._plan = None  # the CPU decode plan: built by the step's first attention layer, shared by the rest
        self._short = all(s.length <= FOLD_ROWS for s in spans)
        kernel = self.ops.decode_attention if self._decode else self.ops.prefill_attention
        if self.ops.plan_decode is not None:  # host-side plan instead of device block tables
            self.block_tables = self.seq_lens = None
        elif kernel is not None:  # one kernel call per layer for the batch
            lens = [s.past_len + s.length for s in spans]
            width = max(-(-n // bs) for n in lens)
            self.block_tables = torch.stack([torch.nn.functional.pad(t[:width], (0, max(0, width - len(t))))
                                             for t in tables])
            self.seq_lens = torch.tensor(lens, dtype=torch.int32, device=dev)
            self.max_len = max(lens)
        else:
            self.block_tables = self.seq_lens = None
        return self

    @property
    def is_decode(self) -> bool:
        return self._decode

    def attend(self, attn_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
               sliding_window: Optional[int] = None) -> torch.Tensor:
        kc, vc = self.kv.k[attn_idx], self.kv.v[attn_idx]
        self._attn_idx = attn_idx
        store, bs = kc.dtype, self.kv.block_size
        fp8 = self.kv.fp8
        if fp8:  # scaled per (block, kv head); see engine/kv_quant.py
            ks, vs = self.kv.k_scale[attn_idx], self.kv.v_scale[attn_idx]
            kv_quant.write_fp8(kc, ks, self.write_idx, k, bs, self.write_blocks)
            kv_quant.write_fp8(vc, vs, self.write_idx, v, bs, self.write_blocks)
        elif self.write_run is not None:
            kc[:, self.write_run].copy_(k.transpose(0, 1))
            vc[:, self.write_run].copy_(v.transpose(0, 1))
        else:
            kc.index_copy_(1, self.write_idx, k.to(store).transpose(0, 1))
            vc.index_copy_(1, self.write_idx, v.to(store).transpose(0, 1))

        if self.block_tables is not None and sliding_window is None and not self._decode:
            return self.ops.prefill_attention(q, kc, vc, self.block_tables, [s.start for s in self.spans],
                                              [s.length for s in self.spans], [s.past_len for s in self.spans],
                                              scale, bs, ks if fp8 else None, vs if fp8 else None)
        if self.block_tables is not None and sliding_window is None:
            return self.ops.decode_attention(q, kc, vc, self.block_tables, self.seq_lens, scale, bs,
                                             ks if fp8 else None, vs if fp8 else None, max_len=self.max_len)
        if self.ops.plan_decode is not None and self._short and not fp8 and sliding_window is None:
            qd = q.to(store) if self.decode_bf16 and store == torch.bfloat16 else q
            if self._plan is None:  # copying a long past to another dtype is what the block-wise path avoids
                self._plan = self.ops.plan_decode([s.start for s in self.spans], [s.length for s in self.spans],
                                                  [s.past_len for s in self.spans], self.read, kc.shape[1],
                                                  long_rest=LONG_CONTEXT, long_slices=store != qd.dtype)
            out = self.ops.decode_attention(qd, kc, vc, None, None, scale, bs, plan=self._plan)
            if qd.dtype != q.dtype and self._plan.rest:
                out = out.to(q.dtype)  # else a bf16 output goes to the int4 output projection as it is
            for i in self._plan.rest:
                s = self.spans[i]
                out[s.start:s.start + s.length] = self._attend_one(i, q, kc, vc, scale, sliding_window)
            return out
        return torch.cat([self._attend_one(i, q, kc, vc, scale, sliding_window) for i in range(len(self.spans))])

    def _attend_one(self, i: int, q: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor, scale: float,
                    sliding_window: Optional[int]) -> torch.Tensor:
        """Sequence i alone: SDPA over its past (a view, a gather or a dequantized copy), block by block past
        LONG_CONTEXT keys unless it reads a view in the query's dtype."""
        store, bs, fp8 = kc.dtype, self.kv.block_size, self.kv.fp8
        if fp8:
            ks, vs = self.kv.k_scale[self._attn_idx], self.kv.v_scale[self._attn_idx]

        def past(pool: torch.Tensor, r: Read) -> torch.Tensor:  # -> token-major [n, KV, hd]
            if fp8:
                return kv_quant.read_fp8(pool, ks if pool is kc else vs, r, bs, q.dtype).transpose(0, 1)
            x = pool[:, r] if isinstance(r, slice) else pool.index_select(1, r)
            return x.transpose(0, 1)

        s, r = self.spans[i], self.read[i]
        q_seq, S = q[s.start:s.start + s.length], s.past_len + s.length

        def load(a: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
            part = slice(r.start + a, r.start + b) if isinstance(r, slice) else r[a:b]
            return past(kc, part), past(vc, part)

        cpu_flash = sliding_window is None and q.device.type == "cpu" and FLASH_LONG_PREFILL
        if (cpu_flash and (self.prefill_bf16 or LONG_PREFILL_BF16) and store == torch.bfloat16 and not fp8
                and s.length > FOLD_ROWS):  # bf16 flash parts on the pool's view (or a bf16 gather: a snapshot fork)
            return prefix_flash_attention(q_seq.to(store), load, s.past_len, scale,
                                          whole_past=isinstance(r, slice)).to(q.dtype)
        in_place = isinstance(r, slice) and store == q.dtype and s.length == 1
        if S <= LONG_CONTEXT or in_place:  # short, or a decode over a view: SDPA reads the pool directly
            return causal_attention(q_seq, past(kc, r), past(vc, r), scale, s.past_len, sliding_window)
        if cpu_flash:  # parts merged by LSE
            view = isinstance(r, slice) and store == q.dtype
            return prefix_flash_attention(q_seq, load, s.past_len, scale, whole_past=view)
        return blockwise_attention(q_seq, load, S, kc.shape[0], scale, s.past_len, sliding_window)

    def mamba_state(self, mamba_idx: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        slot = self.slots[seq]
        return self.states.conv[mamba_idx][slot], self.states.ssm[mamba_idx][slot]

    def set_mamba_state(self, mamba_idx: int, seq: int, conv: torch.Tensor, ssm: torch.Tensor) -> None:
        slot = self.slots[seq]
        self.states.conv[mamba_idx][slot].copy_(conv)
        self.states.ssm[mamba_idx][slot].copy_(ssm)

    def ssm_pool(self, mamba_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(the layer's whole SSM state pool [slots, H, P, N], this step's slot ids): for in-place updates."""
        return self.states.ssm[mamba_idx], self.slot_tensor

    def mamba_state_batch(self, mamba_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (self.states.conv[mamba_idx].index_select(0, self.slot_tensor),
                self.states.ssm[mamba_idx].index_select(0, self.slot_tensor))

    def set_mamba_state_batch(self, mamba_idx: int, conv: torch.Tensor, ssm: torch.Tensor) -> None:
        self.states.conv[mamba_idx].index_copy_(0, self.slot_tensor, conv.to(self.states.conv[mamba_idx].dtype))
        self.states.ssm[mamba_idx].index_copy_(0, self.slot_tensor, ssm.float())
