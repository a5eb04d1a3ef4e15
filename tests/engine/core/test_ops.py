"""Kernels against naive references: causal GQA attention (past, sliding window) and the SSD chunked scan
against the token-by-token recurrence (initial state, n_groups, lengths not a multiple of the chunk)."""
import math

import pytest
import torch

from engine.forward_context import causal_attention
from engine.ops.ssd import causal_conv1d, causal_conv1d_step, ssd_chunk_scan, ssd_step


def naive_attention(q, k, v, scale, past_len, window=None):
    L, H, _ = q.shape
    S, KV, _ = k.shape
    out = torch.zeros_like(q)
    for i in range(L):
        pos = past_len + i
        lo = 0 if window is None else max(0, pos - window + 1)
        for h in range(H):
            kv = h // (H // KV)
            w = torch.softmax((k[lo:pos + 1, kv] @ q[i, h]) * scale, dim=0)
            out[i, h] = w @ v[lo:pos + 1, kv]
    return out


@pytest.mark.parametrize("L,past,window", [(1, 0, None), (1, 30, None), (5, 12, None), (9, 0, 4), (1, 20, 6),
                                           (6, 10, 3), (9, 0, None), (20, 0, None), (20, 7, None), (20, 5, 6)])
def test_causal_attention_matches_naive(L, past, window):
    g = torch.Generator().manual_seed(L * 100 + past)
    q, k, v = torch.randn(L, 6, 8, generator=g), torch.randn(past + L, 2, 8, generator=g), torch.randn(past + L, 2, 8, generator=g)
    got = causal_attention(q, k, v, 0.35, past, window)
    assert (got - naive_attention(q, k, v, 0.35, past, window)).abs().max() < 1e-5


def test_ssd_chunk_scan_equals_recurrence_from_a_given_state():
    g = torch.Generator().manual_seed(0)
    L, H, P, G, N = 37, 6, 4, 3, 5
    x, B, C = torch.randn(L, H, P, generator=g), torch.randn(L, G, N, generator=g), torch.randn(L, G, N, generator=g)
    dt = torch.nn.functional.softplus(torch.randn(L, H, generator=g))
    A = -torch.rand(H, generator=g) * 3
    state0 = torch.randn(H, P, N, generator=g)
    y, final = ssd_chunk_scan(x, dt, A, B, C, chunk_size=8, initial_state=state0)
    state, ys = state0[None], []
    for t in range(L):
        yt, state = ssd_step(state, x[t:t + 1], dt[t:t + 1], A, B[t:t + 1], C[t:t + 1])
        ys.append(yt[0])
    assert (y - torch.stack(ys)).abs().max() < 1e-4
    assert (final - state[0]).abs().max() < 1e-4
    # a prefix then the rest, continued from the prefix's final state, equals one scan
    y1, s1 = ssd_chunk_scan(x[:11], dt[:11], A, B[:11], C[:11], 8, state0)
    y2, s2 = ssd_chunk_scan(x[11:], dt[11:], A, B[11:], C[11:], 8, s1)
    assert (torch.cat([y1, y2]) - y).abs().max() < 1e-4 and (s2 - final).abs().max() < 1e-4


def test_causal_conv_prefill_and_steps_agree():
    g = torch.Generator().manual_seed(1)
    C, K, L = 10, 4, 9
    x, w, b = torch.randn(C, L, generator=g), torch.randn(C, K, generator=g), torch.randn(C, generator=g)
    state0 = torch.randn(C, K - 1, generator=g)
    y, state = causal_conv1d(x, state0, w, b)
    s, ys = state0[None], []
    for t in range(L):
        yt, s = causal_conv1d_step(x[None, :, t], s, w, b)
        ys.append(yt[0])
    assert (y - torch.stack(ys, dim=1)).abs().max() < 1e-5 and torch.equal(state, s[0])
    # shorter than the kernel: state keeps the right history
    y_short, st = causal_conv1d(x[:, :2], state0, w, b)
    assert torch.equal(st, torch.cat([state0, x[:, :2]], dim=1)[:, -3:]) and y_short.shape == (C, 2)


@pytest.mark.slow
def test_rope_llama3_scaling_matches_transformers():
    pytest.importorskip("transformers")
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from engine.layers.embedding import RotaryEmbedding

    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
    cfg = LlamaConfig(hidden_size=256, num_attention_heads=4, rope_parameters={"rope_theta": 500000.0, **scaling})
    ref, _ = ROPE_INIT_FUNCTIONS["llama3"](cfg, "cpu")
    ours = RotaryEmbedding(64, 500000.0, scaling).inv_freq
    assert torch.allclose(ours, ref.float(), rtol=1e-6)
    assert not math.isclose(float(ours[-1]), float(RotaryEmbedding(64, 500000.0).inv_freq[-1]))
