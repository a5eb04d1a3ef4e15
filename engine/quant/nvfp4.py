"""NVFP4: e2m1 values (two per byte, element 0 in the low nibble), an e4m3 scale per 16 input values and an
fp32 global scale. dequant = E2M1[nibble] * block_scale.float() * global_scale (ModelOpt layout)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.quant.base import QuantizedTensor

BLOCK = 16
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX, E4M3_MAX = 6.0, 448.0


def _lut(device) -> torch.Tensor:
    pos = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)
    return torch.cat([pos, -pos])  # index = sign bit (8) | magnitude code


@dataclass
class Nvfp4Tensor(QuantizedTensor):
    packed: torch.Tensor  # uint8 [..., out, in/2]
    block_scale: torch.Tensor  # float8_e4m3fn [..., out, in/16]
    global_scale: torch.Tensor  # fp32 scalar (or [..., 1, 1] per expert)

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.packed.shape[:-1], self.packed.shape[-1] * 2)

    @property
    def nbytes(self) -> int:
        return self.packed.numel() + self.block_scale.numel() + 4 * self.global_scale.numel()

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        lut = _lut(self.packed.device)
        lo = lut[(self.packed & 0x0F).long()]
        hi = lut[(self.packed >> 4).long()]
        vals = torch.stack([lo, hi], dim=-1).reshape(self.shape)
        scales = self.block_scale.to(torch.float32) * self.global_scale.to(torch.float32)
        vals = vals.view(*self.shape[:-1], -1, BLOCK) * scales[..., None]
        return vals.reshape(self.shape).to(dtype)

    def to(self, device) -> "Nvfp4Tensor":
        return Nvfp4Tensor(self.packed.to(device), self.block_scale.to(device), self.global_scale.to(device))

    def __getitem__(self, i: int) -> "Nvfp4Tensor":
        g = self.global_scale[i] if self.global_scale.dim() > 0 and self.global_scale.numel() > 1 else self.global_scale
        return Nvfp4Tensor(self.packed[i], self.block_scale[i], g)

    @classmethod
    def from_checkpoint(cls, weight: torch.Tensor, weight_scale: torch.Tensor, weight_scale_2: torch.Tensor
                        ) -> "Nvfp4Tensor":
        if weight.dtype != torch.uint8:
            raise ValueError(f"NVFP4 weight must be packed uint8, got {weight.dtype}")
        if weight_scale.shape[-1] * BLOCK != weight.shape[-1] * 2:
            raise ValueError(f"NVFP4 scale {tuple(weight_scale.shape)} does not fit packed weight {tuple(weight.shape)}")
        return cls(weight, weight_scale.to(torch.float8_e4m3fn), weight_scale_2.to(torch.float32))


def quantize_nvfp4(w: torch.Tensor, rows_per_chunk: int = 4096) -> Nvfp4Tensor:
    """Quantize [out, in] (in divisible by 16), on w's device: the global scale maps the largest block scale
    onto e4m3's range (ModelOpt's ``weight_scale_2 = amax / (6 * 448)``), each block of 16 gets an e4m3 scale
    (block amax / 6 / global), each value the nearest e2m1 magnitude (a tie goes to the smaller one) and its
    sign. Rows are done ``rows_per_chunk`` at a time, so the fp32 temporaries stay a few chunk-sized copies."""
    if w.shape[-1] % BLOCK:
        raise ValueError(f"NVFP4 needs the input dim divisible by {BLOCK}, got {w.shape[-1]}")
    global_scale = (w.abs().amax().float().clamp(min=1e-12) / (E2M1_MAX * E4M3_MAX)).reshape(())
    mags = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=w.device)
    bounds = (mags[1:] + mags[:-1]) / 2  # x <= bound i -> code i (bucketize, right=False)
    flat = w.reshape(-1, w.shape[-1])
    packed = torch.empty(flat.shape[0], flat.shape[1] // 2, dtype=torch.uint8, device=w.device)
    block_scale = torch.empty(flat.shape[0], flat.shape[1] // BLOCK, dtype=torch.float8_e4m3fn, device=w.device)
    for r in range(0, flat.shape[0], rows_per_chunk):
        blocks = flat[r:r + rows_per_chunk].float().view(-1, flat.shape[1] // BLOCK, BLOCK)
        bs = (blocks.abs().amax(-1) / E2M1_MAX / global_scale).clamp(max=E4M3_MAX).to(torch.float8_e4m3fn)
        denom = (bs.to(torch.float32) * global_scale)[..., None]
        scaled = torch.where(denom > 0, blocks / denom, torch.zeros_like(blocks))
        code = torch.bucketize(scaled.abs(), bounds).to(torch.uint8) | ((scaled < 0).to(torch.uint8) << 3)
        code = code.view(code.shape[0], -1)
        packed[r:r + rows_per_chunk] = code[:, 0::2] | (code[:, 1::2] << 4)
        block_scale[r:r + rows_per_chunk] = bs
    return Nvfp4Tensor(packed.view(*w.shape[:-1], -1), block_scale.view(*w.shape[:-1], -1), global_scale)
