"""Dense MLP: relu² (Nemotron-H ``up -> relu² -> down``) or SwiGLU (Llama, fused gate_up projection)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import MlpSpec
from engine.layers.linear import INT4_MAX_ROWS, Linear


class MLP(nn.Module):
    def __init__(self, hidden_size: int, spec: MlpSpec):
        super().__init__()
        self.gated = spec.activation == "silu_gated"
        self.intermediate_size = spec.intermediate_size
        n_up = 2 * spec.intermediate_size if self.gated else spec.intermediate_size
        self.up_proj = Linear(hidden_size, n_up, bias=spec.bias)  # gated: [gate; up] stacked
        self.down_proj = Linear(spec.intermediate_size, hidden_size, bias=spec.bias)
        self.gate_proj: Linear | None = None  # set by pack_cpu: the gate half, up_proj then holds the up half
        self.prefill_gated = None  # int4 gate_up: long GEMMs' silu(gate) * up on bf16 halves (engine/quant/cpu_kernels.py)

    def pack_cpu(self, kind: str) -> int:
        """Pack the projections (Linear.pack_cpu). A gated MLP on oneDNN is split into gate and up GEMMs so
        that ``silu(gate) * up`` runs in their epilogues instead of as two more passes over [T, 2I]."""
        n = 0
        if self.gated and kind == "onednn" and self.gate_proj is None and self.up_proj.packed is None \
                and self.up_proj.compressed is None and self.up_proj.weight.device.type == "cpu":
            gate, up = self.up_proj.split_rows([self.intermediate_size, self.intermediate_size])
            if gate.pack_cpu(kind) and up.pack_cpu(kind):
                self.gate_proj, self.up_proj, n = gate, up, 2
        n += self.up_proj.pack_cpu(kind) + self.down_proj.pack_cpu(kind)  # False where already packed
        up = self.up_proj
        if self.gated and self.gate_proj is None and up.packed_kind == "int4" and up.dense_packed is not None \
                and up.bias is None and self.prefill_gated is None:
            from engine.quant.cpu_kernels import GatedPrefill
            self.prefill_gated = GatedPrefill.build(up.packed, self.intermediate_size)
            if self.prefill_gated is not None:
                up.dense_packed = None  # its halves replace the fused dense copy
        return n

    @property
    def packed_nbytes(self) -> int:
        return 0 if self.prefill_gated is None else self.prefill_gated.nbytes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.prefill_gated is not None and x.numel() > INT4_MAX_ROWS * x.shape[-1]:
            return self.down_proj(self.prefill_gated(x)).to(x.dtype)
        if self.gate_proj is not None:
            return self.down_proj(self.up_proj.forward_mul(x, self.gate_proj.forward_silu(x)))
        h = self.up_proj(x)
        if self.gated:
            gate, up = h.split(self.intermediate_size, dim=-1)
            h = F.silu(gate) * up
        else:
            h = torch.relu(h).square()
        return self.down_proj(h)
