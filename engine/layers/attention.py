"""GQA attention block mixer: fused qkv projection, optional RoPE, the context does the cached attention."""
from __future__ import annotations

import torch
from torch import nn

from engine.config import AttentionSpec
from engine.layers.embedding import RotaryEmbedding
from engine.layers.linear import Linear


class Attention(nn.Module):
    def __init__(self, hidden_size: int, spec: AttentionSpec, attn_idx: int):
        super().__init__()
        self.spec, self.attn_idx = spec, attn_idx
        self.q_size = spec.num_heads * spec.head_dim
        self.kv_size = spec.num_kv_heads * spec.head_dim
        self.qkv_proj = Linear(hidden_size, self.q_size + 2 * self.kv_size, bias=spec.bias)
        self.o_proj = Linear(self.q_size, hidden_size, bias=False)
        self.rotary = RotaryEmbedding(spec.head_dim, spec.rope_theta, spec.rope_scaling) if spec.rope else None
        self.scale = spec.head_dim ** -0.5

    def forward(self, x: torch.Tensor, positions: torch.Tensor, ctx) -> torch.Tensor:
        s = self.spec
        qkv = self.qkv_proj.forward(x).view(-1, s.num_heads + 2 * s.num_kv_heads, s.head_dim)
        qk, v = qkv.split([s.num_heads + s.num_kv_heads, s.num_kv_heads], dim=1)
        if self.rotary is not None:  # q and k heads rotated in one call
            qk = self.rotary.forward(qk, positions)
        q, k = qk.split([s.num_heads, s.num_kv_heads], dim=1)
        out = ctx.attend(self.attn_idx, q, k, v, self.scale, s.sliding_window)
        return self.o_proj.forward(out.reshape(-1, self.q_size))
