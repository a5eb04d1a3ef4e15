"""Batched CPU decode attention (engine/kernels/cpu_decode_attention.py) equals per-sequence attention: the
plan groups equally spaced pasts into one strided SDPA call (shorter ones masked), leaves unrelated ones
alone, gathers scattered ones, folds verify steps, and the paged context with ``cpu`` ops returns what the
per-sequence ``default`` path returns."""
import random

import pytest
import torch

from engine.forward_context import SeqSpan, causal_attention
from engine.kernels import select_ops
from engine.kernels.cpu_decode_attention import paged_decode_attention_cpu, plan_decode
from engine.kernels.decode_attention import paged_decode_attention_torch
from engine.paged_context import KVPool, PagedContext
from engine.state_pool import StatePool

H, KV, HD, BS = 6, 2, 16, 8


def test_plan_groups_equally_spaced_pasts_and_splits_the_rest():
    reads = [slice(0, 30), slice(64, 94), slice(128, 150), slice(200, 230), torch.arange(5)]
    plan = plan_decode([0, 1, 2, 3, 4], [1] * 5, [29, 29, 21, 29, 4], reads, pool_slots=1024)
    sizes = sorted((g.n, g.start, g.stride) for g in plan.groups)
    assert sizes == [(1, 200, 0), (3, 0, 64)]  # 0, 64, 128 equally spaced; 200 is not
    big = [g for g in plan.groups if g.n == 3][0]
    assert big.keys == 30 and big.mask is not None and torch.isinf(big.mask[2, 0, 0, 22:]).all()
    assert len(plan.gathers) == 1 and plan.rest == []
    # a window that would run past the pool's end is not batched
    plan = plan_decode([0, 1], [1, 1], [9, 29], [slice(0, 10), slice(40, 70)], pool_slots=60)
    assert sorted(g.n for g in plan.groups) == [1, 1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scattered", [False, True])
def test_kernel_contract_equals_the_torch_reference(dtype, scattered):
    g = torch.Generator().manual_seed(3)
    lens = [37, 37, 20, 61, 5]
    need = [-(-n // BS) for n in lens]
    ids = list(range(sum(need) + 4))
    if scattered:
        random.Random(1).shuffle(ids)
    tables, at = [], 0
    for n in need:
        tables.append(ids[at:at + n])
        at += n
    bt = torch.tensor([t + [0] * (max(need) - len(t)) for t in tables], dtype=torch.int32)
    kc = torch.randn(KV, len(ids) * BS, HD, generator=g).to(dtype)
    vc = torch.randn(KV, len(ids) * BS, HD, generator=g).to(dtype)
    q = torch.randn(len(lens), H, HD, generator=g).to(dtype)
    sl = torch.tensor(lens, dtype=torch.int32)
    got = paged_decode_attention_cpu(q, kc, vc, bt, sl, 0.3, BS)
    want = paged_decode_attention_torch(q, kc, vc, bt, sl, 0.3, BS)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("store", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("new", [[1] * 6, [4] * 6, [1, 3, 5, 2, 4, 1]])
def test_paged_context_cpu_ops_equal_the_per_sequence_path(store, new):
    """Six sequences: four admitted together (equal reservations: one strided group with different pasts),
    one elsewhere, one whose blocks are scattered; decode, verify-sized steps and verify steps of different
    lengths (shorter members padded)."""
    pasts = [50, 43, 50, 31, 70, 26]
    reserve = 12  # blocks per sequence
    tables = [list(range(i * reserve, (i + 1) * reserve)) for i in range(4)]
    tables.append(list(range(4 * reserve + 5, 5 * reserve + 5)))
    tables.append([70, 90, 71, 88, 72, 99, 73, 95, 74, 80, 75, 85])
    outs = {}
    for name in ("default", "cpu"):
        pool = KVPool(1, 110, BS, KV, HD, store)
        ctx = PagedContext(pool, StatePool(6), select_ops("cpu", name))
        gen = torch.Generator().manual_seed(7)
        n_past = sum(pasts)
        ctx.prepare([SeqSpan(sum(pasts[:i]), p, 0) for i, p in enumerate(pasts)], tables, list(range(6)))
        ctx.attend(0, torch.randn(n_past, H, HD, generator=gen), torch.randn(n_past, KV, HD, generator=gen),
                   torch.randn(n_past, KV, HD, generator=gen), 0.25)
        T = sum(new)
        ctx.prepare([SeqSpan(sum(new[:i]), n, p) for i, (n, p) in enumerate(zip(new, pasts))], tables,
                    list(range(6)))
        outs[name] = ctx.attend(0, torch.randn(T, H, HD, generator=gen), torch.randn(T, KV, HD, generator=gen),
                                torch.randn(T, KV, HD, generator=gen), 0.25)
        if name == "cpu":
            assert max(gr.n for gr in ctx._plan.groups) == 4 and len(ctx._plan.gathers) == 1
    torch.testing.assert_close(outs["cpu"], outs["default"], rtol=1e-5, atol=1e-5)


def test_the_cpu_pool_starts_as_zeros():
    pool = KVPool(2, 64, BS, KV, HD, torch.bfloat16)
    assert all(int(t.count_nonzero()) == 0 for t in pool.k + pool.v)
