"""Batched CPU decode attention on the real SmolLM2-135M weights: the same greedy tokens as per-sequence
attention, for concurrent sequences of different lengths, with prompt lookup (verify steps) and without,
fp32 and bf16 KV, fp32 GEMMs (slow: loads the packaged GGUF)."""
from __future__ import annotations

import pytest
import torch

from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams

pytestmark = pytest.mark.slow

TEXTS = ["The supplier shall deliver the goods to the buyer within thirty days of the order. " * 3,
         "Section 4. Payment. The licensee pays a fee of 1,200 EUR per quarter, due on the first day. " * 5,
         "This agreement is governed by the laws of the State of New York.",
         "Either party may terminate this agreement on ninety days' written notice. " * 8]


@pytest.fixture(scope="module")
def smollm2():
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small steps: OpenMP hand-off dominates on a loaded 2-core box
    # fp32 GEMMs: the int4 weight GEMM rounds logits to bf16, where near ties flip on any summation order
    yield load_model(packaged_llm_gguf(), dtype=torch.float32, cpu_gemm="onednn")
    torch.set_num_threads(threads)


def greedy(loaded, kernels: str, kv_dtype: str, speculative: bool):
    engine = LLMEngine(loaded, EngineConfig(max_model_len=512, max_num_seqs=4, memory_gib=1.5, kv_dtype=kv_dtype,
                                            chunk_tokens=128, speculative=speculative, kernels=kernels))
    seqs = [engine.add_request(loaded.tokenizer.encode(t), SamplingParams(max_tokens=24, ignore_eos=True))
            for t in TEXTS]
    while engine.has_work:
        engine.step()
    return engine, [s.output_ids for s in seqs]


@pytest.mark.parametrize("kv_dtype,speculative", [("float32", False), ("float32", True), ("bfloat16", False)])
def test_batched_decode_attention_gives_the_per_sequence_greedy_tokens(smollm2, kv_dtype, speculative):
    _, want = greedy(smollm2, "default", kv_dtype, speculative)
    engine, got = greedy(smollm2, "auto", kv_dtype, speculative)
    assert engine.runner.ops.name == "cpu" and engine.runner.ctx.ops.plan_decode is not None
    assert got == want
