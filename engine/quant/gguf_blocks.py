"""GGUF block-quantized weights (Q4_0, Q4_1, Q8_0) kept as their raw blocks of 32 values.

Each row of a GGUF tensor is a run of blocks along the input dim; a block is an fp16 scale ``d`` (Q4_1 also an
fp16 ``m``) and 32 codes: Q4_0 ``w = d * (q - 8)``, Q4_1 ``w = d * q + m`` (q in 0..15, low nibbles are values
0..15 of the block, high nibbles 16..31), Q8_0 ``w = d * q`` (q int8). ``codes()`` unpacks them for the CPU
integer kernels (engine/quant/cpu_kernels.py); ``dequantize`` is exact in fp32 (equal to ``gguf.quants``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.quant.base import QuantizedTensor

BLOCK = 32
QTYPES = {2: "Q4_0", 3: "Q4_1", 8: "Q8_0"}  # gguf.GGMLQuantizationType values we keep quantized
_BLOCK_BYTES = {"Q4_0": 18, "Q4_1": 20, "Q8_0": 34}


@dataclass
class GgufBlockTensor(QuantizedTensor):
    raw: torch.Tensor  # uint8 [out, in / 32 * block bytes], the file's blocks row by row
    qtype: str  # "Q4_0" | "Q4_1" | "Q8_0"
    in_features: int

    def __post_init__(self) -> None:
        if self.qtype not in _BLOCK_BYTES:
            raise ValueError(f"GGUF block type {self.qtype!r} is not kept quantized (known: {', '.join(_BLOCK_BYTES)})")
        if self.in_features % BLOCK or self.raw.dim() != 2 or self.raw.dtype != torch.uint8 \
                or self.raw.shape[1] != self.in_features // BLOCK * _BLOCK_BYTES[self.qtype]:
            raise ValueError(f"{self.qtype} blocks {tuple(self.raw.shape)} {self.raw.dtype} do not hold "
                             f"rows of {self.in_features} values")

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.raw.shape[0], self.in_features)

    @property
    def bits(self) -> int:
        return 8 if self.qtype == "Q8_0" else 4

    @property
    def nbytes(self) -> int:
        return self.raw.numel()

    def _blocks(self) -> torch.Tensor:
        return self.raw.view(self.raw.shape[0], self.in_features // BLOCK, _BLOCK_BYTES[self.qtype])

    def codes(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(q [out, in] uint8 0..15 for Q4 / int8 for Q8_0, d [out, in/32] fp32, m [out, in/32] fp32 or None)
        with ``w = d * q + m`` (Q4_1), ``d * (q - 8)`` (Q4_0), ``d * q`` (Q8_0), per block of 32."""
        b = self._blocks()
        out, nb = b.shape[0], b.shape[1]
        d = b[..., 0:2].contiguous().view(torch.float16).float().view(out, nb)
        if self.qtype == "Q8_0":
            return b[..., 2:].contiguous().view(torch.int8).view(out, self.in_features), d, None
        start = 4 if self.qtype == "Q4_1" else 2
        qs = b[..., start:]
        q = torch.cat([qs & 0xF, qs >> 4], dim=-1).reshape(out, self.in_features)
        m = b[..., 2:4].contiguous().view(torch.float16).float().view(out, nb) if self.qtype == "Q4_1" else None
        return q, d, m

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        q, d, m = self.codes()
        out, nb = d.shape
        qf = q.float().view(out, nb, BLOCK)
        if self.qtype == "Q4_0":
            qf = qf - 8
        w = qf * d[..., None]
        if m is not None:
            w = w + m[..., None]
        return w.view(out, self.in_features).to(dtype)

    def rows(self, index) -> "GgufBlockTensor":
        """The same weight with its rows reordered (llama.cpp's rope permutation of Q/K undone)."""
        return GgufBlockTensor(self.raw[index].contiguous(), self.qtype, self.in_features)

    def to(self, device) -> "GgufBlockTensor":
        return GgufBlockTensor(self.raw.to(device), self.qtype, self.in_features)

    def __getitem__(self, i: int) -> "GgufBlockTensor":
        raise TypeError("a GGUF block tensor is one [out, in] weight, not a stack of experts")
