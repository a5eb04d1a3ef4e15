"""bench/gpu_check.py --tiny runs on CPU at toy size (kernels through TRITON_INTERPRET=1 when triton is
installed), so the prepared GPU check cannot rot between GPU runs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_gpu_check_tiny_runs_on_cpu():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--tiny"], capture_output=True,
                         text=True, timeout=600, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "seeded sampling on cpu: counter-based on the device, reproducible True, equal to cpu True" in text
    assert "[tiny puzzle] decode graphs: captured sizes none (CPU: the static-buffer step runs eagerly)" in text
    assert "[tiny puzzle] graph vs eager step, one sequence: max |logits diff| 0.00e+00" in text
    assert "[tiny puzzle] decode step (static buffers, eager" in text and "chunked prefill: 64 of 64 tokens" in text
    try:
        import triton  # noqa: F401
    except ImportError:
        return
    assert text.count(" ok;") == 4 and "FAIL" not in text  # two attention and two Mamba kernel checks
