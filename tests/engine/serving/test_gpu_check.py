"""bench/gpu_check.py --tiny runs on CPU at toy size (kernels through TRITON_INTERPRET=1 when triton is
installed), every kernel check active, so the prepared GPU check cannot rot between GPU runs; a failing check
makes it exit non-zero."""
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
    assert "logits finite True: ok" in text
    assert "[tiny puzzle] decode step (static buffers, eager" in text and "chunked prefill: 64 of 64 tokens" in text
    try:
        import triton  # noqa: F401
    except ImportError:
        return
    kernels = ("fused NVFP4 MoE", "NVFP4 GEMM", "FP8 GEMM", "SSD chunked scan", "prefill attention",
               "decode attention fp8", "decode attention float16", "Mamba2 decode update")
    for name in kernels:  # each kernel checked against its reference, and held to its tolerance
        lines = [ln for ln in text.splitlines() if ln.startswith(name)]
        assert lines and all(ln.endswith(" ok") for ln in lines), (name, lines)
    assert "kernel checks: all ok" in text and "FAIL" not in text
    assert text.rstrip().endswith(": ok")


@pytest.mark.slow
def test_a_failing_kernel_check_fails_the_run():
    """A kernel held to a tolerance it cannot meet: the check says FAIL and the script exits non-zero."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    code = ("import sys; sys.path[:0] = ['bench', '.']; import gpu_kernels, gpu_check; gpu_kernels.HALF_TOL = 1e-9; "
            "gpu_kernels.ALL = (gpu_kernels.nvfp4_gemm,); raise SystemExit(gpu_check.main(['--tiny', '--skip', 'puzzle']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "NVFP4 GEMM 48x64 T=3: max rel err" in out.stdout and "FAIL: kernels" in out.stdout


@pytest.mark.slow
def test_gpu_engine_check_tiny_runs_on_cpu():
    """bench/gpu_engine_check.py (run by bench/gpu_first_run.sh): the NVFP4 hybrid served with the Triton
    kernels equals the torch reference kernels, no kernel fell back."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_engine_check.py"), "--tiny"],
                         capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "greedy tokens equal True" in out.stdout and out.stdout.rstrip().endswith("engine check: ok")
