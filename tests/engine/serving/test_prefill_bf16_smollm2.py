"""bf16 prefill attention (PagedContext.prefill_bf16) on the real SmolLM2-135M int4 weights: the engine turns it
on where the prefill GEMMs already round to bf16 (int4 weights), and a chunked 2,600-token prefill on a bf16
KV pool stays within the int4 path's documented tolerance of the exact fp32 path (docs/engine-serving-speed.md),
about as close as fp32 attention over the same pool (slow: loads the packaged GGUF twice)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cpu_features import NO_ONEDNN_BF16, onednn_bf16  # tests/cpu_features.py
from logit_tolerance import assert_bf16_attention_within_tolerance  # tests/engine/serving/

from engine.forward_context import SeqSpan
from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
MAX_ABS, MEAN_ABS, TOP1 = 2.5, 0.25, 0.9  # tests/engine/core/test_quant_int4_smollm2.py
N_TOKENS, CHUNK, EVERY = 2600, 512, 13  # past LONG_CONTEXT (2,048): both attention paths of a chunk run


@pytest.fixture(scope="module")
def models():
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # deterministic GEMM blocking, and no OpenMP stalls on a loaded box
    yield load_model(packaged_llm_gguf(), dtype=torch.float32, cpu_gemm="onednn"), load_model(packaged_llm_gguf())
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def prompt(models):
    text = "\n\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    ids = models[0].tokenizer.encode(text)[:N_TOKENS]
    assert len(ids) == N_TOKENS
    return ids


def engine(loaded, kv_dtype: str, n: int) -> LLMEngine:
    return LLMEngine(loaded, EngineConfig(max_model_len=n + 16, max_num_seqs=1, memory_gib=2.0, kv_dtype=kv_dtype,
                                          chunk_tokens=CHUNK, speculative=False))


@torch.inference_mode()
def chunked_logits(loaded, ids: list[int], kv_dtype: str, bf16: bool) -> torch.Tensor:
    """Logits of every EVERY-th position of a prefill in CHUNK-token steps on the engine's paged context."""
    eng = engine(loaded, kv_dtype, len(ids))
    ctx = eng.runner.ctx
    ctx.prefill_bf16 = bf16
    table, out = list(range(-(-len(ids) // eng.config.block_size))), []
    for a in range(0, len(ids), CHUNK):
        n = min(CHUNK, len(ids) - a)
        ctx.prepare([SeqSpan(0, n, a)], [table], [0])
        h = loaded.model(torch.tensor(ids[a:a + n]), torch.arange(a, a + n), ctx)
        out.append(loaded.model.compute_logits(h[(-a) % EVERY::EVERY]))
    return torch.cat(out)


@pytest.mark.skipif(not onednn_bf16(), reason=NO_ONEDNN_BF16)
def test_engine_turns_bf16_prefill_on_only_where_the_gemms_are_bf16(models):
    fp32, int4 = models
    assert engine(int4, "bfloat16", 64).runner.ctx.prefill_bf16
    assert not engine(fp32, "bfloat16", 64).runner.ctx.prefill_bf16


def test_bf16_prefill_attention_within_tolerance_of_the_fp32_path(models, prompt):
    fp32, int4 = models
    want = chunked_logits(fp32, prompt, "float32", False)
    fp32_attn = chunked_logits(int4, prompt, "bfloat16", False)
    bf16_attn = chunked_logits(int4, prompt, "bfloat16", True)
    assert want.shape[0] == len(range(0, N_TOKENS, EVERY)) and want.abs().max() > 20
    assert_bf16_attention_within_tolerance(want, fp32_attn, bf16_attn, MAX_ABS, MEAN_ABS, TOP1)


@torch.inference_mode()
@pytest.mark.skipif(not onednn_bf16(), reason=NO_ONEDNN_BF16)
def test_question_on_a_snapshot_reads_the_forked_past_in_bf16_like_a_fresh_prefill(models, prompt):
    """A question after a snapshot of a long system message (the dossier case): its past is a fork whose last
    block was copied, so it reads a gather, not a view; the bf16 path takes it, with the fresh prefill's answer."""
    _, int4 = models
    prefix, question = prompt[:2100], prompt[2100:2140]  # a 40-token continuation: a prefill chunk, not a decode
    eng = engine(int4, "bfloat16", len(prefix) + len(question) + 8)
    assert eng.runner.ctx.prefill_bf16
    # a sampled row, so last_logits are the exact head's everywhere (a greedy row's are the 4-bit candidate
    # head's outside its top 32: HybridLM.compute_logits)
    greedy = SamplingParams(max_tokens=1, ignore_eos=True, temperature=1.0, seed=0)
    eng.add_request(prefix, SamplingParams(max_tokens=1), snapshot_target="dossier")
    while eng.has_work:
        eng.step()
    eng.add_request(question, greedy, snapshot="dossier")
    while eng.has_work:
        eng.step()
    assert not isinstance(eng.runner.ctx.read[0], slice)  # the forked past was gathered
    from_snapshot = eng.runner.last_logits[-1]
    fresh = engine(int4, "bfloat16", len(prefix) + len(question) + 8)
    fresh.add_request(prefix + question, greedy)
    while fresh.has_work:
        fresh.step()
    want = fresh.runner.last_logits[-1]
    diff = (from_snapshot - want).abs()
    print(f"snapshot vs fresh: max {float(diff.max()):.3f} mean {float(diff.mean()):.4f}")
    # both int4 paths (documented: within mean 0.25 of fp32); seen mean 0.049 and 0.118 on two versions of the
    # repo's docs (the prompt), max 0.20-0.31
    assert int(from_snapshot.argmax()) == int(want.argmax()) and float(diff.max()) < 1.0 and float(diff.mean()) < 0.2
