"""Dense MLP: relu² (Nemotron-H ``up -> relu² -> down``) or SwiGLU (Llama, fused gate_up projection)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import MlpSpec
from engine.layers.linear import Linear


class MLP(nn.Module):
    def __init__(self, hidden_size: int, spec: MlpSpec):
        super().__init__()
        self.gated = spec.activation == "silu_gated"
        self.intermediate_size = spec.intermediate_size
        n_up = 2 * spec.intermediate_size if self.gated else spec.intermediate_size
        self.up_proj = Linear(hidden_size, n_up, bias=spec.bias)  # gated: [gate; up] stacked
        self.down_proj = Linear(spec.intermediate_size, hidden_size, bias=spec.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up_proj(x)
        if self.gated:
            gate, up = h.split(self.intermediate_size, dim=-1)
            h = F.silu(gate) * up
        else:
            h = torch.relu(h).square()
        return self.down_proj(h)
