"""The tiny hybrid model (Mamba2 + attention + MLP + MoE) served with the kernels equals the engine's own torch
paths: batched paged decode attention and the in-place Mamba2 state update, picked once per engine
(``kernels=``): "torch" (the kernels' references) and "triton" (the Triton kernels: on CUDA when present,
else through TRITON_INTERPRET=1), fp32 and fp8 KV."""
from __future__ import annotations

import pytest
import torch
from hybrid_fixtures import on_device, triton_device, use_interpreter_without_cuda

from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams

use_interpreter_without_cuda()

PROMPTS = [[3, 14, 15, 92, 65], [35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28], [8, 41, 97 % 96, 16]]


def run(loaded, kernels: str, kv_dtype: str, n: int = 8):
    """``kernels="triton"`` runs on ``triton_device()`` (a copy of the model moved there)."""
    if kernels == "triton":
        loaded = on_device(loaded, triton_device())
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

    assert select_ops("cpu").name == "cpu"  # the CPU engine's torch paths + batched decode attention
    engine, _ = run(tiny_hybrid, "torch", "float32", n=1)
    assert all(m.ssm_update is engine.runner.ops.mamba_step for m in tiny_hybrid.model.mamba_layers())
    assert engine.runner.ctx.ops is engine.runner.ops
    with pytest.raises(ValueError, match="unknown kernels"):
        select_ops("cpu", "cuda-graphs")


@pytest.fixture(scope="module")
def nvfp4_hybrid():
    """The tiny hybrid with NVFP4 projections and experts (stored compressed, as a ModelOpt checkpoint loads)."""
    from hybrid_fixtures import random_hybrid, tiny_hybrid_config

    from engine.layers.linear import Linear
    from engine.layers.moe import Experts
    from engine.quant.nvfp4 import quantize_nvfp4

    loaded = random_hybrid(tiny_hybrid_config(), seed=3)
    for name, m in loaded.model.named_modules():
        if isinstance(m, Linear) and m.in_features % 16 == 0 and name != "lm_head":
            m.set_weight([quantize_nvfp4(m.weight.detach())], torch.float32, "cpu")
        elif isinstance(m, Experts):
            m.compressed_up = [quantize_nvfp4(w) for w in m.up.detach()]
            m.compressed_down = [quantize_nvfp4(w) for w in m.down.detach()]
    return loaded


@pytest.mark.parametrize("kernels", ["torch", pytest.param("triton", marks=pytest.mark.slow)])
def test_nvfp4_model_with_fused_moe_and_gemm_kernels_equals_the_torch_paths(nvfp4_hybrid, kernels):
    if kernels == "triton":
        pytest.importorskip("triton")
    _, want = run(nvfp4_hybrid, "default", "float32")
    engine, got = run(nvfp4_hybrid, kernels, "float32")
    model = engine.model
    moe = [m for m in model.modules() if type(m).__name__ == "Experts"]
    assert moe and all(m.fused is not None for m in moe)
    assert sum(1 for m in model.modules() if getattr(m, "quant_gemm", None) is not None) >= 6
    assert got == want


@pytest.mark.slow
def test_prefill_scan_kernel_in_the_model_equals_the_torch_scan():
    """With Mamba chunks of 16 the prefill scan goes through the Triton SSD kernel as well."""
    pytest.importorskip("triton")
    import dataclasses

    from hybrid_fixtures import random_hybrid, tiny_hybrid_config

    from engine.ops.ssd import ssd_chunk_scan

    cfg = tiny_hybrid_config()
    cfg.blocks = [dataclasses.replace(b, mamba=dataclasses.replace(b.mamba, chunk_size=16)) if b.mamba else b
                  for b in cfg.blocks]
    loaded = random_hybrid(cfg, seed=5)
    _, want = run(loaded, "default", "float32")
    engine, got = run(loaded, "triton", "float32")
    assert all(m.scan is not ssd_chunk_scan for m in engine.model.mamba_layers())
    assert got == want


@pytest.mark.parametrize("kernels", ["torch", pytest.param("triton", marks=pytest.mark.slow)])
def test_fp8_model_with_the_in_kernel_dequantizing_gemm_equals_the_torch_paths(kernels):
    """FP8 projections (128x128 block scales) run through fp8_linear (dequantized in the kernel, not whole
    per call) and give the tokens of the engine's dequantize-then-matmul path."""
    if kernels == "triton":
        pytest.importorskip("triton")
    from hybrid_fixtures import random_hybrid, tiny_hybrid_config

    from engine.layers.linear import Linear
    from engine.quant.fp8 import quantize_fp8

    loaded = random_hybrid(tiny_hybrid_config(), seed=4)
    for name, m in loaded.model.named_modules():
        if isinstance(m, Linear) and name != "lm_head":
            m.set_weight([quantize_fp8(m.weight.detach(), block=128)], torch.float32, "cpu")
    _, want = run(loaded, "default", "float32")
    engine, got = run(loaded, kernels, "float32")
    assert sum(1 for m in engine.model.modules() if getattr(m, "quant_gemm", None) is not None) >= 6
    assert got == want
