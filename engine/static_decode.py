"""The decode step on persistent device buffers: what a CUDA graph replays, and what a CPU runs eagerly.

A decode step (every sequence feeds exactly one token, no drafts) needs per sequence its token id, position,
Mamba state slot, KV write slot and length, plus its block table. ``StaticDecodeContext`` keeps them in
buffers allocated once:

- ``meta [5, max_batch]`` int64 (ids, positions, state slots, write slots, lengths): the host packs one
  small tensor per step and copies it in with one non-blocking copy (pinned memory on CUDA);
- block tables by *state slot* ``[slots + 1, max_blocks]`` int32: a sequence's row is uploaded once, when it
  first decodes (a block table never changes while its sequence runs); each step gathers its rows on the
  device;
- padded rows (a batch of 5 runs as the 8-row graph) use state slot 0 (the pool's null slot) and write their
  K/V into a scratch block past the block manager's range, so they touch nothing a sequence owns.

``step(bs)`` runs the model over the first ``bs`` rows and returns the logits: only device ops on those
buffers, no host sync (with sync-free ops: Triton decode attention, the in-place Mamba update, the fused or
gathered MoE), so it can be captured (engine/cuda_graphs.py). FP8 KV is written by ``write_fp8_decode``, the
same result as ``kv_quant.write_fp8`` for one token per block without its data-dependent shapes.
"""
from __future__ import annotations

from typing import Optional

import torch

from engine import kv_quant
from engine.forward_context import SeqSpan
from engine.paged_context import KVPool, PagedContext
from engine.sampling import to_device
from engine.state_pool import StatePool

IDS, POS, SLOT, WRITE, LEN = range(5)


def write_fp8_decode(pool: torch.Tensor, scales: torch.Tensor, slots: torch.Tensor, x: torch.Tensor,
                     block_size: int) -> None:
    """``kv_quant.write_fp8`` for rows that each write one token into a block no other real row writes (a
    decode step: padded rows may share the scratch block). Every touched block is rescaled by 2^(old - new),
    which is 1 (an exact no-op) where its exponent did not grow: static shapes, no host sync."""
    raw = pool.view(torch.uint8)
    xt = x.float().transpose(0, 1)  # [KV, n, hd]
    blk = slots // block_size
    old = scales.index_select(1, blk).to(torch.int32)  # [KV, n]
    new = torch.maximum(old, kv_quant.exponent_for(xt.abs().amax(-1)))
    rows = (blk[:, None] * block_size + torch.arange(block_size, device=pool.device)).flatten()
    cur = raw.index_select(1, rows).view(kv_quant.FP8).float()
    ratio = torch.exp2((old - new).float()).repeat_interleave(block_size, 1)
    raw.index_copy_(1, rows, (cur * ratio[..., None]).to(kv_quant.FP8).view(torch.uint8))
    scales.index_copy_(1, blk, new.to(torch.int8))
    q = (xt * torch.exp2(-new.float())[..., None]).to(kv_quant.FP8)
    raw.index_copy_(1, slots, q.view(torch.uint8))


def batch_sizes(max_num_seqs: int) -> list[int]:
    """The padded batch sizes a decode step runs at: 1, 2, 4, 8, 16, then every 16, and max_num_seqs."""
    sizes = [b for b in (1, 2, 4, 8) if b < max_num_seqs] + list(range(16, max_num_seqs, 16))
    return sizes + [max_num_seqs]


def padded_size(sizes: list[int], n: int) -> Optional[int]:
    return next((b for b in sizes if b >= n), None)


