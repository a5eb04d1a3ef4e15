"""Prompt-lookup verification on a hybrid model rolls rejected drafts back from per-position Mamba checkpoints:
the output equals plain greedy decoding, and after every step each sequence's Mamba state (conv and SSM)
equals the state of a dense forward over exactly its cached tokens — what the clone-and-re-feed path it
replaced guaranteed — with rejections actually happening."""
from __future__ import annotations

import pytest
import torch

from hybrid_fixtures import on_device, triton_device, use_interpreter_without_cuda

from engine.forward_context import DenseContext
from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams
from engine.spec_checkpoints import MambaCheckpoints

use_interpreter_without_cuda()  # the Triton case: compiled on CUDA, else interpreted on a CPU

REPETITIVE = [5, 6, 7, 8, 9] * 5 + [5, 6, 40]  # drafts are proposed, and the model often disagrees
PROMPTS = [REPETITIVE, [11, 12, 13, 11, 12, 13, 11, 12, 30, 11, 12, 13], [3, 14, 15, 92, 65]]


def engine_for(loaded, speculative: bool, kernels: str) -> LLMEngine:
    return LLMEngine(loaded, EngineConfig(max_model_len=128, max_num_seqs=4, kv_dtype="float32", chunk_tokens=48,
                                          block_size=8, speculative=speculative, num_spec_tokens=4,
                                          kernels=kernels))


def dense_states(model, tokens: list[int]):
    ctx = DenseContext.for_model(model, 1)
    with torch.inference_mode():
        dev = model.device
        model(torch.tensor(tokens, device=dev), torch.arange(len(tokens), device=dev), ctx.next_step([len(tokens)]))
    return [ctx.mamba_state(i, 0) for i in range(len(model.mamba_layers()))]


@pytest.mark.parametrize("kernels", ["default", "torch", pytest.param("triton", marks=pytest.mark.slow)])
def test_checkpoint_rollback_equals_greedy_and_the_dense_state(tiny_hybrid, kernels):
    if kernels == "triton":
        pytest.importorskip("triton")
        tiny_hybrid = on_device(tiny_hybrid, triton_device())
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    plain = engine_for(tiny_hybrid, False, kernels)
    want = [plain.add_request(p, params) for p in PROMPTS]
    while plain.has_work:
        plain.step()
    engine = engine_for(tiny_hybrid, True, kernels)
    assert engine.runner.checkpoints is not None
    seqs = [engine.add_request(p, params) for p in PROMPTS]
    checked = 0
    while engine.has_work:
        engine.step()
        for seq in engine.scheduler.running:
            if seq.is_prefilling or checked > 40:
                continue
            ref = dense_states(tiny_hybrid.model, seq.token_ids[:seq.num_cached])
            for i, (conv, ssm) in enumerate(ref):
                torch.testing.assert_close(engine.runner.states.conv[i][seq.state_slot], conv, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(engine.runner.states.ssm[i][seq.state_slot], ssm, rtol=1e-4, atol=1e-5)
            checked += 1
    assert [s.output_ids for s in seqs] == [s.output_ids for s in want]
    spec = engine.spec
    assert checked > 10 and spec.verify_steps > 0 and 0 < spec.accepted_drafts < spec.drafted  # rejections happened


def test_checkpoint_memory_is_counted_and_refuses_too_many_rows(tiny_hybrid):
    engine = engine_for(tiny_hybrid, True, "default")
    ck = engine.runner.checkpoints
    shapes = tiny_hybrid.model.mamba_state_shapes()
    assert ck.nbytes == MambaCheckpoints.nbytes_for(shapes, 4, 5, 4)
    no_spec = engine_for(tiny_hybrid, False, "default")
    assert no_spec.runner.checkpoints is None
    assert engine.budget.checkpoint_bytes == ck.nbytes and no_spec.budget.checkpoint_bytes == 0
    with pytest.raises(ValueError, match="checkpoint rows"):
        ck.begin({i: (i + 1, 2) for i in range(5)})
    with pytest.raises(ValueError, match="positions"):
        ck.begin({0: (1, 6)})
