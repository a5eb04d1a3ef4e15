"""Linear layer whose weight is either a dense tensor or compressed parts dequantized on use.

Fused projections (qkv, gate_up) are one ``Linear``: a dense weight is concatenated once at load; compressed
parts (FP8, NVFP4) stay separate and are dequantized and concatenated per call, so memory holds only the
compressed bytes plus one layer's dense weight at a time.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(out_features), requires_grad=False) if bias else None
        self.compressed: Optional[list] = None  # list of QuantizedTensor parts stacked along out_features

    def set_weight(self, parts: Sequence, dtype: torch.dtype, device) -> None:
        """Install the weight from parts (dense tensors or QuantizedTensor) that stack along dim 0."""
        if all(isinstance(p, torch.Tensor) for p in parts):
            w = torch.cat([p.to(device=device, dtype=dtype) for p in parts]) if len(parts) > 1 else parts[0]
            self._check_shape(tuple(w.shape))
            self.weight = nn.Parameter(w.to(device=device, dtype=dtype).contiguous(), requires_grad=False)
            self.compressed = None
            return
        from engine.quant import QuantizedTensor, as_quantized
        qparts = [p if isinstance(p, QuantizedTensor) else as_quantized(p) for p in parts]
        self._check_shape((sum(p.shape[0] for p in qparts), qparts[0].shape[1]))
        self.compressed = [p.to(device) for p in qparts]
        self.weight = nn.Parameter(torch.empty(0, device=device, dtype=dtype), requires_grad=False)

    def _check_shape(self, shape: tuple[int, ...]) -> None:
        if shape != (self.out_features, self.in_features):
            raise ValueError(f"weight shape {shape} does not match Linear({self.in_features} -> {self.out_features})")

    def dense_weight(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        if self.compressed is None:
            return self.weight if dtype is None else self.weight.to(dtype)
        dtype = dtype or self.weight.dtype
        parts = [p.dequantize(dtype) for p in self.compressed]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.dense_weight(x.dtype), self.bias)

    def extra_repr(self) -> str:
        kind = "dense" if self.compressed is None else type(self.compressed[0]).__name__
        return f"{self.in_features} -> {self.out_features}, bias={self.bias is not None}, {kind}"
