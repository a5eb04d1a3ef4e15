"""The compiled CPU decode steps (engine/compiled_decode.py) on the real SmolLM2-135M int4 weights: one sequence
and a group of equally spaced ones, teacher-forced over a real text, each step's logits through the compiled
graph against the eager paged step's on the same pool; the engine takes a compiled step where its sequences
form one group and keeps the eager one elsewhere
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
    assert eng.runner.compiled.batch_ready and eng.stats()["compiled_decode"] == "ready"
    eng.runner.compiled.trial = None  # the tests below count which path each step takes; test_speed_trial_* set one
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


@torch.inference_mode()
def test_compiled_batch_step_equals_the_eager_step_teacher_forced(compiled_engine):
    """Three sequences with different pasts, their blocks equally spaced and handed over out of pool order: one
    compiled call (the shorter pasts masked) against the eager batched step on the same pool."""
    eng = compiled_engine
    model, ctx, bs = eng.model, eng.runner.ctx, eng.config.block_size
    ids = eng.tokenizer.encode(TEXT)
    tables = [list(range(2 + 4 * i, 6 + 4 * i)) for i in range(3)]  # 64 slots apart
    prompts = [30, 22, 41]
    for table, n in zip(tables, prompts):
        ctx.prepare([SeqSpan(0, n, 0)], [table], [0])
        model(torch.tensor(ids[:n]), torch.arange(n), ctx)
    diffs = []
    for step in range(6):
        pasts = [n + step for n in prompts]
        toks = [ids[p] for p in pasts]
        got = model.compute_logits(eng.runner.compiled.batch(torch.tensor(toks), tables[0][0] * bs, 4 * bs, pasts))
        ctx.prepare([SeqSpan(i, 1, p) for i, p in enumerate(pasts)], tables, [0] * 3)
        want = model.compute_logits(model(torch.tensor(toks), torch.tensor(pasts), ctx))
        assert got.argmax(-1).tolist() == want.argmax(-1).tolist()
        diffs.append((got - want).abs())
    d = torch.cat(diffs)
    print(f"compiled batch vs eager over 6 steps x 3 sequences: max {float(d.max()):.3f} mean {float(d.mean()):.4f}")
    assert float(d.max()) < 1.0 and float(d.mean()) < 0.1


def _count(compiled, calls: list):
    """Wrap both compiled graphs to record (kind, batch) per call; returns the undo."""
    one, batch = compiled._one, compiled._batch
    compiled._one = lambda **kw: calls.append(("one", 1)) or one(**kw)
    compiled._batch = lambda **kw: calls.append(("batch", len(kw["past"]))) or batch(**kw)

    def undo():
        compiled._one, compiled._batch = one, batch
    return undo


def test_engine_takes_the_compiled_steps_where_sequences_form_one_group(compiled_engine):
    eng, calls = compiled_engine, []
    undo = _count(eng.runner.compiled, calls)
    try:
        one = eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True))
        while eng.has_work:
            eng.step()
        assert calls == [("one", 1)] * 5  # every decode step after the prefill's token
        calls.clear()
        two = [eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True)) for _ in range(2)]
        while eng.has_work:
            eng.step()
        # admitted together, equal reservations: one group; the first token comes with the prefill
        assert calls and set(calls) == {("batch", 2)}
    finally:
        undo()
    assert one.output_ids == two[0].output_ids == two[1].output_ids  # greedy: the same answer either way


def test_one_group_needs_equally_spaced_runs_within_the_padding_bound(compiled_engine):
    from types import SimpleNamespace as Seq

    runner = compiled_engine.runner
    bs = compiled_engine.config.block_size
    spaced = [Seq(block_table=[10, 11], num_cached=20), Seq(block_table=[2, 3], num_cached=17),
              Seq(block_table=[6, 7], num_cached=25)]
    assert runner._one_group(spaced) == ([1, 2, 0], 2 * bs, 4 * bs)  # pool order, first past's slot, spacing
    uneven = spaced[:2] + [Seq(block_table=[7, 8], num_cached=25)]
    assert runner._one_group(uneven) is None
    scattered = spaced[:2] + [Seq(block_table=[6, 9], num_cached=25)]  # its past is not one run of slots
    assert runner._one_group(scattered) is None
    lopsided = [Seq(block_table=[2, 3], num_cached=1), Seq(block_table=[6, 7], num_cached=30)]
    assert runner._one_group(lopsided) is None  # reading 31 keys for a 2-key past: over MAX_PAD


def test_compile_decode_is_checked_and_left_off_where_it_does_not_apply():
    from hybrid_fixtures import random_hybrid, tiny_hybrid_config  # tests/engine/serving/

    from engine.model_runner import ModelRunner

    with pytest.raises(ValueError, match="compile_decode"):
        ModelRunner(None, 1, 16, 1, compile_decode="sometimes")
    hybrid = random_hybrid(tiny_hybrid_config(), seed=1)  # Mamba2 + attention + MoE blocks: not covered
    eng = LLMEngine(hybrid, EngineConfig(max_model_len=64, max_num_seqs=2, speculative=False, compile_decode="wait"))
    assert eng.runner.compiled is None and eng.stats()["compiled_decode"].startswith("off: mamba blocks")
    off = LLMEngine(hybrid, EngineConfig(max_model_len=64, max_num_seqs=2, speculative=False))
    assert off.stats()["compiled_decode"] == "off"


def test_the_onednn_path_is_not_compiled_and_says_why():
    """oneDNN-packed weights are opaque tensors torch.compile cannot fake: the engine does not try, and says so."""
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    loaded = load_model(packaged_llm_gguf(), cpu_gemm="onednn")
    eng = LLMEngine(loaded, EngineConfig(max_model_len=64, max_num_seqs=1, memory_gib=1.0, speculative=False,
                                         compile_decode="wait"))
    state = eng.stats()["compiled_decode"]
    assert eng.runner.compiled is None and state.startswith("off: oneDNN-packed weights") and eng.stats()[
        "compiled_decode_ready"] == 0


def test_speed_trial_keeps_the_faster_path_by_its_median():
    from engine.compiled_decode import SpeedTrial

    trial = SpeedTrial(steps=3)
    picks = []
    for compiled_s, eager_s in [(0.010, 0.002), (0.001, 0.003), (0.009, 0.004), (0.008, 0.005)]:
        for _ in range(2):  # the two paths alternate until each has 3 timings
            use = trial.use_compiled("one")
            picks.append(use)
            trial.record("one", use, compiled_s if use else eager_s)
    assert picks[:6] == [True, False] * 3
    assert trial.compiled["one"] is False and not trial.use_compiled("one")  # medians 0.009 vs 0.003
    assert trial.summary()["one"] == {"compiled_ms": 9.0, "eager_ms": 3.0, "kept": "eager"}
    fast = SpeedTrial(steps=1)
    fast.record("batch", True, 0.001)
    fast.record("batch", False, 0.002)
    assert fast.use_compiled("batch") and fast.summary()["batch"]["kept"] == "compiled"


def test_speed_trial_falls_back_to_eager_where_the_compiled_step_is_slower(compiled_engine):
    """The engine's own decode steps alternate between the paths; a compiled step made slower than eager (a sleep
    around the real graph) loses the trial, later steps run eagerly and the stats say why."""
    import time

    from engine.compiled_decode import SpeedTrial

    eng, calls = compiled_engine, []
    compiled = eng.runner.compiled
    undo = _count(compiled, calls)
    one = compiled._one
    compiled._one = lambda **kw: time.sleep(0.2) or one(**kw)
    compiled.trial = SpeedTrial(steps=3)
    try:
        seq = eng.add_request(TEXT, SamplingParams(max_tokens=12, ignore_eos=True))
        while eng.has_work:
            eng.step()
        stats = eng.stats()
    finally:
        undo()
        compiled.trial = None
    assert len(calls) == 3  # 11 decode steps: compiled, eager, compiled, eager, compiled, eager, then eager only
    assert stats["compiled_decode"].startswith("eager: the compiled step measured slower") and \
        stats["compiled_decode_ready"] == 0
    assert stats["compiled_decode_trial"]["one"]["kept"] == "eager" and len(seq.output_ids) == 12


def test_background_compile_serves_eagerly_meanwhile_then_takes_over(compiled_engine):
    loaded = compiled_engine.loaded
    eng = LLMEngine(loaded, EngineConfig(max_model_len=256, max_num_seqs=2, memory_gib=2.0, speculative=False,
                                         compile_decode="background"))
    compiled = eng.runner.compiled
    first = eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True))
    while eng.has_work:  # runs whether or not the compile is done (eager until it is)
        eng.step()
    assert compiled.wait(timeout=900) and compiled.error is None and compiled.compile_seconds > 0
    assert compiled.batch_seconds >= compiled.compile_seconds  # the one-sequence graph served first
    assert eng.stats()["compiled_decode"] == "ready" and eng.stats()["compiled_decode_ready"] == 1
    compiled.trial = None
    again = eng.add_request(TEXT, SamplingParams(max_tokens=6, ignore_eos=True))
    while eng.has_work:
        eng.step()
    assert again.output_ids == first.output_ids


def test_the_compile_cache_dir_replaces_inductors_default_but_not_a_users_choice(tmp_path, monkeypatch):
    from torch._inductor.runtime.runtime_utils import default_cache_dir

    from engine.compiled_decode import use_cache_dir

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())  # what inductor writes there itself
    assert use_cache_dir(tmp_path / "cc") == str(tmp_path / "cc") and (tmp_path / "cc").is_dir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))  # a user's choice wins
    assert use_cache_dir(tmp_path / "cc") == str(tmp_path / "mine")
