"""The engine on a tiny random hybrid model: paged KV + state pool match the dense reference exactly
through chunked prefill, batching, snapshot forks and speculative decoding."""
from __future__ import annotations

import random

import pytest
import torch

from engine.forward_context import DenseContext
from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams


def dense_greedy(loaded, prompt: list[int], n: int) -> list[int]:
    model, ctx, out = loaded.model, DenseContext.for_model(loaded.model, 1), []
    ids, pos = torch.tensor(prompt), torch.arange(len(prompt))
    with torch.inference_mode():
        for _ in range(n):
            h = model(ids, pos, ctx.next_step([len(ids)]))
            t = int(model.compute_logits(h[-1:]).argmax())
            out.append(t)
            ids, pos = torch.tensor([t]), torch.tensor([int(pos[-1]) + 1])
    return out


def run_all(engine: LLMEngine, seqs):
    while engine.has_work:
        engine.step()
    return [s.output_ids for s in seqs]


def make_engine(loaded, **kw) -> LLMEngine:
    cfg = dict(max_model_len=256, max_num_seqs=4, memory_gib=0.05, kv_dtype="float32", chunk_tokens=24,
               block_size=8)
    return LLMEngine(loaded, EngineConfig(**{**cfg, **kw}))


PROMPTS = [[random.Random(i).randrange(1, 96) for _ in range(n)] for i, n in enumerate((5, 40, 17, 63))]
GREEDY = SamplingParams(max_tokens=10, ignore_eos=True)


def test_chunked_batched_prefill_and_decode_equal_the_dense_reference(tiny_hybrid):
    engine = make_engine(tiny_hybrid)
    seqs = [engine.add_request(p, GREEDY) for p in PROMPTS]
    got = run_all(engine, seqs)
    assert got == [dense_greedy(tiny_hybrid, p, 10) for p in PROMPTS]
    st = engine.stats()
    assert st["kv_blocks_used"] == 0 and st["mamba_slots_used"] == 0


def test_fp8_and_bf16_kv_run_and_stay_close(tiny_hybrid):
    for kv in ("bfloat16", "fp8"):
        engine = make_engine(tiny_hybrid, kv_dtype=kv)
        assert engine.runner.kv.k[0].dtype == (torch.bfloat16 if kv == "bfloat16" else torch.float8_e4m3fn)
        out = run_all(engine, [engine.add_request(PROMPTS[1], GREEDY)])[0]
        assert len(out) == 10 and all(0 <= t < 96 for t in out)


def test_snapshot_fork_answers_exactly_as_a_fresh_prefill(tiny_hybrid):
    engine = make_engine(tiny_hybrid)
    doc = PROMPTS[3] + PROMPTS[1]  # 103 tokens: the last block is partial, so the fork copies it
    snap_seq = engine.add_request(doc, SamplingParams(max_tokens=1), snapshot_target="dossier")
    run_all(engine, [snap_seq])
    assert snap_seq.finish_reason == "snapshot" and engine.stats()["snapshots"] == 1
    used_by_snapshot = engine.stats()["kv_blocks_used"]
    for question in (PROMPTS[0], PROMPTS[2]):
        fork = engine.add_request(question, GREEDY, snapshot="dossier")
        fresh = engine.add_request(doc + question, GREEDY)
        engine.step()  # admits the fork: one step prefills only its question, not the document again
        assert fork.prefix_len == len(doc) and fork.num_cached == len(doc) + len(question)
        forked, fresh_out = run_all(engine, [fork, fresh])
        assert forked == fresh_out == dense_greedy(tiny_hybrid, doc + question, 10)
    assert engine.stats()["kv_blocks_used"] == used_by_snapshot  # forks gave back all their blocks


def test_speculative_decoding_equals_greedy_and_reports_acceptance(tiny_hybrid):
    repetitive = [5, 6, 7, 8, 9] * 6
    prompts = [repetitive, PROMPTS[1], PROMPTS[2]]
    params = SamplingParams(max_tokens=24, ignore_eos=True)
    plain = make_engine(tiny_hybrid)
    expect = run_all(plain, [plain.add_request(p, params) for p in prompts])
    spec = make_engine(tiny_hybrid, speculative=True, num_spec_tokens=3)
    got = run_all(spec, [spec.add_request(p, params) for p in prompts])
    assert got == expect
    assert spec.spec.verify_steps > 0 and spec.spec.mean_acceptance_length >= 1.0
    assert spec.spec.accepted_drafts < spec.spec.drafted  # rejections happened: the Mamba rollback ran
    assert spec.stats()["kv_blocks_used"] == 0


def test_too_small_memory_budget_is_a_clear_error(tiny_hybrid):
    with pytest.raises(ValueError, match="cannot hold one"):
        make_engine(tiny_hybrid, memory_gib=0.00001)


@pytest.mark.parametrize("L,S,H,KV,window", [(37, 3000, 4, 2, None), (64, 2600, 6, 3, None), (20, 2500, 4, 1, 700)])
def test_blockwise_long_context_attention_equals_sdpa(L, S, H, KV, window):
    from engine.forward_context import causal_attention
    from engine.paged_context import blockwise_attention

    g = torch.Generator().manual_seed(L)
    q, k, v = (torch.randn(n, h, 16, generator=g) for n, h in ((L, H), (S, KV), (S, KV)))
    got = blockwise_attention(q, lambda a, b: (k[a:b], v[a:b]), S, KV, 0.25, S - L, window, key_block=256)
    torch.testing.assert_close(got, causal_attention(q, k, v, 0.25, S - L, window), atol=1e-5, rtol=1e-4)
