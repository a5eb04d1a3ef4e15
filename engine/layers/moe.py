"""Nemotron-H MoE: sigmoid router with e_score_correction_bias and grouped top-k, optional latent
fc1/fc2 projections around relu² routed experts, plus a shared expert on the un-projected input.

Only the experts some token picked are touched; compressed (FP8/NVFP4) expert weights are dequantized one
expert at a time on use.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import MlpSpec, MoeSpec
from engine.layers.linear import Linear
from engine.layers.mlp import MLP


class Experts(nn.Module):
    """Routed experts as stacked weights: up [E, I, D], down [E, D, I] (D = latent or hidden size)."""

    def __init__(self, n_experts: int, dim: int, intermediate: int):
        super().__init__()
        self.up = nn.Parameter(torch.empty(n_experts, intermediate, dim), requires_grad=False)
        self.down = nn.Parameter(torch.empty(n_experts, dim, intermediate), requires_grad=False)
        self.compressed_up: Optional[list] = None  # per-expert QuantizedTensor, when stored compressed
        self.compressed_down: Optional[list] = None
        self.fused = None  # (fn, stacked up, stacked down): a fused NVFP4 MoE kernel (engine.kernels), set once

    def use_fused(self, fn) -> bool:
        """Route through ``fn`` (fused_moe_* contract) when the experts are NVFP4; the per-expert parts become
        views of one stacked tensor (no second copy). ``fn`` None restores the per-expert loop."""
        from engine.quant.nvfp4 import Nvfp4Tensor
        if fn is None or not self.compressed_up or not all(
                isinstance(p, Nvfp4Tensor) for p in self.compressed_up + self.compressed_down):
            self.fused = None
            return False
        from engine.kernels.fused_moe import stack_experts
        up, down = stack_experts(self.compressed_up), stack_experts(self.compressed_down)
        self.compressed_up = [up[e] for e in range(len(self.compressed_up))]
        self.compressed_down = [down[e] for e in range(len(self.compressed_down))]
        self.fused = (fn, up, down)
        return True

    def expert_weights(self, e: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        if self.compressed_up is not None:
            return self.compressed_up[e].dequantize(dtype), self.compressed_down[e].dequantize(dtype)
        return self.up[e].to(dtype), self.down[e].to(dtype)

    def forward(self, x: torch.Tensor, topk_idx: torch.Tensor, topk_w: torch.Tensor) -> torch.Tensor:
        if self.fused is not None:
            fn, up, down = self.fused
            return fn(x, topk_idx, topk_w, up, down).to(x.dtype)
        if x.device.type != "cpu" and (self.compressed_up is None or self._fp8_stacked() is not None):
            return self.forward_gathered(x, topk_idx, topk_w)  # no host sync (a CUDA graph can capture it)
        out = torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
        flat = topk_idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=self.up.shape[0] if self.compressed_up is None
                                else len(self.compressed_up)).tolist()
        token_of = order // topk_idx.shape[1]
        weight_of = topk_w.reshape(-1)[order]
        start = 0
        for e, n in enumerate(counts):
            if n == 0:
                continue
            tok = token_of[start:start + n]
            up, down = self.expert_weights(e, x.dtype)
            h = torch.relu(F.linear(x[tok], up)).square()
            out.index_add_(0, tok, F.linear(h, down).float() * weight_of[start:start + n, None])
            start += n
        return out.to(x.dtype)


    def _fp8_stacked(self):
        """FP8 experts stacked once as (up, down) ``Fp8Tensor`` [E, ...] for the gathered path; None otherwise."""
        from engine.quant.fp8 import Fp8Tensor
        if not self.compressed_up or not all(isinstance(p, Fp8Tensor) for p in self.compressed_up + self.compressed_down):
            return None
        if getattr(self, "_fp8", None) is None:
            def stack(parts):
                scale = torch.stack([p.scale for p in parts])
                return Fp8Tensor(torch.stack([p.data.view(torch.uint8) for p in parts]).view(torch.float8_e4m3fn),
                                 scale.view(len(parts), 1, 1) if parts[0].scale.dim() == 0 else scale, parts[0].block)
            up, down = stack(self.compressed_up), stack(self.compressed_down)
            self.compressed_up = [up[e] for e in range(len(self.compressed_up))]  # views: no second copy
            self.compressed_down = [down[e] for e in range(len(self.compressed_down))]
            self._fp8 = (up, down)
        return self._fp8

    def _gather(self, e: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The weights of the experts ``e`` [P] as dense [P, I, D] / [P, D, I] (FP8: the gathered bytes
        dequantized, never all experts)."""
        fp8 = self._fp8_stacked() if self.compressed_up else None
        if fp8 is None:
            return self.up.index_select(0, e).to(dtype), self.down.index_select(0, e).to(dtype)
        from engine.quant.fp8 import Fp8Tensor
        out = []
        for w in fp8:
            data = w.data.view(torch.uint8).index_select(0, e).view(torch.float8_e4m3fn)
            out.append(Fp8Tensor(data, w.scale.index_select(0, e), w.block).dequantize(dtype))
        return out[0], out[1]

    def forward_gathered(self, x: torch.Tensor, topk_idx: torch.Tensor, topk_w: torch.Tensor,
                         chunk_bytes: int = 256 * 2 ** 20) -> torch.Tensor:
        """The same sum without a host sync (what a CUDA graph can capture; used off the CPU for dense and FP8
        experts): each routed pair gathers its expert's weights and runs a batched GEMV, in chunks of pairs whose
        gathered weights stay under ``chunk_bytes``. Reads a shared expert once per pair, so it suits decode."""
        T, k = topk_idx.shape
        flat = topk_idx.reshape(-1)
        xs = x.repeat_interleave(k, dim=0)  # [T*k, D], pair t*k+j
        inter, dim = (self.compressed_up[0].shape if self.compressed_up else self.up.shape[1:])
        per_pair = 2 * inter * dim * max(x.element_size(), 2)
        step = max(1, chunk_bytes // per_pair)
        outs = []
        for c in range(0, T * k, step):
            up, down = self._gather(flat[c:c + step], x.dtype)
            h = torch.relu(torch.bmm(up, xs[c:c + step, :, None])).square()
            outs.append(torch.bmm(down, h)[..., 0].float())
        y = torch.cat(outs).view(T, k, dim) * topk_w.float()[..., None]
        return y.sum(1).to(x.dtype)


class MoE(nn.Module):
    def __init__(self, hidden_size: int, spec: MoeSpec):
        super().__init__()
        if spec.activation != "relu2":
            raise ValueError(f"MoE experts support relu² only (got {spec.activation!r})")
        if spec.n_routed_experts % spec.n_group:
            raise ValueError(f"n_routed_experts {spec.n_routed_experts} not divisible by n_group {spec.n_group}")
        self.spec = spec
        self.router_weight = nn.Parameter(torch.zeros(spec.n_routed_experts, hidden_size), requires_grad=False)
        self.e_score_correction_bias = nn.Parameter(torch.zeros(spec.n_routed_experts), requires_grad=False)
        dim = spec.latent_size or hidden_size
        self.fc1_latent = Linear(hidden_size, dim, bias=spec.bias) if spec.latent_size else None
        self.fc2_latent = Linear(dim, hidden_size, bias=spec.bias) if spec.latent_size else None
        self.experts = Experts(spec.n_routed_experts, dim, spec.moe_intermediate_size)
        self.shared = (MLP(hidden_size, MlpSpec(spec.shared_intermediate_size, "relu2", spec.bias))
                       if spec.shared_intermediate_size else None)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, H] -> (weights [T, k] fp32, expert ids [T, k]); router math in fp32 as in the reference."""
        s = self.spec
        scores = F.linear(x.float(), self.router_weight.float()).sigmoid()
        choice = scores + self.e_score_correction_bias.float()
        if s.n_group > 1:
            per_group = s.n_routed_experts // s.n_group
            group_scores = choice.view(-1, s.n_group, per_group).topk(2, dim=-1)[0].sum(-1)
            keep = torch.zeros_like(group_scores).scatter_(
                1, group_scores.topk(s.topk_group, dim=-1, sorted=False)[1], 1.0).bool()
            choice = choice.masked_fill(~keep.repeat_interleave(per_group, dim=1), float("-inf"))
        idx = choice.topk(s.num_experts_per_tok, dim=-1, sorted=False)[1]
        w = scores.gather(1, idx)
        if s.norm_topk_prob:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return w * s.routed_scaling_factor, idx

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, idx = self.route(x)
        h = self.fc1_latent(x) if self.fc1_latent is not None else x
        h = self.experts(h, idx, w)
        if self.fc2_latent is not None:
            h = self.fc2_latent(h)
        return h + self.shared(x) if self.shared is not None else h
