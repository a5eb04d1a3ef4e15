"""Paged attention reads the same past however the blocks lie: consecutive blocks (a view of the pool),
scattered blocks (a gather), short pasts (one SDPA call) and long ones (block by block past LONG_CONTEXT),
fp32 / bf16 / fp8 storage; two sequences in one step. Reference: causal attention over the stored values."""
import random

import pytest
import torch

from engine.forward_context import SeqSpan, causal_attention
from engine.paged_context import LONG_CONTEXT, KVPool, PagedContext
from engine.state_pool import StatePool

H, KV, HD, BS = 4, 2, 16, 16


def stored(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """What the pool gives back: the value in the store dtype; FP8 with one power-of-two scale per
    16-token block and kv head (positions 0.. of the sequence are block-aligned here)."""
    if dtype != torch.float8_e4m3fn:
        return x.to(dtype).float()
    n = x.shape[0]
    blocks = torch.nn.functional.pad(x, (0, 0, 0, 0, 0, (-n) % BS)).view(-1, BS, *x.shape[1:])
    e = torch.ceil(torch.log2(blocks.abs().amax(dim=(1, 3), keepdim=True) / 448))
    q = (blocks / 2 ** e).to(dtype).float() * 2 ** e
    return q.view(-1, *x.shape[1:])[:n]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float8_e4m3fn])
@pytest.mark.parametrize("past,new", [(90, 1), (90, 7), (LONG_CONTEXT + 300, 1), (LONG_CONTEXT + 300, 9),
                                      (LONG_CONTEXT + 300, 40)])
@pytest.mark.parametrize("scattered", [False, True])
def test_paged_attention_equals_causal_attention_over_the_stored_past(dtype, past, new, scattered):
    g = torch.Generator().manual_seed(past + new)
    lengths = [past + new, 40 + new]  # a second, short sequence in the same step
    need = [-(-n // BS) for n in lengths]
    ids = list(range(sum(need) + 3))
    if scattered:
        random.Random(past).shuffle(ids)
    tables = [ids[:need[0]], ids[need[0]:need[0] + need[1]]]
    pool = KVPool(1, len(ids), BS, KV, HD, dtype)
    ctx = PagedContext(pool, StatePool(2))
    k_all = [torch.randn(n, KV, HD, generator=g) for n in lengths]
    v_all = [torch.randn(n, KV, HD, generator=g) for n in lengths]
    q_new = [torch.randn(new, H, HD, generator=g) for _ in lengths]
    # step 1: the pasts
    pasts = [n - new for n in lengths]
    ctx.prepare([SeqSpan(0, pasts[0], 0), SeqSpan(pasts[0], pasts[1], 0)], tables, [1, 2])
    ctx.attend(0, torch.randn(sum(pasts), H, HD), torch.cat([k[:p] for k, p in zip(k_all, pasts)]),
               torch.cat([v[:p] for v, p in zip(v_all, pasts)]), 0.25)
    # step 2: the new tokens of both sequences
    ctx.prepare([SeqSpan(0, new, pasts[0]), SeqSpan(new, new, pasts[1])], tables, [1, 2])
    got = ctx.attend(0, torch.cat(q_new), torch.cat([k[-new:] for k in k_all]),
                     torch.cat([v[-new:] for v in v_all]), 0.25)
    want = torch.cat([causal_attention(q, stored(k, dtype), stored(v, dtype), 0.25, p)
                      for q, k, v, p in zip(q_new, k_all, v_all, pasts)])
    assert isinstance(ctx.read[0], slice) != scattered
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_snapshot_block_copies_move_every_layer():
    pool = KVPool(2, 4, BS, KV, HD, torch.float32)
    for t in pool.k + pool.v:
        t.normal_()
    pool.copy_blocks([(1, 3)])
    for t in pool.k + pool.v:
        assert torch.equal(t[:, 3 * BS:4 * BS], t[:, BS:2 * BS])


def test_block_tables_become_tensors_once_per_sequence_not_every_step():
    """A 1M-token sequence has 62,500 blocks: its table is converted when first seen and reused while the
    scheduler keeps the same list; a new list (a new sequence) is converted anew."""
    pool = KVPool(1, 70_000, BS, KV, HD, torch.float32)
    ctx = PagedContext(pool, StatePool(1))
    table = list(range(62_500))
    ctx.prepare([SeqSpan(0, 1, 999_999)], [table], [1])
    first = ctx._tables[id(table)][2]
    assert ctx.read[0] == slice(0, 1_000_000)
    ctx.prepare([SeqSpan(0, 1, 1_000_000 - 2)], [table], [1])
    assert ctx._tables[id(table)][2] is first
    other = list(range(62_500, 62_500 + 70)) + [0]
    ctx.prepare([SeqSpan(0, 1, 70 * BS)], [other], [1])
    assert id(table) not in ctx._tables and not isinstance(ctx.read[0], slice)
    assert ctx.read[0].tolist() == list(range(62_500 * BS, 62_570 * BS)) + [0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_long_prefill_flash_parts_merge_to_causal_attention(dtype):
    """A prefill chunk after a long past: the past read in key blocks (and in one piece) plus the chunk's own
    causal block, merged by log-sum-exp, equal causal attention over everything."""
    from engine.kernels.cpu_prefill_attention import prefix_flash_attention

    g = torch.Generator().manual_seed(5)
    past, L = 700, 48
    k = torch.randn(past + L, KV, HD, generator=g).to(dtype)
    v = torch.randn(past + L, KV, HD, generator=g).to(dtype)
    q = torch.randn(L, H, HD, generator=g)
    want = causal_attention(q, k.float(), v.float(), 0.3, past)
    for whole, block in ((False, 256), (True, 256), (False, 10_000)):
        got = prefix_flash_attention(q, lambda a, b: (k[a:b], v[a:b]), past, 0.3, whole_past=whole, key_block=block)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_opt_in_bf16_long_prefill_stays_close_on_a_bf16_pool(monkeypatch):
    """LONG_PREFILL_BF16 computes a long chunk's attention in bf16 on the pool's view: close to the fp32
    computation over the same stored values (q and probabilities rounded to bf16), not equal."""
    import engine.paged_context as paged

    g = torch.Generator().manual_seed(9)
    past, new = LONG_CONTEXT + 100, 40
    pool = KVPool(1, -(-(past + new) // BS) + 1, BS, KV, HD, torch.bfloat16)
    ctx = PagedContext(pool, StatePool(1))
    table = list(range(-(-(past + new) // BS)))
    k, v = torch.randn(past + new, KV, HD, generator=g), torch.randn(past + new, KV, HD, generator=g)
    ctx.prepare([SeqSpan(0, past, 0)], [table], [0])
    ctx.attend(0, torch.randn(past, H, HD, generator=g), k[:past], v[:past], 0.25)
    q = torch.randn(new, H, HD, generator=g)
    outs = []
    for flag in (False, True):
        monkeypatch.setattr(paged, "LONG_PREFILL_BF16", flag)
        ctx.prepare([SeqSpan(0, new, past)], [table], [0])
        outs.append(ctx.attend(0, q, k[past:], v[past:], 0.25))
    assert outs[1].dtype == torch.float32
    torch.testing.assert_close(outs[1], outs[0], rtol=0, atol=1e-2)
    assert not torch.equal(outs[1], outs[0])
