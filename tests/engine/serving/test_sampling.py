from __future__ import annotations

import pytest
import torch

from engine.sampling import SamplingParams, sample


def test_greedy_topk1_and_tiny_top_p_pick_the_argmax():
    logits = torch.randn(4, 100, generator=torch.Generator().manual_seed(1))
    best = logits.argmax(-1).tolist()
    ps = [SamplingParams(), SamplingParams(temperature=1.0, top_k=1),
          SamplingParams(temperature=1.0, top_p=1e-6), SamplingParams(temperature=0.0, seed=3)]
    assert sample(logits, ps, [None, None, None, None]) == best


def test_seeded_sampling_is_reproducible_and_respects_top_k():
    logits = torch.zeros(1, 50)
    logits[0, :5] = 10.0
    p = SamplingParams(temperature=1.0, top_k=5, seed=42)
    draws = [sample(logits, [p], [torch.Generator().manual_seed(42)])[0] for _ in range(2)]
    assert draws[0] == draws[1]
    seen = {sample(logits, [p], [torch.Generator().manual_seed(i)])[0] for i in range(40)}
    assert seen <= set(range(5)) and len(seen) > 1


def test_bad_params_are_refused():
    for kw in ({"max_tokens": 0}, {"temperature": -1}, {"top_p": 0}, {"top_k": -2}, {"stop": [""]}):
        with pytest.raises(ValueError):
            SamplingParams(**kw)


def test_seeded_generator_lives_on_the_logits_device_and_continues_one_stream():
    """A CPU generator cannot drive a CUDA multinomial: the sequence makes its generator where the logits are
    (on CUDA the same code runs in bench/gpu_check.py) and keeps it across steps."""
    from engine.sequence import Sequence

    logits = torch.zeros(1, 1000)
    seq = Sequence([1, 2], SamplingParams(temperature=1.0, seed=11))
    gen = seq.generator_for(logits.device)
    assert gen.device == logits.device and seq.generator_for(logits.device) is gen
    draws = [sample(logits, [seq.params], [seq.generator_for(logits.device)])[0] for _ in range(5)]
    again = Sequence([1, 2], SamplingParams(temperature=1.0, seed=11))
    assert draws == [sample(logits, [again.params], [again.generator_for("cpu")])[0] for _ in range(5)]
    assert len(set(draws)) > 1  # one stream that advances, not a reseed per step
    assert Sequence([1], SamplingParams(temperature=1.0)).generator_for("cpu") is None
    meta = torch.zeros(1, 10, device="meta")
    with pytest.raises(ValueError, match="generator cannot sample"):
        sample(meta, [seq.params], [gen])
