"""Mamba2 mixer: in_proj -> causal conv1d (x, B, C) -> SSD -> gated grouped RMSNorm -> out_proj.

Each sequence's (conv_state, ssm_state) lives in the ForwardContext; prefill spans run the chunked scan
from their stored state (so prompts can be prefilled in pieces), decode steps run the one-token recurrence
for all sequences at once. The SSM state is always fp32.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import MambaSpec
from engine.layers.linear import Linear
from engine.layers.rmsnorm import GatedRMSNorm
from engine.ops.ssd import causal_conv1d, causal_conv1d_step, ssd_chunk_scan, ssd_step


class Mamba2Mixer(nn.Module):
    def __init__(self, hidden_size: int, spec: MambaSpec, mamba_idx: int, eps: float):
        super().__init__()
        self.spec, self.mamba_idx = spec, mamba_idx
        d_inner, conv_dim, H = spec.d_inner, spec.conv_dim, spec.num_heads
        self.in_proj = Linear(hidden_size, d_inner + conv_dim + H, bias=spec.use_bias)  # [gate; xBC; dt]
        self.conv_weight = nn.Parameter(torch.empty(conv_dim, spec.conv_kernel), requires_grad=False)
        self.conv_bias = nn.Parameter(torch.zeros(conv_dim), requires_grad=False) if spec.use_conv_bias else None
        self.dt_bias = nn.Parameter(torch.zeros(H), requires_grad=False)
        self.A_log = nn.Parameter(torch.zeros(H), requires_grad=False)
        self.D = nn.Parameter(torch.ones(H), requires_grad=False)
        self.norm = GatedRMSNorm(d_inner, d_inner // spec.n_groups, eps)
        self.out_proj = Linear(d_inner, hidden_size, bias=spec.use_bias)
        self.ssm_update = None  # an in-place multi-token state update (engine.kernels), set once at engine start
        self.scan = ssd_chunk_scan  # the prefill chunked scan: ops/ssd.py, or a kernel (HybridLM.use_ops)

    def state_shapes(self) -> tuple[tuple[int, int], tuple[int, int, int]]:
        s = self.spec
        return (s.conv_dim, s.conv_kernel - 1), (s.num_heads, s.head_dim, s.ssm_state_size)

    def _dt(self, dt_raw: torch.Tensor) -> torch.Tensor:
        lo, hi = self.spec.dt_limits
        dt = F.softplus(dt_raw.float() + self.dt_bias.float())
        if lo > 0.0 or hi != float("inf"):
            dt = dt.clamp(min=lo, max=hi)
        return dt

    def forward(self, x: torch.Tensor, positions: torch.Tensor, ctx) -> torch.Tensor:
        s = self.spec
        H, P, G, N = s.num_heads, s.head_dim, s.n_groups, s.ssm_state_size
        gate, xbc, dt_raw = self.in_proj(x).split([s.d_inner, s.conv_dim, H], dim=-1)
        dt = self._dt(dt_raw)
        A = -torch.exp(self.A_log.float())
        if ctx.is_decode and self.ssm_update is not None and hasattr(ctx, "ssm_pool"):
            conv_pool, slots = ctx.states.conv[self.mamba_idx], ctx.slot_tensor
            conv_state = conv_pool.index_select(0, slots)
            xbc, conv_state = causal_conv1d_step(xbc, conv_state, self.conv_weight, self.conv_bias)
            conv_pool.index_copy_(0, slots, conv_state.to(conv_pool.dtype))
            xs, B, C = F.silu(xbc).split([s.d_inner, G * N, G * N], dim=-1)
            ssm, slots = ctx.ssm_pool(self.mamba_idx)  # updated in place: no gather / scatter of the state
            y = self.ssm_update(ssm, slots, xs.view(-1, 1, H, P), dt[:, None], A, B.view(-1, 1, G, N),
                                C.view(-1, 1, G, N), self.D)[:, 0]
        elif ctx.is_decode:
            conv_state, ssm_state = ctx.mamba_state_batch(self.mamba_idx)
            xbc, conv_state = causal_conv1d_step(xbc, conv_state, self.conv_weight, self.conv_bias)
            xbc = F.silu(xbc)
            xs, B, C = xbc.split([s.d_inner, G * N, G * N], dim=-1)
            xs = xs.view(-1, H, P)
            y, ssm_state = ssd_step(ssm_state, xs, dt, A, B.view(-1, G, N), C.view(-1, G, N))
            y = y + xs.float() * self.D.float()[:, None]
            ctx.set_mamba_state_batch(self.mamba_idx, conv_state, ssm_state)
        else:
            outs = []
            ckpts = getattr(ctx, "checkpoints", None)  # speculative verify spans (engine/spec_checkpoints.py)
            for seq, span in enumerate(ctx.spans):
                sl = slice(span.start, span.start + span.length)
                row = ckpts.row(seq) if ckpts is not None else None
                if row is not None:
                    outs.append(self._verify_span(ctx, ckpts, row, seq, xbc[sl], dt[sl], A))
                    continue
                conv_state, ssm_state = ctx.mamba_state(self.mamba_idx, seq)
                h, conv_state = causal_conv1d(xbc[sl].t(), conv_state, self.conv_weight, self.conv_bias)
                h = F.silu(h.t())
                xs, B, C = h.split([s.d_inner, G * N, G * N], dim=-1)
                xs = xs.reshape(-1, H, P)
                y, ssm_state = self.scan(xs, dt[sl], A, B.reshape(-1, G, N), C.reshape(-1, G, N),
                                              s.chunk_size, ssm_state)
                outs.append(y + xs.float() * self.D.float()[:, None])
                ctx.set_mamba_state(self.mamba_idx, seq, conv_state, ssm_state)
            y = torch.cat(outs)
        y = self.norm(y.reshape(-1, s.d_inner), gate)
        return self.out_proj(y.to(x.dtype))

    def _verify_span(self, ctx, ckpts, row: int, seq: int, xbc: torch.Tensor, dt: torch.Tensor,
                     A: torch.Tensor) -> torch.Tensor:
        """A speculative verify span (the last token + drafts): the multi-token recurrence in place in the pool,
        writing the state after every position into the checkpoint buffer -> y [T, H, P] fp32 (D included)."""
        from engine.kernels.mamba_step import mamba_multi_step_torch
        s = self.spec
        H, P, G, N, T = s.num_heads, s.head_dim, s.n_groups, s.ssm_state_size, xbc.shape[0]
        conv_state, _ = ctx.mamba_state(self.mamba_idx, seq)  # a view of the pool slot
        ckpts.save_conv_inputs(self.mamba_idx, row, conv_state, xbc)
        h, new_conv = causal_conv1d(xbc.t(), conv_state, self.conv_weight, self.conv_bias)
        conv_state.copy_(new_conv)
        xs, B, C = F.silu(h.t()).split([s.d_inner, G * N, G * N], dim=-1)
        update = self.ssm_update or mamba_multi_step_torch
        ssm, slots = ctx.ssm_pool(self.mamba_idx)
        return update(ssm, slots[seq:seq + 1], xs.reshape(1, T, H, P), dt[None], A, B.reshape(1, T, G, N),
                      C.reshape(1, T, G, N), self.D, None, ckpts.ssm_rows(self.mamba_idx, row, T))[0]
