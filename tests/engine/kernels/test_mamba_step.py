"""The Mamba2 multi-token state update (Triton, in place in the state pool, per-position checkpoints) equals
its torch reference, and the reference equals the engine's one-token ``ssd_step`` applied token by token and
the chunked scan over the same tokens. d_state 96 (Puzzle-75B, not a power of two) included."""
from __future__ import annotations

import pytest
import torch

from engine.kernels.mamba_step import mamba_multi_step_torch, mamba_multi_step_triton
from engine.ops.ssd import ssd_chunk_scan, ssd_step
from kernel_env import DEVICE


def make_case(b, T, H, P, G, N, n_slots=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    state = torch.randn(n_slots, H, P, N, generator=g)
    x = torch.randn(b, T, H, P, generator=g)
    dt = torch.nn.functional.softplus(torch.randn(b, T, H, generator=g) - 1)
    A = -torch.linspace(0.5, 4, H)
    B = torch.randn(b, T, G, N, generator=g)
    C = torch.randn(b, T, G, N, generator=g)
    D = torch.randn(H, generator=g)
    slots = torch.randperm(n_slots, generator=g)[:b].to(torch.int32)
    return state, slots, x, dt, A, B, C, D


@pytest.mark.parametrize("b,T,H,P,G,N", [(3, 1, 4, 8, 2, 16), (2, 4, 4, 16, 1, 96), (4, 3, 6, 8, 3, 8)])
@pytest.mark.parametrize("ragged", [False, True])
def test_triton_equals_reference_with_checkpoints(b, T, H, P, G, N, ragged):
    state, slots, x, dt, A, B, C, D = make_case(b, T, H, P, G, N, seed=T * N)
    n_tok = torch.tensor([T - (i % T) if ragged else T for i in range(b)], dtype=torch.int32)
    ref_state, ref_ck = state.clone(), torch.zeros(b, T, H, P, N)
    want = mamba_multi_step_torch(ref_state, slots, x, dt, A, B, C, D, n_tok, ref_ck)
    dev = lambda t: t.to(DEVICE)  # noqa: E731
    st, ck = dev(state.clone()), torch.zeros(b, T, H, P, N, device=DEVICE)
    got = mamba_multi_step_triton(st, dev(slots), dev(x), dev(dt), dev(A), dev(B), dev(C), dev(D), dev(n_tok), ck)
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(st.cpu(), ref_state, atol=1e-4, rtol=1e-4)  # other slots untouched too
    torch.testing.assert_close(ck.cpu(), ref_ck, atol=1e-4, rtol=1e-4)


def test_reference_equals_ssd_step_and_the_chunked_scan():
    b, T, H, P, G, N = 2, 5, 4, 8, 2, 16
    state, slots, x, dt, A, B, C, _ = make_case(b, T, H, P, G, N)
    s0 = state.index_select(0, slots.long()).clone()
    ck = torch.zeros(b, T, H, P, N)
    y = mamba_multi_step_torch(state, slots, x, dt, A, B, C, None, None, ck)
    s = s0
    for t in range(T):
        yt, s = ssd_step(s, x[:, t], dt[:, t], A, B[:, t], C[:, t])
        torch.testing.assert_close(y[:, t], yt, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ck[:, t], s, atol=1e-5, rtol=1e-5)
    for i in range(b):
        yc, sc = ssd_chunk_scan(x[i], dt[i], A, B[i], C[i], 4, s0[i])
        torch.testing.assert_close(y[i], yc, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(state[slots[i].long()], sc, atol=1e-4, rtol=1e-4)
