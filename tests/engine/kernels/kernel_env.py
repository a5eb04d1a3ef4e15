"""Where the kernel tests run: the Triton kernels on CUDA when a GPU is present, else through Triton's
interpreter on CPU tensors (TRITON_INTERPRET=1, set before any kernel is built)."""
from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# The interpreter multiplies bf16 tl.dot operands wrongly: test in fp16 / fp32 there; bf16 too on a GPU.
DOT_DTYPES = [torch.float16, torch.float32] + ([torch.bfloat16] if DEVICE == "cuda" else [])
# fp32 tl.dots run as true fp32 on a GPU too (input_precision="ieee", engine/kernels/decode_attention.py
# _precision); the GPU's exp / summation order differ slightly from the CPU reference.
FP32_DOT_TOL = 1e-3 if DEVICE == "cuda" else 1e-4
