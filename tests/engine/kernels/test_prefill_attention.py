"""Chunked-prefill attention over the paged cache (Triton, all sequences of a step in one launch, causal,
GQA, fp8 + scales) equals its torch reference, and the reference equals the engine's paged attention."""
from __future__ import annotations

import random

import pytest
import torch

from engine import kv_quant
from engine.forward_context import SeqSpan, causal_attention
from engine.kernels.prefill_attention import paged_prefill_attention_torch, paged_prefill_attention_triton
from engine.paged_context import KVPool, PagedContext
from engine.state_pool import StatePool
from kernel_env import DEVICE, DOT_DTYPES, FP32_DOT_TOL

BS, KV, D = 16, 2, 16


def filled_context(store, pasts, news, H, seed):
    """A paged context whose pool holds each sequence's past + new K/V (written as the engine writes them)."""
    g = torch.Generator().manual_seed(seed)
    totals = [p + n for p, n in zip(pasts, news)]
    need = [-(-t // BS) for t in totals]
    ids = list(range(sum(need) + 2))
    random.Random(seed).shuffle(ids)
    tables, o = [], 0
    for n in need:
        tables.append(ids[o:o + n])
        o += n
    pool = KVPool(1, len(ids), BS, KV, D, store)
    ctx = PagedContext(pool, StatePool(len(totals)))
    k = torch.randn(sum(totals), KV, D, generator=g)
    v = torch.randn(sum(totals), KV, D, generator=g)
    spans, s = [], 0
    for t in totals:
        spans.append(SeqSpan(s, t, 0))
        s += t
    ctx.prepare(spans, tables, list(range(1, len(totals) + 1)))
    want_ctx = ctx.attend(0, torch.randn(sum(totals), H, D, generator=g), k, v, D ** -0.5)  # write everything
    width = max(need)
    bt = torch.tensor([t + [0] * (width - len(t)) for t in tables], dtype=torch.int32)
    q = torch.randn(sum(news), H, D, generator=g)
    starts = [sum(news[:i]) for i in range(len(news))]
    return pool, bt, q, starts, want_ctx


@pytest.mark.parametrize("store", [torch.float32, "fp8"])
def test_reference_equals_the_engine_paged_attention(store):
    store = kv_quant.FP8 if store == "fp8" else store
    pasts, news, H = [0, 40], [37, 9], 4
    pool, bt, q, starts, _ = filled_context(store, pasts, news, H, 1)
    ks, vs = (pool.k_scale[0], pool.v_scale[0]) if pool.fp8 else (None, None)
    got = paged_prefill_attention_torch(q, pool.k[0], pool.v[0], bt, starts, news, pasts, D ** -0.5, BS, ks, vs)
    # the same queries through the engine's causal attention over what the pool gives back
    tables = [[int(x) for x in row] for row in bt]
    outs = []
    for i, (p, n) in enumerate(zip(pasts, news)):
        pos = torch.arange(p + n)
        slots = torch.tensor([tables[i][x // BS] * BS + x % BS for x in pos.tolist()])
        kk = kv_quant.read_fp8(pool.k[0], ks, slots, BS) if pool.fp8 else pool.k[0][:, slots]
        vv = kv_quant.read_fp8(pool.v[0], vs, slots, BS) if pool.fp8 else pool.v[0][:, slots]
        outs.append(causal_attention(q[starts[i]:starts[i] + n], kk.transpose(0, 1), vv.transpose(0, 1),
                                     D ** -0.5, p))
    torch.testing.assert_close(got, torch.cat(outs), atol=1e-5, rtol=1e-5)


@pytest.mark.slow  # many interpreted launches: ~1 min on a loaded 2-core box
@pytest.mark.parametrize("dot", DOT_DTYPES)
@pytest.mark.parametrize("store", [torch.float32, torch.float16, "fp8"])
@pytest.mark.parametrize("pasts,news,H", [([0, 40, 5], [37, 9, 1], 4), ([70], [33], 8)])
def test_triton_equals_reference(pasts, news, H, store, dot):
    store = kv_quant.FP8 if store == "fp8" else store
    pool, bt, q, starts, _ = filled_context(store, pasts, news, H, sum(news))
    ks, vs = (pool.k_scale[0], pool.v_scale[0]) if pool.fp8 else (None, None)
    want = paged_prefill_attention_torch(q, pool.k[0], pool.v[0], bt, starts, news, pasts, D ** -0.5, BS, ks, vs)
    mv = lambda t: None if t is None else t.to(DEVICE)  # noqa: E731
    qin = mv(q).to(torch.float16) if dot == torch.float16 else mv(q)
    got = paged_prefill_attention_triton(qin, mv(pool.k[0]), mv(pool.v[0]), mv(bt), starts, news, pasts,
                                         D ** -0.5, BS, mv(ks), mv(vs), dot_dtype=dot, block_m=16, block_n=16)
    tol = FP32_DOT_TOL if dot == torch.float32 and store == torch.float32 else 2e-2
    torch.testing.assert_close(got.float().cpu(), want, atol=tol, rtol=tol)
