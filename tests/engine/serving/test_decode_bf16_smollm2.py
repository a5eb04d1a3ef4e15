"""bf16 decode attention (PagedContext.decode_bf16) and the int4 LM head's dense copy for batched rows, on the
real SmolLM2-135M int4 weights: the runner turns bf16 decode attention on where the qkv GEMMs already round to
bf16 (int4 weights), and teacher-forced batched decode steps of four sequences of different lengths over a
bf16 KV pool stay within the int4 path's documented tolerance of the exact fp32 path
(docs/engine-serving-speed.md), about as close as fp32 attention over the same pool (slow: loads the GGUF twice)."""
from __future__ import annotations

import pytest
import torch
from cpu_features import onednn_bf16  # tests/cpu_features.py
from logit_tolerance import assert_bf16_attention_within_tolerance  # tests/engine/serving/

from engine.forward_context import SeqSpan
from engine.llm_engine import EngineConfig, LLMEngine

pytestmark = pytest.mark.slow

MAX_ABS, MEAN_ABS, TOP1 = 2.5, 0.25, 0.9  # tests/engine/core/test_quant_int4_smollm2.py
TEXTS = ["The supplier shall deliver the goods to the buyer within thirty days of the order. " * 3,
         "Section 4. Payment. The licensee pays a fee of 1,200 EUR per quarter, due on the first day. " * 5,
         "This agreement is governed by the laws of the State of New York.",
         "Either party may terminate this agreement on ninety days' written notice. " * 8]
STEPS, PER_SEQ = 12, 256  # decode steps; pool slots reserved per sequence (equal spacing: one batched group)


@pytest.fixture(scope="module")
def models():
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load_model(packaged_llm_gguf(), dtype=torch.float32, cpu_gemm="onednn"), load_model(packaged_llm_gguf())
    torch.set_num_threads(threads)


def engine(loaded, kv_dtype: str) -> LLMEngine:
    return LLMEngine(loaded, EngineConfig(max_model_len=PER_SEQ, max_num_seqs=len(TEXTS), memory_gib=2.0,
                                          kv_dtype=kv_dtype, speculative=False))


@torch.inference_mode()
def decode_logits(loaded, kv_dtype: str, bf16: bool) -> torch.Tensor:
    """[STEPS, 4, V]: each sequence prefilled alone, then STEPS batched one-token steps fed its text's next tokens."""
    eng = engine(loaded, kv_dtype)
    ctx, model, bs = eng.runner.ctx, loaded.model, eng.config.block_size
    ctx.decode_bf16 = bf16
    ids = [loaded.tokenizer.encode(t)[:PER_SEQ - STEPS] for t in TEXTS]
    prompts = [x[:len(x) - STEPS] for x in ids]
    nb = PER_SEQ // bs
    tables = [list(range(i * nb, (i + 1) * nb)) for i in range(len(ids))]
    for i, p in enumerate(prompts):
        ctx.prepare([SeqSpan(0, len(p), 0)], [tables[i]], [0])
        model(torch.tensor(p), torch.arange(len(p)), ctx)
    out = []
    for step in range(STEPS):
        past = [len(p) + step for p in prompts]
        ctx.prepare([SeqSpan(i, 1, n) for i, n in enumerate(past)], tables, [0] * len(ids))
        h = model(torch.tensor([x[n] for x, n in zip(ids, past)]), torch.tensor(past), ctx)
        out.append(model.compute_logits(h))  # 4 rows: the int4 head answers from its dense copy
    return torch.stack(out)


def test_runner_turns_bf16_decode_on_only_where_the_gemms_are_bf16(models):
    fp32, int4 = models
    assert engine(int4, "bfloat16").runner.ctx.decode_bf16
    assert not engine(fp32, "bfloat16").runner.ctx.decode_bf16
    head = int4.model._tied_head
    assert head.packed_kind == "int4" and head.int4_max_rows == 1 and head.dense_packed is not None


def test_bf16_decode_attention_within_tolerance_of_the_fp32_path(models):
    fp32, int4 = models
    want = decode_logits(fp32, "float32", False)
    fp32_attn = decode_logits(int4, "bfloat16", False)
    bf16_attn = decode_logits(int4, "bfloat16", True)
    assert want.shape[:2] == (STEPS, len(TEXTS)) and want.abs().max() > 20
    assert_bf16_attention_within_tolerance(want, fp32_attn, bf16_attn, MAX_ABS, MEAN_ABS, TOP1)


def test_int4_head_dense_copy_for_batched_rows_within_tolerance_of_its_int4_kernel(models):
    _, int4 = models
    head = int4.model._tied_head
    h = torch.randn(4, int4.model.config.hidden_size) * 2
    with torch.inference_mode():
        one_by_one = torch.cat([int4.model.compute_logits(h[i:i + 1]) for i in range(4)])  # the int4 kernel
        batched = int4.model.compute_logits(h)  # the dense bf16 copy
    diff = (batched - one_by_one).abs()
    assert head.int4_max_rows == 1 and float(diff.max()) > 0  # two paths
    assert float(diff.max()) < 0.5 and torch.equal(batched.argmax(-1), one_by_one.argmax(-1))


def test_int4_tied_head_recomputes_its_top_logits_in_fp32(models):
    """The chat prompt's first answer token is a near tie (fp32 logits 33.39 vs 33.30): the int4 kernel's bf16
    logits tie exactly and argmax took the wrong one; the refined top candidates pick the fp32 path's token."""
    from engine.forward_context import DenseContext

    fp32, int4 = models
    ids = fp32.tokenizer.apply_chat_template([{"role": "user", "content": (
        "Explain what an indemnification clause in a supply agreement does, and how it differs from a "
        "limitation of liability.")}])
    with torch.inference_mode():
        got = []
        for loaded in models:
            m = loaded.model
            h = m(torch.tensor(ids), torch.arange(len(ids)), DenseContext.for_model(m).next_step([len(ids)]))[-1:]
            got.append(m.compute_logits(h)[0])
        raw = int4.model._tied_head(h).float()[0]  # the kernel's bf16-rounded logits, unrefined
    want, refined = got
    top = want.topk(2).indices
    assert float(want[top[0]] - want[top[1]]) < 0.2  # a near tie in fp32
    if onednn_bf16():  # the int4 kernel rounds its logits to bf16 only where the CPU has bf16 GEMMs
        assert float(raw[top[0]]) == float(raw[top[1]])  # tied in bf16
    assert int(refined.argmax()) == int(want.argmax())
    assert float((refined[top] - want[top]).abs().max()) < 0.5
