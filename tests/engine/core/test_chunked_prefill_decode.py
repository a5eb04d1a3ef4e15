"""Continuing from cached state is exact: chunked prefill and prefill + decode equal one full forward.

Hybrid configs use random weights in our own HybridLM (fp32, SSD chunk 16 so chunks of 7/128 cut SSD chunks
at every offset); SmolLM2 uses the packaged weights. fp32 tolerance 1e-4 (observed ~1e-5).
"""
import math

import pytest
import torch

from engine.config import AttentionSpec, BlockSpec, MambaSpec, MlpSpec, ModelConfig, MoeSpec
from engine.forward_context import DenseContext
from engine.models.hybrid import HybridLM

ATOL = 1e-4
pytestmark = pytest.mark.usefixtures("one_thread")


def hybrid_config(pattern: str, rope: bool = False) -> ModelConfig:
    specs = {
        "M": lambda i: BlockSpec("mamba", mamba=MambaSpec(num_heads=4, head_dim=8, ssm_state_size=8 + 4 * (i % 2),
                                                          n_groups=2, chunk_size=16)),
        "*": lambda i: BlockSpec("attention", attention=AttentionSpec(4, 2, 8, rope=rope, rope_theta=1000.0)),
        "-": lambda i: BlockSpec("mlp", mlp=MlpSpec(64)),
        "E": lambda i: BlockSpec("moe", moe=MoeSpec(8, 2 + i % 2, 16 + 8 * (i % 2), shared_intermediate_size=24,
                                                    latent_size=16 if i % 2 else None, routed_scaling_factor=2.0,
                                                    n_group=2, topk_group=1)),
    }
    return ModelConfig(arch="nemotron_h_puzzle", vocab_size=64, hidden_size=32,
                       blocks=[specs[c](i) for i, c in enumerate(pattern)])


@torch.no_grad()
def random_model(config: ModelConfig, seed: int = 0) -> HybridLM:
    g = torch.Generator().manual_seed(seed)
    model = HybridLM(config)
    for name, p in model.named_parameters():
        if name.endswith("A_log"):
            p.copy_(torch.log(torch.rand(p.shape, generator=g) * 4 + 0.5))
        elif name.endswith("dt_bias"):
            p.copy_(torch.randn(p.shape, generator=g) - 1.0)
        elif p.dim() == 1:
            p.copy_((1.0 if "norm" in name else 0.0) + 0.2 * torch.randn(p.shape, generator=g))
        else:
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
    return model.eval()


def full_logits(model, ids):
    ctx = DenseContext.for_model(model).next_step([len(ids)])
    return model.compute_logits(model(ids, torch.arange(len(ids)), ctx))


def chunked_last_logits(model, ids, chunk):
    ctx = DenseContext.for_model(model)
    for start in range(0, len(ids), chunk):
        piece = ids[start:start + chunk]
        h = model(piece, torch.arange(start, start + len(piece)), ctx.next_step([len(piece)]))
    return model.compute_logits(h[-1:])[0]


def prefill_then_decode(model, ids, n_prefill):
    ctx = DenseContext.for_model(model).next_step([n_prefill])
    h = model(ids[:n_prefill], torch.arange(n_prefill), ctx)
    logits = [model.compute_logits(h[-1:])[0]]
    for pos in range(n_prefill, len(ids)):
        h = model(ids[pos:pos + 1], torch.tensor([pos]), ctx.next_step([1]))
        logits.append(model.compute_logits(h)[0])
    return torch.stack(logits)  # predictions after positions n_prefill-1 .. len-1


HYBRIDS = {"nemotron_like": ("M*-EM-E*M", False), "rope_mamba_moe": ("ME*EM", True)}


@pytest.mark.parametrize("name", sorted(HYBRIDS))
@pytest.mark.parametrize("chunk", [1, 7, 128])
def test_hybrid_chunked_prefill(name, chunk):
    model = random_model(hybrid_config(*HYBRIDS[name]))
    ids = torch.randint(0, 64, (150,), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        ref = full_logits(model, ids)[-1]
        got = chunked_last_logits(model, ids, chunk)
    assert ref.abs().max() > 0.5
    assert (got - ref).abs().max() < ATOL


@pytest.mark.parametrize("name", sorted(HYBRIDS))
def test_hybrid_prefill_then_decode(name):
    model = random_model(hybrid_config(*HYBRIDS[name]), seed=2)
    ids = torch.randint(0, 64, (60,), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        ref = full_logits(model, ids)[39:]
        got = prefill_then_decode(model, ids, 40)
    assert (got - ref).abs().max() < ATOL


def test_hybrid_packed_batch_mixed_prefill_and_batched_decode():
    """Two sequences packed into one step (different lengths and pasts), then batched one-token decode."""
    model = random_model(hybrid_config("M*EM-"), seed=4)
    gen = torch.Generator().manual_seed(5)
    a, b = torch.randint(0, 64, (30,), generator=gen), torch.randint(0, 64, (21,), generator=gen)
    with torch.inference_mode():
        ref_a, ref_b = full_logits(model, a), full_logits(model, b)
        ctx = DenseContext.for_model(model, n_seqs=2)
        h = model(torch.cat([a[:10], b[:3]]), torch.cat([torch.arange(10), torch.arange(3)]), ctx.next_step([10, 3]))
        h = model(torch.cat([a[10:25], b[3:20]]), torch.cat([torch.arange(10, 25), torch.arange(3, 20)]),
                  ctx.next_step([15, 17]))
        assert (model.compute_logits(h[[14, 31]]) - torch.stack([ref_a[24], ref_b[19]])).abs().max() < ATOL
        for pa, pb in zip(range(25, 30), range(20, 21)):
            assert ctx.next_step([1, 1]).is_decode
            h = model(torch.stack([a[pa], b[pb]]), torch.tensor([pa, pb]), ctx)
            got = model.compute_logits(h)
            assert (got - torch.stack([ref_a[pa], ref_b[pb]])).abs().max() < ATOL


@pytest.mark.slow
def test_smollm2_chunked_prefill_and_decode(smollm2):
    model, tok = smollm2.model, smollm2.tokenizer
    text = ("The Supplier shall indemnify the Customer against all losses arising from a breach of Section 7. "
            "Payment is due within thirty days of the invoice date. ") * 3
    ids = torch.tensor(tok.apply_chat_template([{"role": "user", "content": text + "Summarise the terms."}]))
    ids = ids[:134]  # just past one 128-token chunk: keeps the 1-token-chunk pass short
    assert len(ids) == 134
    with torch.inference_mode():
        full = full_logits(model, ids)
        for chunk in (1, 7, 128):
            assert (chunked_last_logits(model, ids, chunk) - full[-1]).abs().max() < 1e-3, chunk
        got = prefill_then_decode(model, ids, len(ids) - 8)
    assert (got - full[-9:]).abs().max() < 1e-3
