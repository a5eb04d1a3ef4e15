"""The tiny hybrid model (Mamba2 + attention + MLP + MoE) served with the kernels equals the engine's own torch
paths: batched paged decode attention and the in-place Mamba2 state update, picked once per engine
(``kernels=``): "torch" (the kernels' references) and "triton" (the Triton kernels: on CUDA when present,
else through TRITON_INTERPRET=1), fp32 and fp8 KV."""
from __future__ import annotations

import os

import pytest
import torch

from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

PROMPTS = [[3, 14, 15, 92, 65], [35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28], [8, 41, 97 % 96, 16]]


def run(loaded, kernels: str, kv_dtype: str, n: int = 8):
    engine = LLMEngine(loaded, EngineConfig(max_model_len=128, max_num_seqs=4, kv_dtype=kv_dtype, chunk_tokens=16,
                                            block_size=8, speculative=False, kernels=kernels))
    seqs = [engine.add_request(p, SamplingParams(max_tokens=n, ignore_eos=True)) for p in PROMPTS]
    while engine.has_work:
        engine.step()
    return engine, [s.output_ids for s in seqs]


@pytest.mark.parametrize("kv_dtype", ["float32", "fp8"])
@pytest.mark.parametrize("kernels", ["torch", pytest.param("triton", marks=pytest.mark.slow)])
def test_model_with_kernels_equals_the_torch_paths(tiny_hybrid, kernels, kv_dtype):
    if kernels == "triton":
        pytest.importorskip("triton")
    _, want = run(tiny_hybrid, "default", kv_dtype)
    engine, got = run(tiny_hybrid, kernels, kv_dtype)
    assert engine.runner.ops.name == kernels
    assert got == want


def test_kernels_are_picked_once_per_device(tiny_hybrid):
    from engine.kernels import select_ops

    assert select_ops("cpu").name == "default"  # the CPU engine keeps its SDPA / ssd_step paths
    engine, _ = run(tiny_hybrid, "torch", "float32", n=1)
    assert all(m.ssm_update is engine.runner.ops.mamba_step for m in tiny_hybrid.model.mamba_layers())
    assert engine.runner.ctx.ops is engine.runner.ops
    with pytest.raises(ValueError, match="unknown kernels"):
        select_ops("cpu", "cuda-graphs")
