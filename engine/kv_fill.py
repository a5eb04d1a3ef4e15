"""Fill running sequences' caches without a prefill: the fast path of benchmarks at lengths a CPU cannot prefill.

A 1M-token prefill is quadratic in attention (hours on two cores). To measure what decoding over long cached
contexts costs, ``admit_filled`` admits requests through the scheduler (their KV blocks and state slot reserved as
for any request), writes K/V for every prompt token but the last straight into their blocks through the pool's own
write path (FP8 pools: ``kv_quant.write_fp8``, scales and all), and marks those tokens cached. The next engine step
feeds the last prompt token as a one-token chunk and samples; from then on the sequence decodes over the filled
cache like a prefilled one. By default the K/V are seeded random N(0, 1) values and the Mamba state stays the
empty state: not what the model would compute (the tokens it decodes mean nothing), but the memory and the bytes
each step reads are the real ones. ``kv_values`` supplies real values instead (the test copies a prefilled
sequence's cache and gets its greedy continuation back).
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

from engine import kv_quant

# (sequence index, attention layer, first position, count) -> (k, v), each [count, n_kv, head_dim]
KvValues = Callable[[int, int, int, int], tuple[torch.Tensor, torch.Tensor]]


def admit_filled(engine, seqs: list, kv_values: Optional[KvValues] = None, seed: int = 0,
                 chunk_tokens: int = 1 << 16) -> None:
    """Admit ``seqs`` (added with ``engine.add_request``, still waiting) now, with all their prompt tokens but the
    last cached. Raises when one cannot be admitted (no free slot or blocks) or starts from a snapshot."""
    sched = engine.scheduler
    gen = torch.Generator().manual_seed(seed)
    for i, seq in enumerate(seqs):
        if seq.snapshot is not None:
            raise ValueError("admit_filled takes requests without a snapshot")
        if seq not in sched.waiting:
            raise ValueError(f"{seq.request_id} is not waiting")
        if len(sched.running) >= sched.config.max_num_seqs or not sched._try_admit(seq):  # the scheduler's own
            # admission: reserves prompt + max_tokens blocks and a state slot
            raise RuntimeError(f"{seq.request_id} cannot be admitted now: {len(sched.running)} running, "
                               f"{sched.blocks.num_free} KV blocks free")
        sched.waiting.remove(seq)
        n = seq.prompt_len - 1
        values = kv_values or _random_values(engine.runner.kv, gen)
        write_kv(engine.runner.kv, seq.block_table, n, lambda layer, start, count: values(i, layer, start, count),
                 chunk_tokens)
        seq.num_cached = n


def _random_values(kv, gen: torch.Generator) -> KvValues:
    n_kv, hd = kv.k[0].shape[0], kv.k[0].shape[2]

    def values(_seq: int, _layer: int, _start: int, count: int):
        return (torch.randn(count, n_kv, hd, generator=gen), torch.randn(count, n_kv, hd, generator=gen))
    return values


def write_kv(kv, table: list[int], n_tokens: int, values: Callable[[int, int, int], tuple[torch.Tensor, torch.Tensor]],
             chunk_tokens: int = 1 << 16) -> None:
    """Write positions [0, n_tokens) of a sequence with block table ``table`` into every attention layer of pool
    ``kv``, ``chunk_tokens`` positions at a time (bounded temporaries)."""
    bs = kv.block_size
    if -(-n_tokens // bs) > len(table):
        raise ValueError(f"{n_tokens} tokens need {-(-n_tokens // bs)} blocks; the table has {len(table)}")
    step = max(bs, chunk_tokens // bs * bs)
    offsets = torch.arange(bs)
    for start in range(0, n_tokens, step):
        count = min(step, n_tokens - start)
        blocks = table[start // bs: -(-(start + count) // bs)]
        slots = (torch.tensor(blocks)[:, None] * bs + offsets).flatten()[:count]
        dev_slots = slots.to(kv.k[0].device)
        touched = None
        if kv.fp8:
            ub, inv = kv_quant.touched_blocks(slots.tolist(), bs)
            touched = (torch.tensor(ub, device=dev_slots.device), torch.tensor(inv, device=dev_slots.device))
        for layer in range(len(kv.k)):
            k, v = values(layer, start, count)
            for pool, scales, x in ((kv.k[layer], kv.k_scale[layer] if kv.fp8 else None, k),
                                    (kv.v[layer], kv.v_scale[layer] if kv.fp8 else None, v)):
                x = x.to(pool.device)
                if kv.fp8:
                    kv_quant.write_fp8(pool, scales, dev_slots, x, bs, touched)
                else:
                    pool.index_copy_(1, dev_slots, x.to(pool.dtype).transpose(0, 1))
