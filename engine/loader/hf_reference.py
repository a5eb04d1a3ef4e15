"""The transformers reference for a Llama GGUF, used by tests and benchmarks to compare against our engine."""
from __future__ import annotations

import torch


def transformers_llama_from_gguf(path):
    """transformers' own GGUF path (config, dequantization, Q/K un-permutation) into ``LlamaForCausalLM``,
    in fp32, without needing ``accelerate``."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    meta = load_gguf_checkpoint(str(path), return_tensors=False)["config"]
    config = LlamaConfig(**{k: v for k, v in meta.items() if k not in ("model_type", "architectures")})
    with torch.device("meta"):
        ref = LlamaForCausalLM(config)
    tensors = load_gguf_checkpoint(str(path), return_tensors=True, model_to_load=ref)["tensors"]
    tensors.setdefault("lm_head.weight", tensors["model.embed_tokens.weight"])
    ref.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=True, assign=True)
    ref.model.rotary_emb = type(ref.model.rotary_emb)(config=config)  # inv_freq was built on meta
    return ref.eval()