class StaticDecodeContext(PagedContext):
    def __init__(self, kv: KVPool, states: StatePool, ops, max_batch: int, max_model_len: int,
                 scratch_block: int):
        super().__init__(kv, states, ops)
        dev = kv.k[0].device if kv.k else (states.ssm[0].device if states.ssm else torch.device("cpu"))
        bs = kv.block_size
        self.device, self.max_batch, self.max_model_len = dev, max_batch, max_model_len
        self.max_blocks = -(-max_model_len // bs)
        self.scratch_block = scratch_block
        self.meta = torch.zeros(5, max_batch, dtype=torch.int64, device=dev)
        self.lens32 = torch.ones(max_batch, dtype=torch.int32, device=dev)
        self.slot_tables = torch.zeros(states.num_slots + 1, self.max_blocks, dtype=torch.int32, device=dev)
        self.slot_tables[0, 0] = scratch_block
        self.tables_buf = torch.zeros(max_batch, self.max_blocks, dtype=torch.int32, device=dev)
        self._uploaded: dict[int, list[int]] = {}  # state slot -> the block table list its row holds
        self._decode = True
        self.max_len = max_model_len  # bounds the decode kernel's key splits: static under a graph

    def load(self, seqs, bs: int) -> None:
        """Write this step's rows (the sequences, then padding up to ``bs``) into the buffers."""
        n, bsz = len(seqs), self.kv.block_size
        if n > bs or bs > self.max_batch:
            raise ValueError(f"{n} sequences do not fit a padded batch of {bs} (max {self.max_batch})")
        pad_write = self.scratch_block * bsz
        rows = []
        for seq in seqs:
            pos, table, slot = seq.num_cached, seq.block_table, seq.state_slot
            if self._uploaded.get(slot) is not table:
                if len(table) > self.max_blocks:
                    raise ValueError(f"block table of {len(table)} blocks exceeds max_model_len's {self.max_blocks}")
                self.slot_tables[slot, :len(table)].copy_(to_device(torch.tensor(table, dtype=torch.int32),
                                                                    self.device), non_blocking=True)
                self._uploaded[slot] = table
            rows.append((seq.token_ids[pos], pos, slot, table[pos // bsz] * bsz + pos % bsz, pos + 1))
        rows += [(0, 0, 0, pad_write, 1)] * (bs - n)
        host = torch.tensor(rows, dtype=torch.int64).t().contiguous()
        self.meta[:, :bs].copy_(to_device(host, self.device), non_blocking=True)
        self.spans = [SeqSpan(i, 1, r[1]) for i, r in enumerate(rows)]

    def forget_slot(self, slot: int) -> None:
        self._uploaded.pop(slot, None)

    def step(self, model, bs: int) -> torch.Tensor:
        """The decode forward over the first ``bs`` rows of the buffers -> logits [bs, V] fp32 (device ops only)."""
        m = self.meta
        self.slot_tensor, self.write_idx = m[SLOT, :bs], m[WRITE, :bs]
        self.seq_lens, self.block_tables = self.lens32[:bs], self.tables_buf[:bs]
        self.seq_lens.copy_(m[LEN, :bs])
        torch.index_select(self.slot_tables, 0, self.slot_tensor, out=self.block_tables)
        hidden = model(m[IDS, :bs], m[POS, :bs], self)
        return model.compute_logits(hidden)

    def attend(self, attn_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
               sliding_window: Optional[int] = None) -> torch.Tensor:
        if sliding_window is not None:
            raise ValueError("the static decode step does not take sliding-window attention")
        kc, vc, bs = self.kv.k[attn_idx], self.kv.v[attn_idx], self.kv.block_size
        ks = vs = None
        if self.kv.fp8:
            ks, vs = self.kv.k_scale[attn_idx], self.kv.v_scale[attn_idx]
            write_fp8_decode(kc, ks, self.write_idx, k, bs)
            write_fp8_decode(vc, vs, self.write_idx, v, bs)
        else:
            kc.index_copy_(1, self.write_idx, k.to(kc.dtype).transpose(0, 1))
            vc.index_copy_(1, self.write_idx, v.to(vc.dtype).transpose(0, 1))
        fn = self.ops.decode_attention
        if fn is None:
            from engine.kernels.decode_attention import paged_decode_attention_torch as fn
        return fn(q, kc, vc, self.block_tables, self.seq_lens, scale, bs, ks, vs, max_len=self.max_len)
