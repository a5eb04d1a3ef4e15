"""Linear layer whose weight is either a dense tensor or compressed parts dequantized on use.

Fused projections (qkv, gate_up) are one ``Linear``: a dense weight is concatenated once at load; compressed
parts (FP8, NVFP4) stay separate and are dequantized and concatenated per call, so memory holds only the
compressed bytes plus one layer's dense weight at a time.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

# torch 2.13 (pinned) still ships this kernel and warns once that it is deprecated; pack_fp16_cpu() falls back
# to exact fp32 where a torch build lacks it.
warnings.filterwarnings("ignore", message="fbgemm_(linear_fp16_weight_fp32_activation|pack_gemm_matrix_fp16) is deprecated")


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(out_features), requires_grad=False) if bias else None
        self.compressed: Optional[list] = None  # list of QuantizedTensor parts stacked along out_features
        self.packed_fp16 = None  # fbgemm-packed fp16 copy of the weight (CPU fast path, fp32 activations)
        self._zero_bias: Optional[torch.Tensor] = None

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

    def pack_fp16_cpu(self) -> bool:
        """Switch to fbgemm's fp16-weight GEMM: on CPU decode (memory-bound GEMV) it reads half the bytes and
        runs ~4x faster than fp32; activations and accumulation stay fp32, weights are rounded to fp16.
        Returns False (and changes nothing) where it does not apply."""
        if (self.compressed is not None or self.weight.device.type != "cpu" or self.weight.dtype != torch.float32
                or not torch.backends.quantized.engine or not hasattr(torch, "fbgemm_pack_gemm_matrix_fp16")):
            return False
        w = self.weight.detach()
        if w.abs().max() > 65504.0:  # out of fp16 range: stay exact
            return False
        try:
            self.packed_fp16 = torch.fbgemm_pack_gemm_matrix_fp16(w.contiguous())
        except RuntimeError:  # torch built without fbgemm (e.g. some ARM wheels)
            return False
        self._zero_bias = torch.zeros(self.out_features)
        self.weight = nn.Parameter(torch.empty(0), requires_grad=False)  # the packed copy replaces it
        return True

    def dense_weight(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        if self.packed_fp16 is not None:
            raise RuntimeError("this Linear holds an fbgemm-packed fp16 weight; call it instead of reading the weight")
        if self.compressed is None:
            return self.weight if dtype is None else self.weight.to(dtype)
        dtype = dtype or self.weight.dtype
        parts = [p.dequantize(dtype) for p in self.compressed]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed_fp16 is not None and x.dtype == torch.float32:
            bias = self.bias if self.bias is not None else self._zero_bias
            shape = x.shape
            y = torch.fbgemm_linear_fp16_weight(x.reshape(-1, shape[-1]).contiguous(), self.packed_fp16, bias)
            return y.view(*shape[:-1], self.out_features)
        return F.linear(x, self.dense_weight(x.dtype), self.bias)

    def extra_repr(self) -> str:
        kind = "dense" if self.compressed is None else type(self.compressed[0]).__name__
        kind = "fp16-packed" if self.packed_fp16 is not None else kind
        return f"{self.in_features} -> {self.out_features}, bias={self.bias is not None}, {kind}"
