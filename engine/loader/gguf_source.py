"""Read a llama-architecture GGUF file under HF Llama names: dequantized (``gguf`` package), or, with
``keep_quantized``, Q4_0/Q4_1/Q8_0 tensors as their raw blocks (``engine.quant.GgufBlockTensor``).

llama.cpp's converter permutes the rows of Q and K so its rope can rotate interleaved pairs; we use the HF
``rotate_half`` layout, so those rows are permuted back here (same inverse as transformers' loader).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from engine.loader.gguf_file import GgufFile
from engine.quant.gguf_blocks import QTYPES, GgufBlockTensor

_LAYER = {
    "input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight", "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
    "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
}
_TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight"}


def unpermute_rope_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """Undo llama.cpp's ``permute(w, n_heads)`` on Q/K rows (interleaved pairs -> halves per head)."""
    dim = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, dim, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class GgufSource:
    def __init__(self, path: str | Path, file: GgufFile | None = None, keep_quantized: bool = False):
        self.path = Path(path)
        self.keep_quantized = keep_quantized
        self.file = file or GgufFile(path)
        self._tensors = self.file.tensors
        meta = self.file.metadata
        arch = meta.get("general.architecture")
        if arch != "llama":
            raise ValueError(f"GGUF architecture {arch!r} is not supported (supported: llama)")
        self.n_heads = int(meta["llama.attention.head_count"])
        self.n_kv_heads = int(meta.get("llama.attention.head_count_kv", self.n_heads))

    def _gguf_name(self, name: str) -> str:
        if name in _TOP:
            return _TOP[name]
        m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", name)
        if m and m.group(2) in _LAYER:
            return f"blk.{m.group(1)}.{_LAYER[m.group(2)]}"
        raise KeyError(f"no GGUF name for {name!r}")

    def has(self, name: str) -> bool:
        try:
            return self._gguf_name(name) in self._tensors
        except KeyError:
            return False

    def get(self, name: str):
        """A dense fp32 tensor, or a ``GgufBlockTensor`` for a block-quantized weight when ``keep_quantized``."""
        gname = self._gguf_name(name)
        if gname not in self._tensors:
            raise KeyError(f"GGUF file {self.path.name} has no tensor {gname!r} (for {name!r})")
        t = self._tensors[gname]
        keep = self.keep_quantized and t.qtype in QTYPES and len(t.shape) == 2
        w = t.data if keep else self.file.dequantize(gname)  # blocks: [rows, bytes per row]
        if ".attn_q." in gname:
            w = unpermute_rope_rows(w, self.n_heads)
        elif ".attn_k." in gname:
            w = unpermute_rope_rows(w, self.n_kv_heads)
        if keep:
            return GgufBlockTensor(torch.from_numpy(np.array(w, dtype=np.uint8, copy=True)), QTYPES[t.qtype], t.shape[1])
        return torch.from_numpy(np.array(w, dtype=np.float32, copy=True))

    def quantized_types(self) -> set[str]:
        """The block types of this file's 2-D weights that ``keep_quantized`` keeps (e.g. {"Q4_1", "Q8_0"})."""
        return {QTYPES[t.qtype] for t in self._tensors.values() if t.qtype in QTYPES and len(t.shape) == 2}


def hf_config_from_gguf(file: GgufFile) -> dict:
    """The HF-style llama config a GGUF file's metadata describes."""
    get = file.metadata.get
    n_heads = int(get("llama.attention.head_count"))
    hidden = int(get("llama.embedding_length"))
    names = set(file.tensors)
    vocab = get("llama.vocab_size") or len(get("tokenizer.ggml.tokens"))
    d = {
        "model_type": "llama", "vocab_size": int(vocab), "hidden_size": hidden,
        "intermediate_size": int(get("llama.feed_forward_length")),
        "num_hidden_layers": int(get("llama.block_count")), "num_attention_heads": n_heads,
        "num_key_value_heads": int(get("llama.attention.head_count_kv", n_heads)),
        "head_dim": int(get("llama.rope.dimension_count", hidden // n_heads)),
        "rms_norm_eps": float(get("llama.attention.layer_norm_rms_epsilon", 1e-5)),
        "rope_theta": float(get("llama.rope.freq_base", 10000.0)),
        "max_position_embeddings": int(get("llama.context_length", 4096)),
        "tie_word_embeddings": "output.weight" not in names,
        "attention_bias": "blk.0.attn_q.bias" in names,
        "bos_token_id": get("tokenizer.ggml.bos_token_id"), "eos_token_id": get("tokenizer.ggml.eos_token_id"),
        "_name_or_path": get("general.name", ""),
    }
    if get("llama.rope.scaling.type") not in (None, "none"):
        raise ValueError(f"GGUF rope scaling {get('llama.rope.scaling.type')!r} is not supported")
    return d
