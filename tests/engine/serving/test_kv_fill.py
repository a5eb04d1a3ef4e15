"""The long-context benchmark's fast path (engine/kv_fill.py) at small size: a sequence whose cache is written by
``admit_filled`` with a prefilled sequence's own K/V and Mamba state continues exactly as the prefilled one does,
and the random fill reaches every position of every attention layer (FP8 pools through their scales)."""
from __future__ import annotations

import pytest
import torch

from engine.kv_fill import admit_filled
from engine.kv_quant import read_fp8
from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams

PROMPT = [(7 * i + 3) % 90 + 1 for i in range(45)]  # 45 tokens: two full blocks of 16 and a partial one


def engine_for(loaded, kv_dtype: str = "float32") -> LLMEngine:
    return LLMEngine(loaded, EngineConfig(max_model_len=128, max_num_seqs=2, kv_dtype=kv_dtype, chunk_tokens=64,
                                          speculative=False))


def run(engine: LLMEngine, seqs) -> list[list[int]]:
    while engine.has_work:
        engine.step()
    return [s.output_ids for s in seqs]


def test_filled_sequence_continues_like_the_prefilled_one(tiny_hybrid):
    params = SamplingParams(max_tokens=8, ignore_eos=True)
    ref = engine_for(tiny_hybrid)
    want = run(ref, [ref.add_request(PROMPT, params)])[0]

    # the cache of PROMPT[:-1] as a real prefill leaves it
    src = engine_for(tiny_hybrid)
    pre = src.add_request(PROMPT[:-1], SamplingParams(max_tokens=2, ignore_eos=True))  # stays running
    src.step()
    assert pre.num_cached == len(PROMPT) - 1
    kv, bs = src.runner.kv, src.runner.kv.block_size
    slots = torch.tensor([pre.block_table[t // bs] * bs + t % bs for t in range(len(PROMPT) - 1)])

    def values(_seq, layer, start, count):
        s = slots[start:start + count]
        return kv.k[layer][:, s].transpose(0, 1), kv.v[layer][:, s].transpose(0, 1)

    engine = engine_for(tiny_hybrid)
    seq = engine.add_request(PROMPT, params)
    admit_filled(engine, [seq], kv_values=values, chunk_tokens=16)  # several chunks, one not block-aligned at end
    assert seq.num_cached == len(PROMPT) - 1 and not engine.scheduler.waiting
    for i in range(len(src.runner.states.conv)):
        engine.runner.states.conv[i][seq.state_slot].copy_(src.runner.states.conv[i][pre.state_slot])
        engine.runner.states.ssm[i][seq.state_slot].copy_(src.runner.states.ssm[i][pre.state_slot])
    assert run(engine, [seq])[0] == want


@pytest.mark.parametrize("kv_dtype", ["bfloat16", "fp8"])
def test_random_fill_writes_every_position_and_decodes(tiny_hybrid, kv_dtype):
    engine = engine_for(tiny_hybrid, kv_dtype)
    seqs = [engine.add_request([1] * 100, SamplingParams(max_tokens=3, ignore_eos=True)) for _ in range(2)]
    admit_filled(engine, seqs, seed=1, chunk_tokens=32)
    kv, bs = engine.runner.kv, engine.runner.kv.block_size
    for seq in seqs:
        slots = torch.tensor([seq.block_table[t // bs] * bs + t % bs for t in range(99)])
        for layer in range(len(kv.k)):
            k = read_fp8(kv.k[layer], kv.k_scale[layer], slots, bs) if kv.fp8 else kv.k[layer][:, slots].float()
            assert torch.isfinite(k).all() and (k != 0).float().mean() > 0.95  # N(0, 1) values, none left empty
            assert 0.8 < k.std() < 1.2
    outs = run(engine, seqs)
    assert [len(o) for o in outs] == [3, 3]
    with pytest.raises(ValueError, match="not waiting"):
        admit_filled(engine, seqs)
