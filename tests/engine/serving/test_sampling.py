from __future__ import annotations

import pytest
import torch

from engine.sampling import SamplingBatch, SamplingParams, gumbel_noise, sample, sample_tokens


def test_greedy_topk1_and_tiny_top_p_pick_the_argmax():
    logits = torch.randn(4, 100, generator=torch.Generator().manual_seed(1))
    best = logits.argmax(-1).tolist()
    ps = [SamplingParams(), SamplingParams(temperature=1.0, top_k=1),
          SamplingParams(temperature=1.0, top_p=1e-6), SamplingParams(temperature=0.0, seed=3)]
    assert sample(logits, ps) == best


def test_seeded_sampling_is_reproducible_and_respects_top_k():
    logits = torch.zeros(1, 50)
    logits[0, :5] = 10.0
    p = SamplingParams(temperature=1.0, top_k=5, seed=42)
    draws = [sample(logits, [p], [42], [7])[0] for _ in range(2)]
    assert draws[0] == draws[1]
    seen = {sample(logits, [p], [i], [7])[0] for i in range(40)}
    assert seen <= set(range(5)) and len(seen) > 1


def test_top_p_keeps_the_smallest_prefix_reaching_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    p = SamplingParams(temperature=1.0, top_p=0.7)
    assert {sample(logits, [p], [s], [0])[0] for s in range(60)} == {0, 1}


def test_draws_follow_the_softmax():
    """Gumbel-max over the counter-based noise is a draw from softmax(logits / T): frequencies over 4,000
    counters are within a few standard errors of the probabilities."""
    probs = torch.tensor([0.5, 0.25, 0.15, 0.1])
    n = 4000
    logits = torch.log(probs).repeat(n, 1) * 2.0  # temperature 2 gives the probabilities back
    toks = sample_tokens(logits, SamplingBatch.prepare([SamplingParams(temperature=2.0)] * n, [5] * n,
                                                       list(range(n)), 4, "cpu"))
    freq = torch.bincount(toks, minlength=4).float() / n
    assert ((freq - probs).abs() <= 4 * (probs * (1 - probs) / n).sqrt()).all(), freq


def test_bad_params_are_refused():
    for kw in ({"max_tokens": 0}, {"temperature": -1}, {"top_p": 0}, {"top_k": -2}, {"stop": [""]}):
        with pytest.raises(ValueError):
            SamplingParams(**kw)


def test_a_request_s_draws_are_a_function_of_its_seed_and_position():
    """No generator state: a seeded request draws the same token at the same position whatever its batch
    neighbours are, successive positions continue one stream, and the sampled ids stay on the device."""
    from engine.sequence import Sequence

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 1000, generator=g)
    seq = Sequence([1, 2], SamplingParams(temperature=1.0, seed=11))
    assert seq.sampling_seed == 11 and Sequence([1], SamplingParams()).sampling_seed != \
        Sequence([1], SamplingParams()).sampling_seed
    row = logits[1:2]
    draws = [sample(row, [seq.params], [seq.sampling_seed], [p])[0] for p in range(8)]
    assert len(set(draws)) > 1  # one stream that advances with the position, not one token
    mixed = [SamplingParams(), seq.params, SamplingParams(temperature=0.7, top_k=20)]
    for p in range(8):
        assert sample(logits, mixed, [0, 11, 99], [p, p, p])[1] == draws[p]
    batch = SamplingBatch.prepare(mixed, [0, 11, 99], [3, 3, 3], 1000, "cpu")
    toks = sample_tokens(logits, batch)
    assert toks.dtype == torch.long and toks.device == logits.device
    assert int(toks[0]) == int(logits[0].argmax())


def test_noise_is_the_same_on_every_device():
    """The hash uses only int64 ops whose products stay below 2^63, so CUDA gives CPU's bits (compared on CUDA
    when present); distinct (seed, counter, token) give distinct noise."""
    noise = gumbel_noise(torch.tensor([0, 11, 2 ** 40 + 3]), torch.tensor([0, 5, 123456]), 6)
    assert torch.isfinite(noise).all() and noise.shape == (3, 6)
    assert len(set(noise.flatten().tolist())) == 18
    if torch.cuda.is_available():
        on_gpu = gumbel_noise(torch.tensor([0, 11, 2 ** 40 + 3], device="cuda"),
                              torch.tensor([0, 5, 123456], device="cuda"), 6)
        assert torch.equal(on_gpu.cpu(), noise)
