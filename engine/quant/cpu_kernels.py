"""Weights kept 4-bit for torch's CPU weight-only int4 GEMM (issue #14): decode steps stream those bytes, not
fp32 weights (SmolLM2-135M: ~97 MB instead of ~538 MB).

``Int4Weight`` runs ``aten._weight_int4pack_mm_for_cpu``: codes 0..15 with one bf16 scale and zero per group of
32 input values, tinygemm's convention ``w = (q - 8) * scale + zero``.

- GGUF Q4_1 ``d * q + m`` maps exactly onto it (scale ``d``, zero ``m + 8 d``), Q4_0 ``d * (q - 8)`` too
  (zero 0): the file's own codes, only the fp16 scales/zeros rounded to bf16.
- 8-bit weights (GGUF Q8_0, or a dense weight first rounded like Q8_0: int8 per 32 values, ``d = max|w|/127``)
  are split into two 4-bit planes, ``q = 16 hi + lo`` with hi in -8..7 and lo in 0..15. ``W x = W_hi x +
  W_lo x`` is one GEMM of ``[W_hi | W_lo]`` (K doubled, scales ``16 d`` and ``d``) with ``[x, x]``: the same
  bytes as int8 and per-32 scales (torch's int8 kernel has one scale per row only, 6x the error on the tied
  SmolLM2 embedding).

The kernel's fast path takes bf16 activations (fp32 / fp16 ones run a reference loop 10-100x slower), so
``__call__`` rounds the input to bf16 and returns the input's dtype.

``GatedPrefill``: a gated MLP's ``silu(x Wg^T) * (x Wu^T)`` for long GEMMs (prefill chunks) on two oneDNN-packed
bf16 halves of an int4 gate_up weight, the silu and the product in the GEMMs' epilogues: one pass writes the
bf16 [M, I] product instead of a [M, 2I] GEMM output, its fp32 copy, silu, product and a bf16 copy again
(2.6 vs 7.5-8.9 ms per SmolLM2 layer and 512 rows on one thread of this AMX Xeon).
"""
from __future__ import annotations

from typing import Sequence

import torch

from engine.quant.gguf_blocks import BLOCK, GgufBlockTensor

COMPUTE_DTYPE = torch.bfloat16


