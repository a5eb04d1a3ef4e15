"""Compressed weight formats, kept compressed in memory and dequantized per layer on use.

- ``Fp8Tensor``: float8 e4m3 values with fp32 scales (per tensor, per output row, or per 128x128 block as in
  DeepSeek/Nemotron ``weight_scale_inv`` checkpoints).
- ``Nvfp4Tensor``: e2m1 values packed two per byte, one e4m3 scale per 16 values along the input dim, and
  one fp32 global scale (NVIDIA ModelOpt NVFP4 ``weight`` / ``weight_scale`` / ``weight_scale_2``).
- ``GgufBlockTensor``: GGUF Q4_0 / Q4_1 / Q8_0 blocks as in the file; on CPU packed for torch's int4 GEMM
  (``engine.quant.cpu_kernels``) instead of being dequantized per use.
"""
from __future__ import annotations

import torch

from engine.quant.base import QuantizedTensor
from engine.quant.fp8 import Fp8Tensor
from engine.quant.gguf_blocks import GgufBlockTensor
from engine.quant.nvfp4 import Nvfp4Tensor

__all__ = ["QuantizedTensor", "Fp8Tensor", "Nvfp4Tensor", "GgufBlockTensor", "as_quantized"]


def as_quantized(x) -> QuantizedTensor:
    if isinstance(x, QuantizedTensor):
        return x
    raise TypeError(f"expected a dense tensor or a QuantizedTensor, got {type(x).__name__}")
