"""FP8 weight projection with the weight dequantized in the kernel (engine/kernels/fp8_linear.py) equals the
dequantize-then-matmul reference for 128x128 block scales (a ragged last block), per-row and per-tensor
scales, with and without split-K; the e4m3 decode covers subnormals and negative values bit by bit."""
from __future__ import annotations

import pytest
import torch
from kernel_env import DEVICE, DOT_DTYPES, FP32_DOT_TOL

from engine.kernels.fp8_linear import fp8_linear_torch, fp8_linear_triton
from engine.quant.fp8 import Fp8Tensor, quantize_fp8


def on_device(w: Fp8Tensor) -> Fp8Tensor:
    return Fp8Tensor(w.data.to(DEVICE), w.scale.to(DEVICE), w.block)


@pytest.mark.parametrize("dot", DOT_DTYPES)
@pytest.mark.parametrize("kind", ["block", "row", "tensor"])
@pytest.mark.parametrize("T,split", [(1, None), (3, 3), (19, 1)])
def test_fp8_linear_equals_the_dequantized_matmul(kind, T, split, dot):
    g = torch.Generator().manual_seed(T)
    out, inp = 200, 160  # 2 x 2 blocks of 128, the last ones partial
    w = torch.randn(out, inp, generator=g)
    if kind == "block":
        q = quantize_fp8(w, block=128)
    elif kind == "tensor":
        q = quantize_fp8(w, block=None)
    else:
        s = w.abs().amax(1) / 448.0
        q = Fp8Tensor.from_checkpoint((w / s[:, None]).to(torch.float8_e4m3fn), s)
    x = torch.randn(T, inp, generator=g)
    want = fp8_linear_torch(x, q)
    got = fp8_linear_triton(x.to(DEVICE).to(dot), on_device(q), dot_dtype=dot, block_n=32, block_k=32,
                            split_k=split)
    tol = FP32_DOT_TOL if dot == torch.float32 else 3e-2
    torch.testing.assert_close(got.float().cpu(), want, atol=tol * 4, rtol=tol)


def test_every_e4m3_code_decodes_exactly():
    codes = torch.arange(256, dtype=torch.uint8)
    codes = codes[(codes & 0x7F) != 0x7F]  # not NaN
    w = codes.view(torch.float8_e4m3fn).reshape(1, -1)  # 254 values incl. subnormals, +-0, +-448
    q = Fp8Tensor(w, torch.tensor(1.0))
    eye = torch.eye(w.shape[1])
    got = fp8_linear_triton(eye.to(DEVICE), on_device(q), dot_dtype=torch.float32, block_n=16, block_k=32)
    assert torch.equal(got.cpu()[:, 0], w.float()[0])
