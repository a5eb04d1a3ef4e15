"""FP8 KV with per-(block, kv head) power-of-two scales: values of any magnitude round-trip within e4m3's
precision, blocks filled a token at a time equal blocks written at once, and attention over fp8 + scales
stays within tolerance of bf16 attention where the unscaled cast breaks (clipped at 448 or NaN, zeros below 2^-9)."""
from __future__ import annotations

import pytest
import torch

from engine import kv_quant
from engine.forward_context import SeqSpan, causal_attention
from engine.paged_context import KVPool, PagedContext
from engine.state_pool import StatePool

KV, HD, BS = 2, 16, 16


def pool_of(n_blocks: int):
    return torch.empty(KV, n_blocks * BS, HD, dtype=kv_quant.FP8), kv_quant.new_scales(KV, n_blocks, "cpu")


@pytest.mark.parametrize("magnitude", [1e3, 1.0, 1e-3, 1e-6])
def test_values_of_any_magnitude_round_trip_within_e4m3_precision(magnitude):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, KV, HD, generator=g) * magnitude
    pool, scales = pool_of(4)
    slots = torch.arange(40)
    kv_quant.write_fp8(pool, scales, slots, x, BS)
    back = kv_quant.read_fp8(pool, scales, slice(0, 40), BS).transpose(0, 1)
    amax = x.abs().amax()
    assert torch.isfinite(back).all()
    assert ((back - x).abs() <= x.abs() * 2 ** -4 + amax * 2 ** -12).all()
    raw = x.to(kv_quant.FP8).float()  # the old unscaled store: clipped at 448, or flushed to zero below 2^-9
    raw_err = (raw - x).abs().max() / amax
    assert raw_err > 0.1 if magnitude != 1.0 else raw_err < 0.1


def test_token_by_token_writes_equal_one_write_and_scattered_reads():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(48, KV, HD, generator=g) * torch.logspace(-2, 2, 48)[:, None, None]  # growing magnitudes
    slots = torch.tensor([b * BS + i for b in (2, 0, 3) for i in range(BS)])  # a scattered block table
    once, once_s = pool_of(4)
    kv_quant.write_fp8(once, once_s, slots, x, BS)
    step, step_s = pool_of(4)
    for t in range(48):  # decode: one token at a time, so the block exponents grow and rescale old entries
        kv_quant.write_fp8(step, step_s, slots[t:t + 1], x[t:t + 1], BS)
    assert torch.equal(once_s, step_s)
    a = kv_quant.read_fp8(once, once_s, slots, BS)
    b = kv_quant.read_fp8(step, step_s, slots, BS)
    amax = x.abs().amax(dim=(0, 2))[:, None, None]
    assert ((a - b).abs() <= amax * 2 ** -12).all()  # exact but for fp8 subnormals after a shift
    assert ((b.transpose(0, 1) - x).abs() <= x.abs() * 2 ** -4 + amax.transpose(0, 1) * 2 ** -10).all()


@pytest.mark.parametrize("magnitude", [300.0, 1.0, 1e-4])
def test_paged_fp8_attention_stays_close_to_bf16_attention(magnitude):
    H, past, new = 4, 70, 3
    g = torch.Generator().manual_seed(2)
    k = torch.randn(past + new, KV, HD, generator=g) * magnitude
    v = torch.randn(past + new, KV, HD, generator=g) * magnitude
    q = torch.randn(new, H, HD, generator=g) / magnitude
    pool = KVPool(1, 8, BS, KV, HD, kv_quant.FP8)
    ctx = PagedContext(pool, StatePool(1))
    table = [3, 4, 5, 6, 7]
    ctx.prepare([SeqSpan(0, past, 0)], [table], [1])
    ctx.attend(0, torch.randn(past, H, HD), k[:past], v[:past], HD ** -0.5)
    ctx.prepare([SeqSpan(0, new, past)], [table], [1])
    got = ctx.attend(0, q, k[past:], v[past:], HD ** -0.5)
    want = causal_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), HD ** -0.5, past).float()
    exact = causal_attention(q, k, v, HD ** -0.5, past)
    err, bf16_err = (got - exact).abs().max(), (want - exact).abs().max()
    assert torch.isfinite(got).all()
    assert err <= 0.08 * magnitude and err <= 20 * bf16_err + 1e-3 * magnitude


def test_snapshot_block_copy_carries_the_scales():
    pool = KVPool(1, 3, BS, KV, HD, kv_quant.FP8)
    x = torch.randn(BS, KV, HD) * 1000
    kv_quant.write_fp8(pool.k[0], pool.k_scale[0], torch.arange(BS), x, BS)
    pool.copy_blocks([(0, 2)])
    assert torch.equal(pool.k_scale[0][:, 2], pool.k_scale[0][:, 0])
    back = kv_quant.read_fp8(pool.k[0], pool.k_scale[0], slice(2 * BS, 3 * BS), BS).transpose(0, 1)
    assert ((back - x).abs() <= x.abs() * 2 ** -4 + 1).all()


def test_write_with_host_computed_blocks_equals_the_unique_path():
    """The step's touched blocks from its host lists (no torch.unique / any / nonzero per layer) store the same
    bytes and scales, including a block whose exponent grows and one that does not."""
    from engine import kv_quant

    g = torch.Generator().manual_seed(3)
    bs, KV, D = 4, 2, 8
    slots = [5, 6, 7, 8, 9, 20, 21]
    pools = [torch.zeros(KV, 32, D, dtype=kv_quant.FP8) for _ in range(2)]
    scales = [kv_quant.new_scales(KV, 8, "cpu") for _ in range(2)]
    for step, mult in enumerate((1.0, 50.0, 0.01)):
        x = torch.randn(len(slots), KV, D, generator=g) * mult
        ub, inv = kv_quant.touched_blocks(slots, bs)
        assert ub == [1, 2, 5] and inv == [0, 0, 0, 1, 1, 2, 2]
        t = torch.tensor(slots)
        kv_quant.write_fp8(pools[0], scales[0], t, x, bs)
        kv_quant.write_fp8(pools[1], scales[1], t, x, bs, (torch.tensor(ub), torch.tensor(inv)))
        assert torch.equal(pools[0].view(torch.uint8), pools[1].view(torch.uint8)), step
        assert torch.equal(scales[0], scales[1])
