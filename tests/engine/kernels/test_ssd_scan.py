"""The SSD chunked-scan kernel (Triton, state kept in registers across chunks) equals the engine's torch
chunked scan (engine/ops/ssd.py): y and the final state, with and without an initial state, lengths that are
not a multiple of the chunk, groups, d_state 96 (Puzzle)."""
from __future__ import annotations

import pytest
import torch

from engine.kernels.ssd_scan import ssd_chunk_scan_triton
from engine.ops.ssd import ssd_chunk_scan
from kernel_env import DEVICE


@pytest.mark.parametrize("L,H,P,G,N,Q", [(40, 4, 8, 2, 16, 16), (33, 2, 16, 1, 96, 16), (16, 3, 8, 3, 8, 16)])
@pytest.mark.parametrize("with_state", [False, True])
def test_triton_equals_the_torch_chunked_scan(L, H, P, G, N, Q, with_state):
    g = torch.Generator().manual_seed(L * N)
    x = torch.randn(L, H, P, generator=g)
    dt = torch.nn.functional.softplus(torch.randn(L, H, generator=g) - 1)
    A = -torch.linspace(0.5, 3, H)
    B = torch.randn(L, G, N, generator=g)
    C = torch.randn(L, G, N, generator=g)
    s0 = torch.randn(H, P, N, generator=g) if with_state else None
    want_y, want_s = ssd_chunk_scan(x, dt, A, B, C, Q, s0)
    mv = lambda t: None if t is None else t.to(DEVICE)  # noqa: E731
    got_y, got_s = ssd_chunk_scan_triton(mv(x), mv(dt), mv(A), mv(B), mv(C), Q, mv(s0))
    tol = 1e-3  # on a GPU too: the scan's fp32 dots run as true fp32 (input_precision="ieee"), not TF32
    torch.testing.assert_close(got_y.cpu(), want_y, atol=tol, rtol=tol)
    torch.testing.assert_close(got_s.cpu(), want_s, atol=tol, rtol=tol)


def test_fp32_dots_are_ieee_and_half_dots_keep_the_default():
    """The precision every kernel passes to tl.dot: fp32 operands multiply as fp32 (a GPU's default is TF32)."""
    import triton.language as tl

    from engine.kernels.decode_attention import _precision
    assert _precision(tl.float32) == "ieee"
    assert _precision(tl.float16) == _precision(tl.bfloat16) == "tf32"
