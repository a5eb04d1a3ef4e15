"""A tiny random hybrid model (Mamba2 + attention + MLP + MoE, no weight file) for engine tests; a module of
its own (not conftest) so that tests can import it unambiguously."""
from __future__ import annotations

import math
from pathlib import Path

import torch

from engine.config import AttentionSpec, BlockSpec, MambaSpec, MlpSpec, ModelConfig, MoeSpec


def tiny_hybrid_config(vocab: int = 96, hidden: int = 32) -> ModelConfig:
    mamba = MambaSpec(num_heads=4, head_dim=8, ssm_state_size=8, n_groups=2, conv_kernel=4, chunk_size=8)
    attn = AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=8)
    blocks = [BlockSpec("mamba", mamba=mamba), BlockSpec("attention", attention=attn),
              BlockSpec("mlp", mlp=MlpSpec(64)), BlockSpec("mamba", mamba=mamba),
              BlockSpec("moe", moe=MoeSpec(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                                           shared_intermediate_size=16)),
              BlockSpec("attention", attention=attn)]
    return ModelConfig(arch="nemotron_h", vocab_size=vocab, hidden_size=hidden, blocks=blocks,
                       eos_token_ids=(), name="tiny-hybrid")


def random_hybrid(config: ModelConfig, seed: int = 0):
    from engine.loader import LoadedModel
    from engine.models.hybrid import HybridLM

    torch.manual_seed(seed)
    model = HybridLM(config)
    for name, p in model.named_parameters():
        if name.endswith("A_log"):
            p.copy_(torch.log(torch.linspace(1, 8, p.numel())))
        elif name.endswith("dt_bias"):
            p.copy_(torch.log(torch.expm1(torch.full_like(p, 0.05))))
        elif name.endswith(".D") or "norm" in name:
            p.fill_(1.0)
        elif p.dim() >= 2:
            p.normal_(0, 1.0 / math.sqrt(p.shape[-1]))
        else:
            p.zero_()
    model.eval()
    return LoadedModel(model=model, config=config, tokenizer=None, path=Path("tiny-hybrid"))