def _blocks(w: torch.Tensor) -> torch.Tensor:
    """Dense [N, K] -> fp32 [N, K / 32, 32]: its groups of 32 input values."""
    n, k = w.shape
    if k % BLOCK:
        raise ValueError(f"in_features {k} is not a multiple of {BLOCK}")
    return w.float().reshape(n, k // BLOCK, BLOCK)


def round_q8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense [N, K] -> (q int8 [N, K] in -127..127, d fp32 [N, K/32]) with ``w ~ d * q`` per 32 values.
    A weight dequantized from Q8_0 gets its own codes and scales back."""
    n, k = w.shape
    g = _blocks(w)
    d = (g.abs().amax(-1, keepdim=True) / 127).clamp_(min=1e-30)
    return torch.div(g, d).round_().clamp_(-127, 127).to(torch.int8).view(n, k), d.view(n, -1)


def round_q4(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dense [N, K] -> ``Int4Weight`` args (codes 0..15, scale, zero) rounding each 32 values like GGUF Q4_1
    (``min + d * q``, ``d = (max - min) / 15``): a 4-bit approximation, for candidate searches only."""
    n, k = w.shape
    g = _blocks(w)
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    d = ((hi - lo) / 15).clamp_(min=1e-30)
    q = torch.div(g - lo, d).round_().clamp_(0, 15).to(torch.uint8).view(n, k)
    d, lo = d.view(n, -1), lo.view(n, -1)
    return q, d, lo + 8 * d


def int4_supported(parts: Sequence) -> bool:
    """Parts this module can pack: GGUF blocks (Q4_0 / Q4_1 / Q8_0) or dense CPU tensors, K a multiple of 32,
    rows (all parts) a multiple of 16 (the kernel's tile)."""
    return sum(p.shape[0] for p in parts) % 16 == 0 and all((isinstance(p, GgufBlockTensor) or isinstance(p, torch.Tensor) and p.dim() == 2
                and p.device.type == "cpu" and p.is_floating_point()) and p.shape[1] % BLOCK == 0 for p in parts)


class Int4Weight:
    repeat_input = False  # 8-bit weights as two planes: the kernel's K is twice the layer's, x goes in twice

    def __init__(self, codes: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, in_features: int | None = None):
        """codes [N, K] 0..15; scale, zero [N, K / 32] with ``w = (q - 8) * scale + zero``."""
        n, k = codes.shape
        if k % BLOCK or scale.shape != (n, k // BLOCK) or zero.shape != scale.shape:
            raise ValueError(f"int4 codes {tuple(codes.shape)} / scales {tuple(scale.shape)} do not fit groups of {BLOCK}")
        self.out_features, self.in_features = n, in_features or k
        self.repeat_input = self.in_features != k
        self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.to(torch.int32).contiguous(), 1)
        self.scales_zeros = torch.stack([scale.t(), zero.t()], dim=-1).to(COMPUTE_DTYPE).contiguous()  # [K/g, N, 2]

    @classmethod
    def from_parts(cls, parts: Sequence, with_dense: bool = False):
        """Row-stacked parts (a fused qkv or gate_up). All 4-bit GGUF blocks: their own codes. Otherwise every
        part as 8 bits per 32 in two planes (Q8_0 blocks keep theirs; dense or Q4 parts via ``round_q8``).
        ``with_dense``: also return the fp32 [N, K] weight the kernel applies, for a dense copy."""
        if not int4_supported(parts):
            raise TypeError("int4 packing takes GGUF Q4_0/Q4_1/Q8_0 blocks or dense CPU weights with K % 32 == 0")
        if all(isinstance(p, GgufBlockTensor) and p.bits == 4 for p in parts):
            qs, ds, zs = [], [], []
            for p in parts:
                pq, pd, pm = p.codes()
                qs.append(pq)
                ds.append(pd)
                zs.append(pm + 8 * pd if pm is not None else torch.zeros_like(pd))
            q, d, zero = torch.cat(qs), torch.cat(ds), torch.cat(zs)
            w = cls(q, d, zero)
            if not with_dense:
                return w
            n, k = q.shape
            sd, zd = (t.to(COMPUTE_DTYPE).float()[..., None] for t in (d, zero))
            return w, ((q.view(n, -1, BLOCK).float() - 8) * sd + zd).view(n, k)
        qs, ds = [], []
        for p in parts:
            if isinstance(p, GgufBlockTensor) and p.qtype == "Q8_0":
                pq, pd, _ = p.codes()
            else:
                pq, pd = round_q8(p.dequantize(torch.float32) if isinstance(p, GgufBlockTensor) else p)
            qs.append(pq)
            ds.append(pd)
        q, d = torch.cat(qs), torch.cat(ds)
        hi = torch.bitwise_right_shift(q, 4).add_(8).to(torch.uint8)  # floor(q / 16) + 8 in 0..15
        lo = torch.bitwise_and(q, 15).to(torch.uint8)  # q - 16 floor(q / 16)
        # hi plane: (hi - 8) * 16 d + 0; lo plane: (lo - 8) * d + 8 d
        w = cls(torch.cat([hi, lo], dim=1), torch.cat([16 * d, d], dim=1), torch.cat([torch.zeros_like(d), 8 * d], dim=1),
                q.shape[1])
        if not with_dense:
            return w
        n, k = q.shape
        return w, (q.view(n, -1, BLOCK).float() * d[..., None]).view(n, k)

    @property
    def nbytes(self) -> int:
        return self.packed.numel() * self.packed.element_size() + self.scales_zeros.numel() * 2

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """[N, K]: the weight the kernel multiplies by (an identity GEMM through the kernel itself)."""
        return self(torch.eye(self.in_features, dtype=COMPUTE_DTYPE)).t().to(dtype).contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, self.in_features).to(COMPUTE_DTYPE)
        if self.repeat_input:
            x2 = torch.cat([x2, x2], dim=1)
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(x2, self.packed, BLOCK, self.scales_zeros)
        return y.view(*shape[:-1], self.out_features).to(x.dtype)


class GatedPrefill:
    """``silu(x Wg^T) * (x Wu^T)`` -> bf16 [M, I] on bf16 oneDNN copies of an ``Int4Weight`` [gate; up] (the same
    values as Linear's dense copy: the kernel's own dequantization, rounded once to bf16)."""

    def __init__(self, gate: torch.Tensor, up: torch.Tensor, nbytes: int):
        self.gate, self.up, self.nbytes = gate, up, nbytes

    @classmethod
    def build(cls, weight: Int4Weight, intermediate: int) -> "GatedPrefill | None":
        """None where oneDNN has no bf16 GEMM or the weight is not [gate; up] of ``intermediate`` rows each."""
        if weight.out_features != 2 * intermediate or not torch.backends.mkldnn.is_available():
            return None
        try:
            if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
                return None
            dense = weight.dequantize(COMPUTE_DTYPE)
            gate, up = (torch.ops.mkldnn._reorder_linear_weight(h.contiguous(), None) for h in dense.split(intermediate))
            out = cls(gate, up, dense.numel() * dense.element_size())
            probe = out(torch.ones(1, weight.in_features))
        except (RuntimeError, AttributeError, NotImplementedError):  # a torch build without these oneDNN ops
            return None
        return out if probe.shape == (1, intermediate) else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        xb = x.to(COMPUTE_DTYPE)
        g = torch.ops.mkldnn._linear_pointwise(xb, self.gate, None, "swish", [], "")
        return torch.ops.mkldnn._linear_pointwise.binary(xb, g, self.up, None, "mul")
