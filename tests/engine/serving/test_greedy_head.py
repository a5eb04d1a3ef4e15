"""The int4 tied head's greedy path (HybridLM.compute_logits(greedy=True)) on the real SmolLM2-135M weights:
a 4-bit candidate head (the Q8_0 embedding rounded like Q4_1, one int4 plane instead of two) proposes 32
tokens, recomputed in fp32; over every position of real contract and filing text its argmax is the exact
head's and the fp32 model's (slow: loads the GGUF twice)."""
from __future__ import annotations

import pytest
import torch

from engine.forward_context import DenseContext
from engine.models.hybrid import GREEDY_CANDIDATES

pytestmark = pytest.mark.slow

TEXT = ("12.2 Limitation of Liability. Except for a party's indemnification obligations, neither party's aggregate "
        "liability arising out of this Agreement shall exceed the fees paid by Customer in the twelve months "
        "preceding the claim. Net revenues were $4,218 million in fiscal 2023, an increase of 7% compared to "
        "fiscal 2022, primarily due to higher volume in the Americas segment. The Company repurchased 12.4 "
        "million shares of common stock during the year for $1.1 billion. Either party may terminate this "
        "Agreement upon ninety days' prior written notice to the other party.")


@pytest.fixture(scope="module")
def models():
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf(), dtype=torch.float32, cpu_gemm="onednn"), load_model(packaged_llm_gguf())


@torch.inference_mode()
def hidden_rows(loaded, ids: list[int]) -> torch.Tensor:
    m = loaded.model
    return m(torch.tensor(ids), torch.arange(len(ids)), DenseContext.for_model(m).next_step([len(ids)]))


def test_greedy_candidates_pick_the_exact_heads_token_at_every_position(models):
    fp32, int4 = models
    m = int4.model
    assert m._candidate_head is not None and m._candidate_head.nbytes * 1.8 < m._tied_head.packed.nbytes
    ids = int4.tokenizer.encode(TEXT)
    h, want = hidden_rows(int4, ids), hidden_rows(fp32, ids)
    assert len(ids) > 100
    with torch.inference_mode():
        want_tok = fp32.model.compute_logits(want).argmax(-1)
        exact, greedy = [], []
        for row in h.split(1):
            exact.append(m.compute_logits(row))
            greedy.append(m.compute_logits(row, greedy=True))
    exact, greedy = torch.cat(exact), torch.cat(greedy)
    assert torch.equal(greedy.argmax(-1), exact.argmax(-1))
    agree = float((greedy.argmax(-1) == want_tok).float().mean())
    assert agree >= 0.95, agree  # int4 weights vs fp32: the same bar as the exact int4 head's
    assert agree == float((exact.argmax(-1) == want_tok).float().mean())
    # the winners' logits are fp32 (the embedding rows times the hidden state), the rest the 4-bit head's
    best = greedy.argmax(-1)
    fp32_best = (m.embed.weight[best] * h.float()).sum(-1)
    assert torch.allclose(greedy.gather(1, best[:, None]).squeeze(1), fp32_best, atol=1e-3)
    assert float((greedy - exact).abs().mean()) > 0.05  # really another head for the rest


def test_greedy_flag_leaves_sampled_rows_and_batches_on_the_exact_head(models):
    _, int4 = models
    m = int4.model
    h = torch.randn(2, m.config.hidden_size) * 2
    with torch.inference_mode():
        assert torch.equal(m.compute_logits(h[:1]), m.compute_logits(h[:1], greedy=False))
        assert torch.equal(m.compute_logits(h, greedy=True), m.compute_logits(h))  # 2 rows: the dense copy
        assert not torch.equal(m.compute_logits(h[:1], greedy=True), m.compute_logits(h[:1]))
    assert GREEDY_CANDIDATES >= 16
