"""Linear layer whose weight is a dense tensor, compressed parts dequantized on use, or a CPU-packed copy.

Fused projections (qkv, gate_up) are one ``Linear``: a dense weight is concatenated once at load; compressed
parts (FP8, NVFP4) stay separate and are dequantized and concatenated per call, so memory holds only the
compressed bytes plus one layer's dense weight at a time.

On CPU, ``pack_cpu`` replaces a dense weight with a packed copy for a faster GEMM:

- ``"onednn"`` (the engine default on CPU): the same dtype, reordered once into oneDNN's blocked layout
  and run by ``mkldnn::_linear_pointwise``. Exact in the weight's dtype (only the summation order differs from
  ``F.linear``). On this project's AMD EPYC box torch's fp32 ``F.linear`` goes to MKL, which takes a slow
  generic path on non-Intel CPUs: oneDNN's JIT is 2-3.5x faster for decode-sized batches (M = 1..40 rows)
  and ~1.3x for 512-row prefill chunks (see docs/engine-serving-speed.md).
- ``"fp16"``: fbgemm's fp16-weight GEMM (weights rounded to fp16, fp32 activations); halves the bytes read
  by a one-row GEMV, at the cost of weight precision.
- ``"int4"`` (the default for GGUF files with 4/8-bit blocks): the weight stays 4-bit for torch's int4 GEMM
  (``engine.quant.cpu_kernels.Int4Weight``: GGUF Q4_0/Q4_1 with their own codes, Q8_0 and dense weights as
  8 bits per 32 in two 4-bit planes), run for up to ``INT4_MAX_ROWS`` rows (decode, short verify steps) with
  bf16 activations. Longer GEMMs (prefill chunks) run on a oneDNN-packed dense copy, bf16 where the CPU has
  BF16 units (AVX512-BF16/AMX), else fp32. See docs/engine-serving-speed.md for speed and tolerance.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

# torch 2.13 (pinned) still ships the fbgemm fp16 kernels and warns once that they are deprecated.
warnings.filterwarnings("ignore", message="fbgemm_(linear_fp16_weight_fp32_activation|pack_gemm_matrix_fp16) is deprecated")

CPU_GEMMS = ("onednn", "fp16", "plain", "int4")
INT4_MAX_ROWS = 16  # int4 GEMMs with more rows than this run on the dense oneDNN copy instead


def _prefill_dtype() -> torch.dtype:
    """bf16 for the dense copy of an int4 Linear where oneDNN has BF16 units (AVX512-BF16/AMX), else fp32."""
    try:
        return torch.bfloat16 if torch.ops.mkldnn._is_mkldnn_bf16_supported() else torch.float32
    except (RuntimeError, AttributeError):
        return torch.float32


def _pack_onednn(w: torch.Tensor) -> Optional[torch.Tensor]:
    if not torch.backends.mkldnn.is_available() or w.dtype not in (torch.float32, torch.bfloat16):
        return None
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(w.contiguous(), None)
        probe = torch.ops.mkldnn._linear_pointwise(torch.ones(1, w.shape[1], dtype=w.dtype), packed, None,
                                                   "none", [], "")
    except (RuntimeError, AttributeError, NotImplementedError):  # a torch build without these oneDNN ops
        return None
    return packed if probe.shape == (1, w.shape[0]) else None


def _pack_fp16(w: torch.Tensor) -> Optional[torch.Tensor]:
    if (w.dtype != torch.float32 or not torch.backends.quantized.engine
            or not hasattr(torch, "fbgemm_pack_gemm_matrix_fp16") or w.abs().max() > 65504.0):
        return None  # out of fp16 range, or no fbgemm: stay exact
    try:
        return torch.fbgemm_pack_gemm_matrix_fp16(w.contiguous())
    except RuntimeError:  # torch built without fbgemm (e.g. some ARM wheels)
        return None


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(out_features), requires_grad=False) if bias else None
        self.compressed: Optional[list] = None  # list of QuantizedTensor parts stacked along out_features
        self.packed = None  # CPU-packed copy that replaces the weight (see pack_cpu): a tensor or an Int4Weight
        self.packed_kind: Optional[str] = None  # "onednn" | "fp16" | "int4"
        self.dense_packed: Optional[torch.Tensor] = None  # int4: a oneDNN-packed dense copy for long GEMMs
        self.dense_bias: Optional[torch.Tensor] = None
        self.packed_dtype: Optional[torch.dtype] = None  # activation dtype the packed GEMM takes
        self._zero_bias: Optional[torch.Tensor] = None
        self.quant_gemm = None  # a GEMM that dequantizes NVFP4 / FP8 parts in-kernel (engine.kernels), set once
        self.int4_max_rows = INT4_MAX_ROWS  # int4: GEMMs of more rows run on the dense copy (the LM head: 1)

    def set_weight(self, parts: Sequence, dtype: torch.dtype, device) -> None:
        """Install the weight from parts (dense tensors or QuantizedTensor) that stack along dim 0."""
        self.packed = self.packed_kind = self.packed_dtype = self.dense_packed = None
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

    def pack_cpu(self, kind: str = "onednn") -> bool:
        """Replace the dense CPU weight with a packed copy for ``kind`` ("onednn", "fp16" or "int4", module doc).
        Returns False (and changes nothing) where it does not apply: compressed (other than GGUF blocks for
        int4) or non-CPU weights, an unsupported dtype, a torch build without the kernel."""
        if kind not in ("onednn", "fp16", "int4"):
            raise ValueError(f"unknown CPU GEMM {kind!r}; known: onednn, fp16, int4")
        if kind == "int4":  # where the int4 kernel does not apply (rows % 16, FP8, ...): oneDNN as before
            if self._pack_int4():
                return True
            from engine.quant import GgufBlockTensor
            if self.compressed is not None and all(isinstance(p, GgufBlockTensor) for p in self.compressed):
                self.set_weight([p.dequantize(torch.float32) for p in self.compressed], self.weight.dtype, "cpu")
            kind = "onednn"
        if self.packed is not None or self.compressed is not None or self.weight.device.type != "cpu":
            return False
        w = self.weight.detach()
        packed = _pack_onednn(w) if kind == "onednn" else _pack_fp16(w)
        if packed is None:
            return False
        self.packed, self.packed_kind, self.packed_dtype = packed, kind, w.dtype
        if kind == "fp16":
            self._zero_bias = torch.zeros(self.out_features)
        self.weight = nn.Parameter(torch.empty(0, dtype=w.dtype), requires_grad=False)  # the packed copy replaces it
        return True

    def _pack_int4(self) -> bool:
        from engine.quant.cpu_kernels import Int4Weight, int4_supported
        parts = self.compressed if self.compressed is not None else [self.weight.detach()]
        if self.packed is not None or self.weight.device.type != "cpu" or not int4_supported(parts):
            return False
        try:
            packed, dense = Int4Weight.from_parts(parts, with_dense=True)
        except (RuntimeError, NotImplementedError):  # a torch build without the CPU int4 kernel
            return False
        dtype = _prefill_dtype()
        dense = _pack_onednn(dense.to(dtype))
        self.dense_packed = dense
        self.dense_bias = None if self.bias is None or dense is None else self.bias.detach().to(dtype)
        self.packed, self.packed_kind, self.packed_dtype = packed, "int4", dtype
        self.compressed = None
        self.weight = nn.Parameter(torch.empty(0, dtype=self.weight.dtype), requires_grad=False)
        return True

    @property
    def packed_nbytes(self) -> int:
        """Bytes of the packed weight (int4: the 4-bit weight plus its dense copy for long GEMMs)."""
        if self.packed is None:
            return 0
        if self.packed_kind == "int4":
            dense = 0 if self.dense_packed is None else self.out_features * self.in_features * self.packed_dtype.itemsize
            return self.packed.nbytes + dense
        if self.packed_kind == "onednn":  # an opaque oneDNN tensor: count the logical weight
            return self.out_features * self.in_features * self.packed_dtype.itemsize
        return self.packed.numel() * self.packed.element_size()

    def dense_weight(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        if self.packed is not None:
            raise RuntimeError(f"this Linear holds a {self.packed_kind}-packed weight; call it instead of reading the weight")
        if self.compressed is None:
            return self.weight if dtype is None else self.weight.to(dtype)
        dtype = dtype or self.weight.dtype
        parts = [p.dequantize(dtype) for p in self.compressed]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    @property
    def decode_nbytes(self) -> int:
        """Weight bytes a GEMM of a few rows (a decode step) reads."""
        if self.packed_kind == "int4":
            return self.packed.nbytes
        if self.packed is not None:
            return self.packed_nbytes
        if self.compressed is not None:
            return sum(p.nbytes for p in self.compressed)
        return self.weight.numel() * self.weight.element_size()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed_kind == "int4":
            if self.dense_packed is not None and x.numel() > self.int4_max_rows * self.in_features:
                y = torch.ops.mkldnn._linear_pointwise(x.to(self.packed_dtype), self.dense_packed, self.dense_bias,
                                                       "none", [], "")
                return y.to(x.dtype)
            y = self.packed(x)
            return y if self.bias is None else y + self.bias
        if self.packed is not None:
            if x.dtype != self.packed_dtype:
                raise TypeError(f"a {self.packed_kind}-packed {self.packed_dtype} Linear got {x.dtype} input")
            if self.packed_kind == "onednn":
                return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
            bias = self.bias if self.bias is not None else self._zero_bias
            shape = x.shape
            y = torch.fbgemm_linear_fp16_weight(x.reshape(-1, shape[-1]).contiguous(), self.packed, bias)
            return y.view(*shape[:-1], self.out_features)
        if self.quant_gemm is not None and self.compressed is not None:
            parts = [self.quant_gemm(x, p) for p in self.compressed]
            y = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
            return y if self.bias is None else y + self.bias
        return F.linear(x, self.dense_weight(x.dtype), self.bias)

    def forward_silu(self, x: torch.Tensor) -> torch.Tensor:
        """``silu(self(x))``; a oneDNN-packed weight applies the silu in the GEMM's epilogue."""
        if self.packed_kind == "onednn" and x.dtype == self.packed_dtype:
            return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "swish", [], "")
        return F.silu(self(x))

    def forward_mul(self, x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        """``self(x) * other``; a oneDNN-packed weight multiplies in the GEMM's epilogue."""
        if self.packed_kind == "onednn" and x.dtype == self.packed_dtype and other.dtype == x.dtype:
            return torch.ops.mkldnn._linear_pointwise.binary(x, other.contiguous(), self.packed, self.bias, "mul")
        return self(x) * other

    def split_rows(self, sizes: Sequence[int]) -> list["Linear"]:
        """Dense (unpacked, uncompressed) weight -> one Linear per block of output rows, sharing its storage."""
        if self.packed is not None or self.compressed is not None:
            raise RuntimeError("only a dense Linear can be split")
        parts, start = [], 0
        for n in sizes:
            part = Linear(self.in_features, n, bias=self.bias is not None)
            part.weight = nn.Parameter(self.weight.detach()[start:start + n], requires_grad=False)
            if self.bias is not None:
                part.bias = nn.Parameter(self.bias.detach()[start:start + n], requires_grad=False)
            parts.append(part)
            start += n
        return parts

    def extra_repr(self) -> str:
        kind = "dense" if self.compressed is None else type(self.compressed[0]).__name__
        kind = f"{self.packed_kind}-packed" if self.packed is not None else kind
        return f"{self.in_features} -> {self.out_features}, bias={self.bias is not None}, {kind}"
