"""Hugging Face ``config.json`` -> ``ModelConfig``.

Three families:

- ``nemotron_h``: ``hybrid_override_pattern`` (``M`` Mamba2, ``*`` attention, ``-`` MLP, ``E`` MoE) or
  transformers-5 ``layers_block_type`` ("linear_attention"/"mamba", "full_attention"/"attention", "mlp",
  "moe"); one set of global sizes for every layer of a kind.
- ``nemotron_h_puzzle``: the same global keys plus ``block_configs`` (one dict per layer with ``block_type``
  and per-block overrides such as ``moe_intermediate_size``, ``num_experts_per_tok``, ``ssm_state_size``,
  ``sliding_window``); sometimes nested under ``llm_config``.
- ``llama`` (and ``mistral``/``qwen2``-style dense configs): each decoder layer becomes ``*`` (RoPE GQA
  attention) then ``-`` (SwiGLU MLP), each with its own pre-norm.
"""
from __future__ import annotations

from typing import Any

from engine.config import AttentionSpec, BlockSpec, MambaSpec, MlpSpec, ModelConfig, MoeSpec, PATTERN_CHARS

_LAYER_TYPE_NAMES = {
    "mamba": "mamba", "linear_attention": "mamba", "m": "mamba",
    "attention": "attention", "full_attention": "attention", "*": "attention",
    "mlp": "mlp", "-": "mlp",
    "moe": "moe", "e": "moe",
}


def _float(v) -> float:
    """transformers 5 writes inf into config.json as {"__float__": "Infinity"}."""
    if isinstance(v, dict) and "__float__" in v:
        return float(v["__float__"])
    return float(v)


def _eos_ids(d: dict) -> tuple[int, ...]:
    eos = d.get("eos_token_id")
    if eos is None:
        return ()
    return tuple(eos) if isinstance(eos, (list, tuple)) else (int(eos),)


def _activation(name: str) -> str:
    if name in ("relu2", "squared_relu"):
        return "relu2"
    if name in ("silu", "swish", "silu_gated"):
        return "silu_gated"
    raise ValueError(f"unsupported MLP activation {name!r} (supported: relu2, silu)")


def _layer_kinds(d: dict) -> list[str]:
    if d.get("block_configs"):
        raw = [b.get("block_type") for b in d["block_configs"]]
    elif d.get("hybrid_override_pattern"):
        pattern = d["hybrid_override_pattern"]
        bad = set(pattern) - set(PATTERN_CHARS)
        if bad:
            raise ValueError(f"hybrid_override_pattern has unknown block chars {sorted(bad)} in {pattern!r}")
        return [PATTERN_CHARS[c] for c in pattern]
    elif d.get("layers_block_type"):
        raw = d["layers_block_type"]
    else:
        raise ValueError("nemotron_h config needs hybrid_override_pattern, layers_block_type or block_configs")
    kinds = []
    for i, name in enumerate(raw):
        kind = _LAYER_TYPE_NAMES.get(str(name).lower())
        if kind is None:
            raise ValueError(f"layer {i}: unknown block type {name!r}")
        kinds.append(kind)
    return kinds


def _nemotron_block(kind: str, d: dict) -> BlockSpec:
    """One block from a flat dict of NemotronH keys (global keys with the layer's overrides applied)."""
    if kind == "mamba":
        return BlockSpec(kind, mamba=MambaSpec(
            num_heads=d["mamba_num_heads"], head_dim=d["mamba_head_dim"],
            ssm_state_size=d.get("ssm_state_size", 128), n_groups=d.get("n_groups", d.get("mamba_n_groups", 8)),
            conv_kernel=d.get("conv_kernel", d.get("mamba_d_conv", 4)),
            chunk_size=d.get("chunk_size", d.get("mamba_chunk_size", 128)),
            use_conv_bias=d.get("use_conv_bias", True), use_bias=d.get("use_bias", False),
            time_step_limit=tuple(_float(v) for v in d.get("time_step_limit") or (0.0, float("inf"))),
            time_step_min=d.get("time_step_min", 0.001)))
    if kind == "attention":
        n_heads = d["num_attention_heads"]
        return BlockSpec(kind, attention=AttentionSpec(
            num_heads=n_heads, num_kv_heads=d.get("num_key_value_heads") or n_heads,
            head_dim=d.get("head_dim") or d["hidden_size"] // n_heads,
            rope=False,  # Nemotron-H attention is NoPE; rope_theta in its configs is vestigial
            sliding_window=d.get("sliding_window"), bias=bool(d.get("attention_bias", False))))
    if kind == "mlp":
        return BlockSpec(kind, mlp=MlpSpec(
            intermediate_size=d["intermediate_size"], activation=_activation(d.get("mlp_hidden_act", "relu2")),
            bias=bool(d.get("mlp_bias", False))))
    n_shared = d.get("n_shared_experts", 1)
    return BlockSpec(kind, moe=MoeSpec(
        n_routed_experts=d["n_routed_experts"], num_experts_per_tok=d["num_experts_per_tok"],
        moe_intermediate_size=d["moe_intermediate_size"],
        shared_intermediate_size=d.get("moe_shared_expert_intermediate_size", 0) * (1 if n_shared else 0),
        latent_size=d.get("moe_latent_size"), routed_scaling_factor=float(d.get("routed_scaling_factor") or 1.0),
        n_group=d.get("n_group") or 1, topk_group=d.get("topk_group") or 1,
        norm_topk_prob=bool(d.get("norm_topk_prob", True)),
        activation=_activation(d.get("mlp_hidden_act", "relu2")), bias=bool(d.get("mlp_bias", False))))


