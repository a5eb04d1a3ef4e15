"""Kernel tests: Triton on CUDA, or its interpreter on CPU (kernel_env.py); skipped with a message without
triton installed."""
from __future__ import annotations

import pytest

import kernel_env  # noqa: F401  (sets TRITON_INTERPRET before triton builds anything)

pytest.importorskip("triton", reason="triton is not installed (pip install -e '.[dev]')")
