"""Mamba2 recurrent update for decode and speculative verification: each sequence feeds ``T`` tokens
(1 for decode, 1 + drafts for verification) through its SSM state in place in the state pool, and can write
the state after every position (``checkpoints``) so rejected drafts roll back by copying one checkpoint
instead of cloning every state before the step.

Per token: ``state = state * exp(dt * A) + dt * x (outer) B``, ``y = state . C + D * x`` (B/C shared by the
``H / G`` heads of a group). dt is already softplus'd and clamped. State fp32 ``[slots, H, P, N]``; N need not
be a power of two (Puzzle-75B: d_state 96).

``mamba_multi_step_torch`` is the reference the Triton kernel must equal (tests/engine/kernels).
"""
from __future__ import annotations

from typing import Optional

import torch


def mamba_multi_step_torch(state: torch.Tensor, slots: torch.Tensor, x: torch.Tensor, dt: torch.Tensor,
                           A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, D: Optional[torch.Tensor] = None,
                           n_tokens: Optional[torch.Tensor] = None, checkpoints: Optional[torch.Tensor] = None
                           ) -> torch.Tensor:
    """state [S, H, P, N] fp32 (updated in place at ``slots`` [b]); x [b, T, H, P]; dt [b, T, H]; A [H];
    B/C [b, T, G, N]; D [H]; n_tokens [b] (<= T; later positions leave the state alone, y = 0);
    checkpoints [b, T, H, P, N] (optional) receives the state after each position -> y [b, T, H, P] fp32."""
    b, T, H, P = x.shape
    G = B.shape[2]
    s = state.index_select(0, slots.long()).float()
    ys = torch.zeros(b, T, H, P, dtype=torch.float32, device=x.device)
    for t in range(T):
        live = torch.ones(b, dtype=torch.bool, device=x.device) if n_tokens is None else t < n_tokens
        dtt = dt[:, t].float()  # [b, H]
        Bh = B[:, t].float().repeat_interleave(H // G, dim=1)  # [b, H, N]
        Ch = C[:, t].float().repeat_interleave(H // G, dim=1)
        xt = x[:, t].float()
        new = s * torch.exp(dtt * A.float()[None])[..., None, None] + (dtt[..., None] * xt)[..., None] * Bh[:, :, None]
        s = torch.where(live[:, None, None, None], new, s)
        y = torch.einsum("bhpn,bhn->bhp", s, Ch)
        if D is not None:
            y = y + xt * D.float()[None, :, None]
        ys[:, t] = torch.where(live[:, None, None], y, torch.zeros_like(y))
        if checkpoints is not None:
            checkpoints[:, t] = s
    state.index_copy_(0, slots.long(), s)
    return ys


_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def mamba_multi_step_kernel(S, SLOTS, X, DT, A, Bm, Cm, Dv, NTOK, Y, CK,
                                stride_ss, stride_sh, stride_sp,
                                stride_xb, stride_xt, stride_xh,
                                stride_db, stride_dt,
                                stride_bb, stride_bt, stride_bg,
                                stride_yb, stride_yt, stride_yh,
                                stride_cb, stride_ct, stride_ch, stride_cp,
                                T, HEADS_PER_GROUP: tl.constexpr, P: tl.constexpr, N: tl.constexpr,
                                BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr, HAS_D: tl.constexpr,
                                HAS_NTOK: tl.constexpr, HAS_CK: tl.constexpr):
        b = tl.program_id(0)
        h = tl.program_id(1)
        pb = tl.program_id(2)
        grp = h // HEADS_PER_GROUP
        p = pb * BLOCK_P + tl.arange(0, BLOCK_P)
        n = tl.arange(0, BLOCK_N)
        pm = p < P
        nm = n < N
        mask = pm[:, None] & nm[None, :]
        slot = tl.load(SLOTS + b).to(tl.int64)
        s_ptr = S + slot * stride_ss + h * stride_sh + p[:, None] * stride_sp + n[None, :]
        s = tl.load(s_ptr, mask=mask, other=0.0)
        a = tl.load(A + h).to(tl.float32)
        d = 0.0
        if HAS_D:
            d = tl.load(Dv + h).to(tl.float32)
        n_tok = T
        if HAS_NTOK:
            n_tok = tl.load(NTOK + b)
        for t in range(0, T):
            live = t < n_tok
            dt = tl.load(DT + b * stride_db + t * stride_dt + h).to(tl.float32)
            x = tl.load(X + b * stride_xb + t * stride_xt + h * stride_xh + p, mask=pm, other=0.0).to(tl.float32)
            bv = tl.load(Bm + b * stride_bb + t * stride_bt + grp * stride_bg + n, mask=nm, other=0.0).to(tl.float32)
            cv = tl.load(Cm + b * stride_bb + t * stride_bt + grp * stride_bg + n, mask=nm, other=0.0).to(tl.float32)
            new = s * tl.exp(dt * a) + (dt * x)[:, None] * bv[None, :]
            s = tl.where(live, new, s)
            y = tl.sum(s * cv[None, :], 1) + d * x
            y = tl.where(live, y, 0.0)
            tl.store(Y + b * stride_yb + t * stride_yt + h * stride_yh + p, y, mask=pm)
            if HAS_CK:
                tl.store(CK + b * stride_cb + t * stride_ct + h * stride_ch + p[:, None] * stride_cp + n[None, :],
                         s, mask=mask)
        tl.store(s_ptr, s, mask=mask)

    return mamba_multi_step_kernel


def mamba_multi_step_triton(state: torch.Tensor, slots: torch.Tensor, x: torch.Tensor, dt: torch.Tensor,
                            A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, D: Optional[torch.Tensor] = None,
                            n_tokens: Optional[torch.Tensor] = None, checkpoints: Optional[torch.Tensor] = None,
                            block_p: int = 16) -> torch.Tensor:
    """Same contract as ``mamba_multi_step_torch``; one launch for the batch: (sequence, head, head_dim tile)."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    if state.dtype != torch.float32 or state.stride(-1) != 1:
        raise ValueError("the SSM state pool must be contiguous fp32")
    b, T, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    x, dt, B, C = x.contiguous(), dt.contiguous(), B.contiguous(), C.contiguous()
    y = torch.empty(b, T, H, P, dtype=torch.float32, device=x.device)
    ck = checkpoints if checkpoints is not None else y
    if checkpoints is not None and checkpoints.stride(-1) != 1:
        raise ValueError("checkpoints must be contiguous in the state dimension")
    block_p = min(block_p, 1 << (P - 1).bit_length())
    grid = (b, H, -(-P // block_p))
    _kernel[grid](
        state, slots, x, dt, A, B, C, D if D is not None else A, n_tokens if n_tokens is not None else slots, y, ck,
        state.stride(0), state.stride(1), state.stride(2),
        x.stride(0), x.stride(1), x.stride(2),
        dt.stride(0), dt.stride(1),
        B.stride(0), B.stride(1), B.stride(2),
        y.stride(0), y.stride(1), y.stride(2),
        ck.stride(0) if checkpoints is not None else 0, ck.stride(1) if checkpoints is not None else 0,
        ck.stride(2) if checkpoints is not None else 0, ck.stride(3) if checkpoints is not None else 0,
        T, HEADS_PER_GROUP=H // G, P=P, N=N, BLOCK_P=block_p, BLOCK_N=1 << (N - 1).bit_length(),
        HAS_D=D is not None, HAS_NTOK=n_tokens is not None, HAS_CK=checkpoints is not None)
    return y
