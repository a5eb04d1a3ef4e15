"""Paged decode attention (Triton, one launch for the batch, split over the key range) equals its torch
reference: GQA groups, scattered block tables, ragged lengths, one and many splits, fp32 / fp16 / fp8 pools
with per-(block, kv head) scales."""
from __future__ import annotations

import random

import pytest
import torch

from engine import kv_quant
from engine.kernels.decode_attention import paged_decode_attention_torch, paged_decode_attention_triton
from kernel_env import DEVICE, DOT_DTYPES, FP32_DOT_TOL

BS = 16


def make_case(B, H, KV, D, lens, store, seed=0):
    g = torch.Generator().manual_seed(seed)
    need = [-(-n // BS) for n in lens]
    ids = list(range(sum(need) + 2))
    random.Random(seed).shuffle(ids)
    max_blocks = max(need)
    table = torch.zeros(B, max_blocks, dtype=torch.int32)
    o = 0
    for b, n in enumerate(need):
        table[b, :n] = torch.tensor(ids[o:o + n])
        o += n
    S = len(ids) * BS
    k = torch.randn(S, KV, D, generator=g) * 3
    v = torch.randn(S, KV, D, generator=g)
    q = torch.randn(B, H, D, generator=g)
    if store == "fp8":
        kc, vc = torch.empty(KV, S, D, dtype=kv_quant.FP8), torch.empty(KV, S, D, dtype=kv_quant.FP8)
        ks, vs = kv_quant.new_scales(KV, len(ids), "cpu"), kv_quant.new_scales(KV, len(ids), "cpu")
        kv_quant.write_fp8(kc, ks, torch.arange(S), k, BS)
        kv_quant.write_fp8(vc, vs, torch.arange(S), v, BS)
    else:
        kc, vc = k.transpose(0, 1).contiguous().to(store), v.transpose(0, 1).contiguous().to(store)
        ks = vs = None
    mv = lambda t: None if t is None else t.to(DEVICE)  # noqa: E731
    return (q.to(DEVICE), mv(kc), mv(vc), table.to(DEVICE), torch.tensor(lens, dtype=torch.int32, device=DEVICE),
            mv(ks), mv(vs))


@pytest.mark.slow  # many interpreted launches: ~1 min on a loaded 2-core box
@pytest.mark.parametrize("dot", DOT_DTYPES)
@pytest.mark.parametrize("store", [torch.float32, torch.float16, "fp8"])
@pytest.mark.parametrize("B,H,KV,D,lens,block_n,target", [
    (3, 4, 2, 16, [1, 37, 70], 16, 1),  # one split per sequence
    (2, 8, 2, 32, [300, 129], 32, 64),  # many splits, GQA group 4
    (2, 4, 1, 16, [17, 260], 16, 8),  # MQA
])
def test_triton_equals_reference(B, H, KV, D, lens, block_n, target, store, dot):
    q, kc, vc, table, seq_lens, ks, vs = make_case(B, H, KV, D, lens, store, seed=sum(lens))
    if dot == torch.float16:
        q = q.half()
    want = paged_decode_attention_torch(q.float(), kc, vc, table, seq_lens, D ** -0.5, BS, ks, vs)
    got = paged_decode_attention_triton(q, kc, vc, table, seq_lens, D ** -0.5, BS, ks, vs, dot_dtype=dot,
                                        block_n=block_n, target_programs=target)
    tol = FP32_DOT_TOL if dot == torch.float32 and store == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), want, atol=tol, rtol=tol)
