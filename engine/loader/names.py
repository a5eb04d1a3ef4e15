"""Where each of our parameters comes from in a checkpoint, in Hugging Face naming.

Nemotron-H uses ``backbone.`` (original checkpoints) or ``model.`` (transformers 5 / Puzzle) as prefix and
``layers.{i}`` for our block i. Llama's decoder layer l is our blocks 2l (attention) and 2l+1 (MLP).
Each entry maps our parameter path to the list of source names concatenated along dim 0 (fused qkv and
gate_up). GGUF sources translate these Llama names to GGUF names themselves.
"""
from __future__ import annotations

from engine.config import ModelConfig


def nemotron_names(config: ModelConfig, prefix: str) -> dict[str, list[str]]:
    m: dict[str, list[str]] = {"embed.weight": [f"{prefix}.embeddings.weight"],
                               "norm_f.weight": [f"{prefix}.norm_f.weight"]}
    if not config.tie_word_embeddings:
        m["lm_head.weight"] = ["lm_head.weight"]
    for i, b in enumerate(config.blocks):
        src, dst = f"{prefix}.layers.{i}", f"blocks.{i}"
        m[f"{dst}.norm.weight"] = [f"{src}.norm.weight"]
        x, y = f"{src}.mixer", f"{dst}.mixer"
        if b.kind == "mamba":
            for n in ("in_proj.weight", "out_proj.weight", "dt_bias", "A_log", "D", "norm.weight"):
                m[f"{y}.{n}"] = [f"{x}.{n}"]
            m[f"{y}.conv_weight"] = [f"{x}.conv1d.weight"]
            if b.mamba.use_conv_bias:
                m[f"{y}.conv_bias"] = [f"{x}.conv1d.bias"]
            if b.mamba.use_bias:
                m[f"{y}.in_proj.bias"] = [f"{x}.in_proj.bias"]
                m[f"{y}.out_proj.bias"] = [f"{x}.out_proj.bias"]
        elif b.kind == "attention":
            m[f"{y}.qkv_proj.weight"] = [f"{x}.{p}_proj.weight" for p in "qkv"]
            m[f"{y}.o_proj.weight"] = [f"{x}.o_proj.weight"]
            if b.attention.bias:
                m[f"{y}.qkv_proj.bias"] = [f"{x}.{p}_proj.bias" for p in "qkv"]
        elif b.kind == "mlp":
            m[f"{y}.up_proj.weight"] = ([f"{x}.gate_proj.weight", f"{x}.up_proj.weight"]
                                        if b.mlp.activation == "silu_gated" else [f"{x}.up_proj.weight"])
            m[f"{y}.down_proj.weight"] = [f"{x}.down_proj.weight"]
        elif b.kind == "moe":
            m[f"{y}.router_weight"] = [f"{x}.gate.weight"]
            m[f"{y}.e_score_correction_bias"] = [f"{x}.gate.e_score_correction_bias"]
            if b.moe.latent_size:
                m[f"{y}.fc1_latent.weight"] = [f"{x}.fc1_latent_proj.weight"]
                m[f"{y}.fc2_latent.weight"] = [f"{x}.fc2_latent_proj.weight"]
            # experts: fused "experts.up_proj" [E, I, D] or per expert "experts.{e}.up_proj.weight"
            m[f"{y}.experts.up"] = [f"{x}.experts.up_proj"]
            m[f"{y}.experts.down"] = [f"{x}.experts.down_proj"]
            if b.moe.shared_intermediate_size:
                m[f"{y}.shared.up_proj.weight"] = [f"{x}.shared_experts.up_proj.weight"]
                m[f"{y}.shared.down_proj.weight"] = [f"{x}.shared_experts.down_proj.weight"]
    return m


def llama_names(config: ModelConfig, prefix: str = "model") -> dict[str, list[str]]:
    m: dict[str, list[str]] = {"embed.weight": [f"{prefix}.embed_tokens.weight"],
                               "norm_f.weight": [f"{prefix}.norm.weight"]}
    if not config.tie_word_embeddings:
        m["lm_head.weight"] = ["lm_head.weight"]
    for i, b in enumerate(config.blocks):
        layer, dst = f"{prefix}.layers.{i // 2}", f"blocks.{i}"
        if b.kind == "attention":
            m[f"{dst}.norm.weight"] = [f"{layer}.input_layernorm.weight"]
            m[f"{dst}.mixer.qkv_proj.weight"] = [f"{layer}.self_attn.{p}_proj.weight" for p in "qkv"]
            m[f"{dst}.mixer.o_proj.weight"] = [f"{layer}.self_attn.o_proj.weight"]
            if b.attention.bias:
                m[f"{dst}.mixer.qkv_proj.bias"] = [f"{layer}.self_attn.{p}_proj.bias" for p in "qkv"]
        elif b.kind == "mlp":
            m[f"{dst}.norm.weight"] = [f"{layer}.post_attention_layernorm.weight"]
            m[f"{dst}.mixer.up_proj.weight"] = [f"{layer}.mlp.gate_proj.weight", f"{layer}.mlp.up_proj.weight"]
            m[f"{dst}.mixer.down_proj.weight"] = [f"{layer}.mlp.down_proj.weight"]
        else:
            raise ValueError(f"llama config has a {b.kind} block at {i}")
    return m
