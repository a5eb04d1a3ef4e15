"""The packaged SmolLM2-135M Q4_1 GGUF as the engine loads it by default on CPU (int4 weights, engine/quant)
against the exact fp32 path (the same GGUF dequantized, oneDNN fp32): logits within the tolerance
docs/engine-serving-speed.md states, on both the prefill path (dense bf16 copy) and the decode path (int4
kernel), and greedy answers that agree (slow: loads the model twice)."""
import pytest
import torch

from engine.forward_context import DenseContext
from engine.layers.linear import Linear

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "system", "content": "You answer questions about contracts."},
            {"role": "user", "content": "What does an indemnification clause do in a supply agreement?"}]
# documented in docs/engine-serving-speed.md ("Quantized weights"): on logits of magnitude up to ~40
MAX_ABS, MEAN_ABS, TOP1 = 2.5, 0.25, 0.9


@pytest.fixture(scope="module")
def smollm2_int4():
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf())  # the default for a quantized GGUF on CPU


def prefill_logits(loaded, ids):
    ctx = DenseContext.for_model(loaded.model).next_step([len(ids)])
    return loaded.model.compute_logits(loaded.model(torch.tensor(ids), torch.arange(len(ids)), ctx))


def token_by_token_logits(loaded, ids):
    ctx, out = DenseContext.for_model(loaded.model), []
    for pos, t in enumerate(ids):
        out.append(loaded.model.compute_logits(loaded.model(torch.tensor([t]), torch.tensor([pos]), ctx.next_step([1]))))
    return torch.cat(out)


def greedy(loaded, ids, n):
    ctx = DenseContext.for_model(loaded.model).next_step([len(ids)])
    h = loaded.model(torch.tensor(ids), torch.arange(len(ids)), ctx)
    out = []
    for pos in range(len(ids), len(ids) + n):
        out.append(int(loaded.model.compute_logits(h[-1:]).argmax()))
        h = loaded.model(torch.tensor(out[-1:]), torch.tensor([pos]), ctx.next_step([1]))
    return out


def test_default_load_keeps_every_projection_and_the_head_4_bit(smollm2_int4, smollm2):
    from app.settings import packaged_llm_gguf
    from engine.loader import resolve_cpu_gemm

    assert resolve_cpu_gemm(packaged_llm_gguf(), "cpu") == "int4"
    linears = [m for m in smollm2_int4.model.modules() if isinstance(m, Linear)]
    assert len(linears) == 30 * 4 + 1 and {m.packed_kind for m in linears} == {"int4"}  # qkv, o, gate_up, down; head
    int4 = sum(m.decode_nbytes for m in linears)
    fp32 = sum(m.decode_nbytes for m in smollm2.model.modules() if isinstance(m, Linear))
    assert fp32 > 530e6 and int4 < 105e6  # weights one decode step reads: 538 MB -> ~102 MB


def test_logits_within_tolerance_of_the_fp32_path(smollm2_int4, smollm2):
    ids = smollm2.tokenizer.apply_chat_template(MESSAGES)
    with torch.inference_mode():
        want = prefill_logits(smollm2, ids)
        for got in (prefill_logits(smollm2_int4, ids), token_by_token_logits(smollm2_int4, ids)):
            diff = (got - want).abs()
            assert want.abs().max() > 20 and float(diff.max()) > 0  # real logits, really a different path
            assert float(diff.max()) < MAX_ABS and float(diff.mean()) < MEAN_ABS
            assert float((got.argmax(-1) == want.argmax(-1)).float().mean()) >= TOP1


def test_greedy_answer_agrees_with_the_fp32_path(smollm2_int4, smollm2):
    ids = smollm2.tokenizer.apply_chat_template(MESSAGES)
    with torch.inference_mode():
        want, got = greedy(smollm2, ids, 32), greedy(smollm2_int4, ids, 32)
    same = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), len(got))
    print(f"greedy: {same} of {len(got)} tokens equal to the fp32 path")
    assert same >= 16, (same, smollm2.tokenizer.decode(got), smollm2.tokenizer.decode(want))
    assert "indemn" in smollm2.tokenizer.decode(got).lower()
