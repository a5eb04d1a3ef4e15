"""The compiled one-sequence CPU decode step (engine/compiled_decode.py) on the real SmolLM2-135M int4 weights:
teacher-forced over a real text, each step's logits through the compiled graph against the eager paged step's
on the same pool; the engine takes the compiled step for one sequence only and keeps the eager one elsewhere
(slow: compiles the step, ~25 s from inductor's cache, ~2 min cold)."""
from __future__ import annotations

import pytest
import torch

from engine.forward_context import SeqSpan
from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams

pytestmark = pytest.mark.slow

TEXT = ("12.2 Limitation of Liability. Except for a party's indemnification obligations, neither party's aggregate "
        "liability arising out of this Agreement shall exceed the fees paid by Customer in the twelve months "
        "preceding the claim. Either party may terminate this Agreement upon ninety days' prior written notice.")
STEPS = 24


@pytest.fixture(scope="module")
def compiled_engine():
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    loaded = load_model(packaged_llm_gguf())
    eng = LLMEngine(loaded, EngineConfig(max_model_len=256, max_num_seqs=2, memory_gib=2.0, speculative=False,
                                         compile_decode="wait"))
    assert eng.runner.compiled is not None and eng.runner.compiled.error is None and eng.runner.compiled.ready
    return eng


@torch.inference_mode()
def test_compiled_step_equals_the_eager_step_teacher_forced(compiled_engine):
    eng = compiled_engine
    runner, model, ctx = eng.runner, eng.model, eng.runner.ctx
    ids = eng.tokenizer.encode(TEXT)
    prompt, bs = ids[:len(ids) - STEPS], eng.config.block_size
    table = list(range(3, 3 + 256 // bs))  # starts at block 3: the past's first slot is not 0
    ctx.prepare([SeqSpan(0, len(prompt), 0)], [table], [0])
    model(torch.tensor(prompt), torch.arange(len(prompt)), ctx)
    start, diffs = table[0] * bs, []
    for n in range(len(prompt), len(ids)):
        tok = torch.tensor([ids[n]])
        got = model.compute_logits(runner.compiled(tok, start, start + n))  # writes slot start + n
        ctx.prepare([SeqSpan(0, 1, n)], [table], [0])  # the eager step rewrites that slot, reads the same past
        want = model.compute_logits(model(tok, torch.tensor([n]), ctx))
        assert int(got.argmax()) == int(want.argmax())
        diffs.append((got - want).abs())
    d = torch.cat(diffs)
    print(f"compiled vs eager over {STEPS} steps: max {float(d.max()):.3f} mean {float(d.mean()):.4f}")
    # the same GEMMs on the same inputs; only the fused norms / rope / casts round differently (bf16 q/k/v)
    assert float(d.max()) < 1.0 and float(d.mean()) < 0.1


def test_engine_takes_the_compiled_step_for_one_sequence_only(compiled_engine):
    eng, calls = compiled_engine, []
    compiled = eng.runner.compiled
    direct = compiled._direct
    compiled._direct = lambda *a: calls.append(a[1:]) or direct(*a)  # count the compiled steps, run them
    try:
        one = eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True))
        while eng.has_work:
            eng.step()
        assert len(calls) == 5  # every decode step after the prefill's token
        calls.clear()
        two = [eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True)) for _ in range(2)]
        while eng.has_work:
            eng.step()
        assert calls == []  # two sequences decode together on the eager batched step
    finally:
        compiled._direct = direct
    assert one.output_ids == two[0].output_ids == two[1].output_ids  # greedy: the same answer either way


def test_compile_decode_is_checked_and_left_off_where_it_does_not_apply():
    from hybrid_fixtures import random_hybrid, tiny_hybrid_config  # tests/engine/serving/

    from engine.model_runner import ModelRunner

    with pytest.raises(ValueError, match="compile_decode"):
        ModelRunner(None, 1, 16, 1, compile_decode="sometimes")
    hybrid = random_hybrid(tiny_hybrid_config(), seed=1)  # Mamba2 + attention + MoE blocks: not covered
    eng = LLMEngine(hybrid, EngineConfig(max_model_len=64, max_num_seqs=2, speculative=False, compile_decode="wait"))
    assert eng.runner.compiled is None and eng.stats()["compiled_decode"] == "off"


def test_background_compile_serves_eagerly_meanwhile_then_takes_over(compiled_engine):
    loaded = compiled_engine.loaded
    eng = LLMEngine(loaded, EngineConfig(max_model_len=256, max_num_seqs=2, memory_gib=2.0, speculative=False,
                                         compile_decode="background"))
    compiled = eng.runner.compiled
    first = eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True))
    while eng.has_work:  # runs whether or not the compile is done (eager until it is)
        eng.step()
    assert compiled.wait(timeout=900) and compiled.error is None and compiled.compile_seconds > 0
    assert eng.stats()["compiled_decode"] == "ready" and eng.stats()["compiled_decode_ready"] == 1
    again = eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True))
    while eng.has_work:
        eng.step()
    assert again.output_ids == first.output_ids
