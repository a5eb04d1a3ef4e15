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


def triton_device() -> str:
    """Where a test runs the Triton kernels inside a model: CUDA when present (compiled kernels), else the CPU
    through Triton's interpreter. Which of the two a process gets is fixed when triton decorates the kernels
    (TRITON_INTERPRET is read then), so a CUDA host never runs them on CPU tensors."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def use_interpreter_without_cuda() -> None:
    """Call at import of a test module that runs Triton kernels: sets TRITON_INTERPRET=1 on a CPU-only host
    (before triton builds anything); on a CUDA host the kernels compile and the test moves its model there."""
    import os
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def on_device(loaded, device: str):
    """A copy of ``loaded`` whose model (dense parameters, compressed parts, rotary tables) lives on ``device``;
    ``loaded`` itself when it is there already."""
    import copy

    from engine.layers.linear import Linear
    from engine.layers.moe import Experts
    if loaded.model.device.type == torch.device(device).type:
        return loaded
    loaded = copy.deepcopy(loaded)
    loaded.model.to(device)
    for m in loaded.model.modules():
        if isinstance(m, Linear) and m.compressed is not None:
            m.compressed = [p.to(device) for p in m.compressed]
        elif isinstance(m, Experts) and m.compressed_up is not None:
            m.compressed_up = [p.to(device) for p in m.compressed_up]
            m.compressed_down = [p.to(device) for p in m.compressed_down]
    loaded.model.share_rotaries(device)
    return loaded
