"""FP8 e4m3 weights with fp32 scales: dequant = fp8.float() * scale (broadcast per tensor/row/block)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.quant.base import QuantizedTensor

E4M3_MAX = 448.0


@dataclass
class Fp8Tensor(QuantizedTensor):
    data: torch.Tensor  # float8_e4m3fn [..., out, in]
    scale: torch.Tensor  # fp32: [] / [..., 1, 1] per tensor, [..., out, 1] per row, [..., ceil(out/b), ceil(in/b)] per block
    block: tuple[int, int] | None = None  # (b_out, b_in) when scale is per block

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def nbytes(self) -> int:
        return self.data.numel() + 4 * self.scale.numel()

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        w = self.data.to(torch.float32)
        s = self.scale.to(torch.float32)
        if self.block is not None:
            bo, bi = self.block
            s = s.repeat_interleave(bo, dim=-2).repeat_interleave(bi, dim=-1)
            s = s[..., : w.shape[-2], : w.shape[-1]]
        return (w * s).to(dtype)

    def to(self, device) -> "Fp8Tensor":
        return Fp8Tensor(self.data.to(device), self.scale.to(device), self.block)

    def __getitem__(self, i: int) -> "Fp8Tensor":
        return Fp8Tensor(self.data[i], self.scale[i] if self.scale.dim() > 2 else self.scale, self.block)

    @classmethod
    def from_checkpoint(cls, weight: torch.Tensor, scale: torch.Tensor, block_size: tuple[int, int] | None = None,
                        inverse: bool = False) -> "Fp8Tensor":
        """``weight_scale_inv`` (DeepSeek naming) multiplies like ``weight_scale``; the name is historical.
        ``block_size``: the checkpoint's ``quantization_config.weight_block_size`` (default 128x128).
        Pass ``inverse=True`` only for scales that really are 1/scale."""
        scale = scale.to(torch.float32)
        if inverse:
            scale = 1.0 / scale
        out, inp = weight.shape[-2], weight.shape[-1]
        block = None
        if scale.numel() == 1:
            scale = scale.reshape(())
        elif scale.dim() == 1 and scale.numel() == out:
            scale = scale[:, None]
        elif scale.dim() >= 2 and tuple(scale.shape[-2:]) == (out, 1):
            pass  # per output row
        elif scale.dim() >= 2:
            rows, cols = scale.shape[-2], scale.shape[-1]
            block = tuple(block_size) if block_size else (128, 128)
            if (math.ceil(out / block[0]), math.ceil(inp / block[1])) != (rows, cols):
                raise ValueError(f"FP8 block scale {tuple(scale.shape)} does not tile weight {tuple(weight.shape)} "
                                 f"in {block[0]}x{block[1]} blocks (set quantization_config.weight_block_size)")
        else:
            raise ValueError(f"FP8 scale {tuple(scale.shape)} does not fit weight {tuple(weight.shape)}")
        return cls(weight.to(torch.float8_e4m3fn), scale, block)


def quantize_fp8(w: torch.Tensor, block: int | None = 128) -> Fp8Tensor:
    """Quantize [out, in] to e4m3 with one scale per ``block``x``block`` tile (or per tensor if None)."""
    w = w.float()
    if block is None:
        scale = (w.abs().max().clamp(min=1e-12) / E4M3_MAX).reshape(())
        return Fp8Tensor((w / scale).to(torch.float8_e4m3fn), scale)
    out, inp = w.shape
    po, pi = (-out) % block, (-inp) % block
    padded = torch.nn.functional.pad(w, (0, pi, 0, po))
    tiles = padded.view((out + po) // block, block, (inp + pi) // block, block)
    scale = tiles.abs().amax(dim=(1, 3)).clamp(min=1e-12) / E4M3_MAX
    s_full = scale.repeat_interleave(block, 0).repeat_interleave(block, 1)[:out, :inp]
    return Fp8Tensor((w / s_full).to(torch.float8_e4m3fn), scale, (block, block))