def _nemotron_config(d: dict, arch: str) -> ModelConfig:
    kinds = _layer_kinds(d)
    per_layer = d.get("block_configs") or [{} for _ in kinds]
    blocks = []
    for i, kind in enumerate(kinds):
        overrides = {k: v for k, v in per_layer[i].items() if k != "block_type" and v is not None}
        try:
            blocks.append(_nemotron_block(kind, {**d, **overrides}))
        except KeyError as e:
            raise ValueError(f"layer {i} ({kind}): config is missing {e.args[0]!r}") from None
    return ModelConfig(
        arch=arch, vocab_size=d["vocab_size"], hidden_size=d["hidden_size"], blocks=blocks,
        rms_norm_eps=d.get("layer_norm_epsilon", d.get("rms_norm_eps", 1e-5)),
        tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
        max_position_embeddings=d.get("max_position_embeddings", 262144),
        bos_token_id=d.get("bos_token_id"), eos_token_ids=_eos_ids(d), name=d.get("_name_or_path", ""))


def _llama_config(d: dict) -> ModelConfig:
    n_heads = d["num_attention_heads"]
    rope = dict(d.get("rope_parameters") or {})  # transformers 5 moves rope_theta/rope_scaling here
    theta = float(d.get("rope_theta") or rope.get("rope_theta") or 10000.0)
    scaling = d.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else None)
    if scaling is not None and scaling.get("rope_type", scaling.get("type")) not in ("default", "llama3", None):
        raise ValueError(f"unsupported rope scaling {scaling!r} (supported: default, llama3)")
    attn = AttentionSpec(num_heads=n_heads, num_kv_heads=d.get("num_key_value_heads") or n_heads,
                         head_dim=d.get("head_dim") or d["hidden_size"] // n_heads, rope=True, rope_theta=theta,
                         rope_scaling=scaling, sliding_window=d.get("sliding_window"),
                         bias=bool(d.get("attention_bias", False)))
    mlp = MlpSpec(intermediate_size=d["intermediate_size"], activation=_activation(d.get("hidden_act", "silu")),
                  bias=bool(d.get("mlp_bias", False)))
    blocks = []
    for _ in range(d["num_hidden_layers"]):
        blocks += [BlockSpec("attention", attention=attn), BlockSpec("mlp", mlp=mlp)]
    return ModelConfig(
        arch="llama", vocab_size=d["vocab_size"], hidden_size=d["hidden_size"], blocks=blocks,
        rms_norm_eps=d.get("rms_norm_eps", 1e-5), tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
        max_position_embeddings=d.get("max_position_embeddings", 8192), bos_token_id=d.get("bos_token_id"),
        eos_token_ids=_eos_ids(d), name=d.get("_name_or_path", ""))


def model_config_from_hf(d: dict[str, Any]) -> ModelConfig:
    """Map a Hugging Face config dict (as in ``config.json``) to our ``ModelConfig``."""
    if "llm_config" in d and "model_type" not in d.get("llm_config", {}) and "hidden_size" not in d:
        d = {**d, **d["llm_config"]}
    elif "llm_config" in d and "hidden_size" not in d:
        d = d["llm_config"]
    model_type = d.get("model_type", "")
    if model_type == "nemotron_h_puzzle" or (model_type == "nemotron_h" and d.get("block_configs")):
        return _nemotron_config(d, "nemotron_h_puzzle")
    if model_type == "nemotron_h":
        return _nemotron_config(d, "nemotron_h")
    if model_type in ("llama", "mistral") or "LlamaForCausalLM" in d.get("architectures", []):
        return _llama_config(d)
    raise ValueError(f"unsupported model_type {model_type!r} (supported: nemotron_h, nemotron_h_puzzle, llama)")
