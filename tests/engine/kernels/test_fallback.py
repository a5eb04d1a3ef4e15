"""A Triton kernel that cannot be built falls back to its torch reference (engine/kernels/fallback.py): one
logged warning naming the cause, the reference's result, the kernel never tried again; errors that are not
about building a kernel propagate."""
from __future__ import annotations

import logging

import pytest
import torch
from kernel_env import DEVICE

from engine.kernels import select_ops
from engine.kernels.fallback import Guarded, failures, is_build_error
from engine.kernels.fused_moe import nvfp4_linear_torch, nvfp4_linear_triton
from engine.quant.nvfp4 import quantize_nvfp4


def test_a_kernel_that_does_not_build_falls_back_once_with_the_cause(caplog):
    g = torch.Generator().manual_seed(0)
    w = quantize_nvfp4(torch.randn(32, 64, generator=g)).to(DEVICE)
    x = torch.randn(3, 64, generator=g).to(DEVICE)
    calls = []

    def broken(*a, **k):  # block_k 24: tl.arange over 12 lanes, which Triton refuses (not a power of two)
        calls.append(1)
        return nvfp4_linear_triton(*a, block_k=24, **k)

    op = Guarded("linear_nvfp4", broken, nvfp4_linear_torch)
    with caplog.at_level(logging.WARNING, logger="engine.kernels.fallback"):
        got = op(x, w)
        again = op(x, w)
    torch.testing.assert_close(got, nvfp4_linear_torch(x, w))
    torch.testing.assert_close(again, got)
    assert len(calls) == 1 and op.failure and "power of 2" in op.failure
    assert sum("linear_nvfp4" in r.message and "torch reference" in r.message for r in caplog.records) == 1


def test_other_errors_propagate_and_the_engine_s_ops_are_guarded():
    def wrong_shape(x):
        raise ValueError("NVFP4 dims must be multiples of 16")

    op = Guarded("moe_nvfp4", wrong_shape, lambda x: x)
    with pytest.raises(ValueError, match="multiples of 16"):
        op(torch.zeros(1))
    assert op.failure is None
    assert not is_build_error(torch.cuda.OutOfMemoryError("out of memory"))
    ops = select_ops(DEVICE, "triton")
    names = ("decode_attention", "prefill_attention", "mamba_step", "moe_nvfp4", "linear_nvfp4", "ssd_scan")
    assert all(isinstance(getattr(ops, n), Guarded) for n in names)
    assert failures(ops) == {}
