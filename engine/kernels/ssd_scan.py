"""Mamba2 SSD chunked scan for prefill in one launch per sequence and layer: grid (head, head_dim tile); each
program walks the chunks in order, keeping its [head_dim tile, d_state] state in registers. Per chunk of Q
tokens (a = dt * A, cumulative within the chunk):
    y     = (C B^T * exp(a_l - a_s) [s <= l]) (dt x)  +  exp(a_l) C state^T
    state = exp(a_last) state + (dt x * exp(a_last - a_s))^T B
so nothing of size [heads, chunks, Q, Q] is materialized (the torch path in engine/ops/ssd.py does).
Reference: ``engine.ops.ssd.ssd_chunk_scan`` (same contract: y without the D skip, and the final state).
"""
from __future__ import annotations

from typing import Optional

import torch

_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def ssd_scan_kernel(X, DT, A, Bm, Cm, S0, Y, SF, L,
                        stride_xl, stride_xh, stride_dl, stride_bl, stride_bg, stride_yl, stride_yh,
                        stride_sh, stride_sp,
                        HEADS_PER_GROUP: tl.constexpr, P: tl.constexpr, N: tl.constexpr, Q: tl.constexpr,
                        BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr, HAS_S0: tl.constexpr, DOT: tl.constexpr,
                        PREC: tl.constexpr):
        h = tl.program_id(0)
        pb = tl.program_id(1)
        grp = h // HEADS_PER_GROUP
        p = pb * BLOCK_P + tl.arange(0, BLOCK_P)
        n = tl.arange(0, BLOCK_N)
        l_idx = tl.arange(0, Q)
        pm = p < P
        nm = n < N
        a_h = tl.load(A + h).to(tl.float32)
        state = tl.zeros([BLOCK_P, BLOCK_N], tl.float32)
        if HAS_S0:
            state = tl.load(S0 + h * stride_sh + p[:, None] * stride_sp + n[None, :],
                            mask=pm[:, None] & nm[None, :], other=0.0)
        for c0 in range(0, L, Q):
            t = c0 + l_idx
            tm = t < L
            dt = tl.load(DT + t * stride_dl + h, mask=tm, other=0.0).to(tl.float32)  # padding: dt = 0
            a_cum = tl.cumsum(dt * a_h, 0)  # [Q]
            x = tl.load(X + t[:, None] * stride_xl + h * stride_xh + p[None, :], mask=tm[:, None] & pm[None, :],
                        other=0.0).to(tl.float32)
            b = tl.load(Bm + t[:, None] * stride_bl + grp * stride_bg + n[None, :], mask=tm[:, None] & nm[None, :],
                        other=0.0).to(tl.float32)
            cc = tl.load(Cm + t[:, None] * stride_bl + grp * stride_bg + n[None, :], mask=tm[:, None] & nm[None, :],
                         other=0.0).to(tl.float32)
            xdt = x * dt[:, None]  # [Q, BP]
            scores = tl.dot(cc.to(DOT), tl.trans(b.to(DOT)), out_dtype=tl.float32,
                            input_precision=PREC)  # [Q(l), Q(s)]
            diff = a_cum[:, None] - a_cum[None, :]
            causal = l_idx[None, :] <= l_idx[:, None]
            scores = scores * tl.exp(tl.where(causal, diff, float("-inf")))
            y = tl.dot(scores.to(DOT), xdt.to(DOT), out_dtype=tl.float32, input_precision=PREC)  # [Q, BP]
            y += tl.dot(cc.to(DOT), tl.trans(state.to(DOT)), out_dtype=tl.float32,
                        input_precision=PREC) * tl.exp(a_cum)[:, None]
            tl.store(Y + t[:, None] * stride_yl + h * stride_yh + p[None, :], y, mask=tm[:, None] & pm[None, :])
            a_last = tl.sum(tl.where(l_idx == Q - 1, a_cum, 0.0), 0)
            decay = tl.exp(a_last - a_cum)  # [Q]
            state = state * tl.exp(a_last) + tl.dot(tl.trans((xdt * decay[:, None]).to(DOT)), b.to(DOT),
                                                    out_dtype=tl.float32, input_precision=PREC)
        tl.store(SF + h * stride_sh + p[:, None] * stride_sp + n[None, :], state, mask=pm[:, None] & nm[None, :])

    return ssd_scan_kernel


def ssd_chunk_scan_triton(x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                          chunk_size: int, initial_state: Optional[torch.Tensor] = None,
                          dot_dtype: torch.dtype = torch.float32, block_p: int = 16
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """x [L,H,P], dt [L,H] (softplus'd), A [H], B/C [L,G,N], initial_state [H,P,N] -> (y [L,H,P] fp32, state
    [H,P,N] fp32), as ``engine.ops.ssd.ssd_chunk_scan``. ``dot_dtype`` fp32 by default (the scan's products
    are accumulated over long ranges), multiplied as true fp32 (``input_precision="ieee"``, not the TF32 a
    GPU's fp32 tl.dot defaults to; tests/engine/kernels/test_ssd_scan.py holds it to 1e-4 of the torch scan
    on a GPU as on the interpreter); chunk_size must be a power of two >= 16."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    from engine.kernels.decode_attention import _dot_dtype, _precision
    dot = _dot_dtype(torch.float32, dot_dtype)
    L, H, P = x.shape
    G, N = B.shape[1], B.shape[2]
    x, dt, B, C = x.contiguous(), dt.float().contiguous(), B.contiguous(), C.contiguous()
    y = torch.empty(L, H, P, dtype=torch.float32, device=x.device)
    final = torch.empty(H, P, N, dtype=torch.float32, device=x.device)
    s0 = initial_state.float().contiguous() if initial_state is not None else final
    block_p = min(block_p, 1 << (P - 1).bit_length())
    _kernel[(H, -(-P // block_p))](
        x, dt, A.float().contiguous(), B, C, s0, y, final, L,
        x.stride(0), x.stride(1), dt.stride(0), B.stride(0), B.stride(1), y.stride(0), y.stride(1),
        final.stride(0), final.stride(1),
        HEADS_PER_GROUP=H // G, P=P, N=N, Q=chunk_size, BLOCK_P=block_p, BLOCK_N=max(16, 1 << (N - 1).bit_length()),
        HAS_S0=initial_state is not None, DOT=dot, PREC=_precision(dot))
    return y, final
