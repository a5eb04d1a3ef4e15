"""The packaged SmolLM2-135M GGUF in our engine equals transformers' Llama on the same dequantized weights,
and our GGUF tokenizer + chat template equal transformers' GGUF tokenizer."""
import pytest
import torch

from engine.forward_context import DenseContext
from engine.loader.hf_reference import transformers_llama_from_gguf

pytestmark = pytest.mark.slow

MESSAGES = [{"role": "system", "content": "You answer questions about contracts."},
            {"role": "user", "content": "What does an indemnification clause do in a supply agreement?"}]


def _logits(loaded, ids):
    ctx = DenseContext.for_model(loaded.model).next_step([len(ids)])
    return loaded.model.compute_logits(loaded.model(torch.tensor(ids), torch.arange(len(ids)), ctx))


def test_logits_equal_transformers_llama_on_chat_prompt(smollm2_plain, smollm2):
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    ids = smollm2.tokenizer.apply_chat_template(MESSAGES)
    assert len(ids) > 30
    fp16 = load_model(packaged_llm_gguf(), cpu_gemm="fp16")
    with torch.inference_mode():
        plain, onednn, rounded = _logits(smollm2_plain, ids), _logits(smollm2, ids), _logits(fp16, ids)
        theirs = transformers_llama_from_gguf(packaged_llm_gguf())(torch.tensor([ids])).logits[0].float()
    assert theirs.abs().max() > 10
    # fp32 weights, F.linear or the default oneDNN GEMM: differences come from summation order only
    for exact in (plain, onednn):
        assert (exact - theirs).abs().max() < 2e-3
        assert torch.equal(exact.argmax(-1), theirs.argmax(-1))
    # fp16-rounded weights, fp32 activations: observed max |diff| ~0.03 on logits up to ~38
    assert (rounded - theirs).abs().max() < 0.1
    assert torch.equal(rounded.argmax(-1), theirs.argmax(-1))


def test_tokenizer_and_chat_template_equal_transformers(smollm2):
    from transformers import AutoTokenizer

    from app.settings import packaged_llm_gguf

    path = packaged_llm_gguf()
    ref = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    tok = smollm2.tokenizer
    text = ref.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert tok.render_chat(MESSAGES) == text
    assert tok.apply_chat_template(MESSAGES) == ref(text, add_special_tokens=False)["input_ids"]
    assert tok.eos_token_ids == {ref.eos_token_id} and tok.vocab_size == 49152
    sample = "Section 4.2 (Indemnity): the Supplier shall indemnify... café — ok"
    assert tok.decode(tok.encode(sample)) == sample
    # SmolLM2's own tokenizer splits digits one by one (transformers' GGUF conversion does not)
    assert tok.encode("2024") == [tok.token_to_id(d) for d in "2024"]


def test_greedy_answer_is_sensible(smollm2):
    tok = smollm2.tokenizer
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}])
    ctx = DenseContext.for_model(smollm2.model).next_step([len(ids)])
    out = []
    with torch.inference_mode():
        h = smollm2.model(torch.tensor(ids), torch.arange(len(ids)), ctx)
        pos = len(ids)
        for _ in range(12):
            nxt = int(smollm2.model.compute_logits(h[-1:]).argmax())
            if nxt in tok.eos_token_ids:
                break
            out.append(nxt)
            h = smollm2.model(torch.tensor([nxt]), torch.tensor([pos]), ctx.next_step([1]))
            pos += 1
    assert "Paris" in tok.decode(out)
