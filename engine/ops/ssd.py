"""Mamba2 state-space duality (SSD) in pure torch, all math in fp32.

``ssd_chunk_scan`` runs a whole prefill chunk of one sequence with the chunked algorithm (intra-chunk
quadratic "attention-like" part + inter-chunk recurrence over chunk states) starting from a given SSM
state and returns the final state, so a long prompt can be prefilled in pieces. ``ssd_step`` is the
one-token recurrence used in decode. Both take dt already passed through softplus and clamped.
Shapes: heads H, head_dim P, groups G (B/C shared by H/G heads each), state N.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F


def segment_sum(a: torch.Tensor) -> torch.Tensor:
    """a [..., T] -> [..., T, T] with out[..., i, j] = sum(a[..., j+1:i+1]) for j <= i, -inf above."""
    T = a.shape[-1]
    x = a[..., None].expand(*a.shape, T)
    strict = torch.tril(torch.ones(T, T, dtype=torch.bool, device=a.device), diagonal=-1)
    x = x.masked_fill(~strict, 0).cumsum(dim=-2)
    return x.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool, device=a.device)), float("-inf"))


def ssd_chunk_scan(x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor,
                   chunk_size: int, initial_state: Optional[torch.Tensor] = None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """x [L,H,P], dt [L,H], A [H] (negative), B/C [L,G,N], initial_state [H,P,N] -> (y [L,H,P], state [H,P,N]).

    y excludes the D skip term. Padding to a multiple of ``chunk_size`` uses dt = 0, which neither decays
    nor feeds the state, so the final state is exact.
    """
    L, H, P = x.shape
    G, N = B.shape[1], B.shape[2]
    x, dt, A = x.float(), dt.float(), A.float()
    B = B.float().repeat_interleave(H // G, dim=1)
    C = C.float().repeat_interleave(H // G, dim=1)
    pad = (-L) % chunk_size
    if pad:
        x, dt = F.pad(x, (0, 0, 0, 0, 0, pad)), F.pad(dt, (0, 0, 0, pad))
        B, C = F.pad(B, (0, 0, 0, 0, 0, pad)), F.pad(C, (0, 0, 0, 0, 0, pad))
    n_chunks = (L + pad) // chunk_size
    x = (x * dt[..., None]).view(n_chunks, chunk_size, H, P)
    a = (A[None, :] * dt).view(n_chunks, chunk_size, H).permute(2, 0, 1)  # [H, c, l]
    B = B.view(n_chunks, chunk_size, H, N)
    C = C.view(n_chunks, chunk_size, H, N)
    a_cum = a.cumsum(dim=-1)

    # 1. within each chunk: y[l] = sum_{s<=l} (C_l . B_s) exp(a_{s+1..l}) x_s
    decay = torch.exp(segment_sum(a))  # [H, c, l, s]
    scores = torch.einsum("clhn,cshn->hcls", C, B) * decay
    y = torch.einsum("hcls,cshp->clhp", scores, x)

    # 2. each chunk's contribution to the state at its end
    decay_to_end = torch.exp(a_cum[..., -1:] - a_cum)  # [H, c, l]
    chunk_states = torch.einsum("clhn,hcl,clhp->chpn", B, decay_to_end, x)

    # 3. recurrence over chunks: state entering each chunk (and the final one)
    start = (torch.zeros(1, H, P, N, device=x.device) if initial_state is None
             else initial_state.float()[None])
    chunk_states = torch.cat([start, chunk_states])  # [c+1, H, P, N]
    chunk_decay = torch.exp(segment_sum(F.pad(a_cum[..., -1], (1, 0))))  # [H, c+1, c+1]
    states = torch.einsum("hzc,chpn->zhpn", chunk_decay, chunk_states)
    entering, final_state = states[:-1], states[-1]

    # 4. the entering state's contribution inside each chunk
    y = y + torch.einsum("clhn,chpn,hcl->clhp", C, entering, torch.exp(a_cum))
    return y.reshape(n_chunks * chunk_size, H, P)[:L], final_state


def ssd_step(state: torch.Tensor, x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor,
             C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One token for a batch: state [b,H,P,N] fp32, x [b,H,P], dt [b,H], B/C [b,G,N] -> (y [b,H,P], state)."""
    H = x.shape[1]
    G = B.shape[1]
    dt = dt.float()
    Bh = B.float().repeat_interleave(H // G, dim=1)  # [b, H, N]
    Ch = C.float().repeat_interleave(H // G, dim=1)
    dA = torch.exp(dt * A.float()[None])  # [b, H]
    new_state = state.float() * dA[..., None, None] + (dt[..., None] * x.float())[..., None] * Bh[:, :, None, :]
    y = torch.einsum("bhpn,bhn->bhp", new_state, Ch)
    return y, new_state


def causal_conv1d(x: torch.Tensor, state: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Depthwise causal conv continuing from ``state``: x [C, L], state [C, K-1], weight [C, K] -> (y [C, L], state)."""
    full = torch.cat([state.to(x.dtype), x], dim=-1)
    y = F.conv1d(full[None], weight[:, None, :].to(x.dtype), None if bias is None else bias.to(x.dtype),
                 groups=x.shape[0])[0]
    return y, full[:, full.shape[-1] - state.shape[-1]:]


def causal_conv1d_step(x: torch.Tensor, state: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor]
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """One token for a batch: x [b, C], state [b, C, K-1] -> (y [b, C], new state)."""
    full = torch.cat([state.to(x.dtype), x[..., None]], dim=-1)  # [b, C, K]
    y = (full * weight.to(x.dtype)[None]).sum(-1)
    if bias is not None:
        y = y + bias.to(x.dtype)
    return y, full[..., 1:]
