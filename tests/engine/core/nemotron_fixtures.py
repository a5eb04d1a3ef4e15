"""Tiny random Nemotron-H checkpoints written by transformers' own ``save_pretrained``."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import torch

BASE = dict(vocab_size=96, hidden_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=12,
            intermediate_size=80, mamba_num_heads=6, mamba_head_dim=8, ssm_state_size=12, n_groups=2,
            conv_kernel=4, chunk_size=8, n_routed_experts=8, num_experts_per_tok=3, moe_intermediate_size=24,
            moe_shared_expert_intermediate_size=40, moe_latent_size=None, routed_scaling_factor=2.5, n_group=1,
            topk_group=1, norm_topk_prob=True, layer_norm_epsilon=1e-5, max_position_embeddings=1024,
            eos_token_id=2, bos_token_id=1, pad_token_id=0)


@torch.no_grad()
def randomize(model: torch.nn.Module, seed: int) -> None:
    """Weights with unit-scale activations (the default init makes every logit ~0, which hides bugs)."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if name.endswith("A_log"):
            p.copy_(torch.log(torch.rand(p.shape, generator=g) * 8 + 0.5))
        elif name.endswith("dt_bias"):
            p.copy_(torch.randn(p.shape, generator=g) - 2.0)
        elif name.endswith(".D"):
            p.copy_(torch.randn(p.shape, generator=g))
        elif p.dim() == 1:  # norms and conv bias
            p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g) if "norm" in name else
                    0.1 * torch.randn(p.shape, generator=g))
        else:
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.copy_(0.3 * torch.randn(b.shape, generator=g))


def build_reference(pattern: str, seed: int = 0, per_layer: dict[int, dict] | None = None, **overrides):
    """A random NemotronHForCausalLM. ``per_layer`` {layer: {key: value}} rebuilds those layers' mixers from a
    modified config, the way Puzzle's remote code does (``get_nemotron_h_config_for_layer``)."""
    from transformers import NemotronHConfig, NemotronHForCausalLM
    from transformers.models.nemotron_h.modeling_nemotron_h import MIXER_TYPES

    kwargs = {**BASE, **overrides}
    config = NemotronHConfig(hybrid_override_pattern=pattern, **kwargs)
    torch.manual_seed(seed)
    model = NemotronHForCausalLM(config).eval()
    for i, layer_overrides in (per_layer or {}).items():
        layer_cfg = copy.deepcopy(config)
        for k, v in layer_overrides.items():
            setattr(layer_cfg, k, v)
        block = model.model.layers[i]
        block.mixer = MIXER_TYPES[block.block_type](layer_cfg, layer_idx=i)
    randomize(model, seed)
    return model


def save_reference(model, folder: Path, per_layer: dict[int, dict] | None = None) -> Path:
    """save_pretrained; with ``per_layer`` also rewrite config.json as a nemotron_h_puzzle block_configs config."""
    model.save_pretrained(folder)
    if per_layer:
        cfg_file = folder / "config.json"
        d = json.loads(cfg_file.read_text())
        names = {"linear_attention": "mamba", "full_attention": "attention", "mlp": "mlp", "moe": "moe"}
        d["block_configs"] = [{"block_type": names[t], **per_layer.get(i, {})}
                              for i, t in enumerate(d["layers_block_type"])]
        d["model_type"] = "nemotron_h_puzzle"
        cfg_file.write_text(json.dumps(d))
    return folder
