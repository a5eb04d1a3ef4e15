"""GPU kernels (Triton), each beside the torch reference it must equal, and the one place that picks them.

``select_ops(device, prefer)`` runs once when a model is loaded into an engine (``ModelRunner``): the model's
Mamba layers and the paged context get the chosen functions, so no layer asks "which device?" per call.
- ``"auto"``: Triton on CUDA when triton imports; on a CPU the engine's torch paths with batched decode
  attention (``cpu_ops``: engine/kernels/cpu_decode_attention.py, a host-side plan per step groups the
  sequences into few SDPA calls); elsewhere the torch paths (``"default"``: per-sequence SDPA);
- ``"triton"``: the Triton kernels anywhere (on CPU tensors only under ``TRITON_INTERPRET=1``: tests);
- ``"torch"``: the references, batched the same way as the kernels.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Optional

import torch


@dataclass(frozen=True)
class Ops:
    name: str  # "default" (the engine's own torch paths), "cpu" (those + batched decode attention), "torch"
    # (kernel references), "triton"
    decode_attention: Optional[Callable] = None  # paged_decode_attention_* contract; None: per-sequence SDPA
    prefill_attention: Optional[Callable] = None  # paged_prefill_attention_* contract (steps with prefill spans)
    mamba_step: Optional[Callable] = None  # mamba_multi_step_* contract; None: gather + ssd_step + scatter
    moe_nvfp4: Optional[Callable] = None  # fused_moe_* contract; None: the per-expert loop
    linear_nvfp4: Optional[Callable] = None  # nvfp4_linear_* contract; None: dequantize, then F.linear
    ssd_scan: Optional[Callable] = None  # engine.ops.ssd.ssd_chunk_scan contract (prefill); None: that function
    dot_dtype: Optional[torch.dtype] = None  # tl.dot operand dtype (None: q's half dtype, else fp32)
    # a host-side planner (CPU): the paged context builds one plan per short step (decode, verify) from the
    # sequences' reads and passes it to decode_attention as plan= (no device block tables)
    plan_decode: Optional[Callable] = None
    linear_fp8: Optional[Callable] = None  # fp8_linear_* contract (engine/kernels/fp8_linear.py); None: dequantize


DEFAULT = Ops("default")


def triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def torch_ops() -> Ops:
    from engine.kernels.decode_attention import paged_decode_attention_torch
    from engine.kernels.fp8_linear import fp8_linear_torch
    from engine.kernels.fused_moe import fused_moe_torch, nvfp4_linear_torch
    from engine.kernels.mamba_step import mamba_multi_step_torch
    from engine.kernels.prefill_attention import paged_prefill_attention_torch
    return Ops("torch", paged_decode_attention_torch, paged_prefill_attention_torch, mamba_multi_step_torch,
               fused_moe_torch, nvfp4_linear_torch, linear_fp8=fp8_linear_torch)


def cpu_ops() -> Ops:
    from engine.kernels.cpu_decode_attention import paged_decode_attention_cpu, plan_decode
    return Ops("cpu", decode_attention=paged_decode_attention_cpu, plan_decode=plan_decode)


def triton_ops(dot_dtype: Optional[torch.dtype] = None) -> Ops:
    """The Triton kernels, each guarded (engine/kernels/fallback.py): one that cannot be built here falls
    back to its torch reference with a logged cause instead of failing the engine."""
    from functools import partial

    from engine.kernels.decode_attention import paged_decode_attention_torch, paged_decode_attention_triton
    from engine.kernels.fallback import Guarded
    from engine.kernels.fp8_linear import fp8_linear_torch, fp8_linear_triton
    from engine.kernels.fused_moe import fused_moe_torch, fused_moe_triton, nvfp4_linear_torch, nvfp4_linear_triton
    from engine.kernels.mamba_step import mamba_multi_step_torch, mamba_multi_step_triton
    from engine.kernels.prefill_attention import paged_prefill_attention_torch, paged_prefill_attention_triton
    from engine.kernels.ssd_scan import ssd_chunk_scan_triton
    from engine.ops.ssd import ssd_chunk_scan
    return Ops("triton",
               Guarded("decode_attention", partial(paged_decode_attention_triton, dot_dtype=dot_dtype),
                       paged_decode_attention_torch),
               Guarded("prefill_attention", partial(paged_prefill_attention_triton, dot_dtype=dot_dtype),
                       paged_prefill_attention_torch),
               Guarded("mamba_step", mamba_multi_step_triton, mamba_multi_step_torch),
               Guarded("moe_nvfp4", partial(fused_moe_triton, dot_dtype=dot_dtype), fused_moe_torch),
               Guarded("linear_nvfp4", partial(nvfp4_linear_triton, dot_dtype=dot_dtype), nvfp4_linear_torch),
               Guarded("ssd_scan", ssd_chunk_scan_triton, ssd_chunk_scan), dot_dtype,
               linear_fp8=Guarded("linear_fp8", partial(fp8_linear_triton, dot_dtype=dot_dtype), fp8_linear_torch))


def select_ops(device, prefer: str = "auto", dot_dtype: Optional[torch.dtype] = None) -> Ops:
    dev = torch.device(device)
    if prefer == "auto":
        if dev.type == "cpu":
            return cpu_ops()
        return triton_ops(dot_dtype) if dev.type == "cuda" and triton_available() else DEFAULT
    if prefer == "default":
        return DEFAULT
    if prefer == "cpu":
        return cpu_ops()
    if prefer == "torch":
        return torch_ops()
    if prefer == "triton":
        if dev.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            raise ValueError("Triton kernels on a CPU need TRITON_INTERPRET=1 (the interpreter; for tests)")
        if not triton_available():
            raise ValueError("kernels='triton' but triton is not installed")
        return triton_ops(dot_dtype)
    raise ValueError(f"unknown kernels {prefer!r}: auto | default | cpu | torch | triton")
