"""Token embedding and rotary position embedding (HF ``rotate_half`` layout, default and llama3 scaling)."""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn


class Embedding(nn.Module):
    def __init__(self, vocab_size: int, hidden_size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, hidden_size), requires_grad=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Ids on a CPU are range-checked here; on an accelerator that check would wait on the device every
        step, so the engine checks prompt ids when a request is added (sampled ids are in range by construction)."""
        if ids.device.type == "cpu" and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.weight.shape[0]):
            raise ValueError(f"token id out of range [0, {self.weight.shape[0]}): min {int(ids.min())}, "
                             f"max {int(ids.max())}")
        return self.weight[ids]


def _llama3_inv_freq(inv_freq: torch.Tensor, s: dict) -> torch.Tensor:
    factor, low, high = s["factor"], s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
    old_ctx = s.get("original_max_position_embeddings", 8192)
    low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_ctx / wavelen - low) / (high - low)
    mid = (1 - smooth) * scaled / factor + smooth * scaled
    is_mid = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(is_mid, mid, scaled)


def rope_tables(freqs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Angles [..., head_dim / 2] -> cos and sign-folded sin [..., head_dim] for ``apply_rope``."""
    cos, sin = freqs.cos(), freqs.sin()
    return torch.cat([cos, cos], dim=-1), torch.cat([-sin, sin], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [..., head_dim] rotated (same dtype): x*cos + rotate_half(x)*sin, where rotate_half(x)*sin =
    cat(x2, x1) * cat(-sin, sin) (``rope_tables``)."""
    if cos.dtype != x.dtype:
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    half = x.shape[-1] // 2
    swapped = x.unflatten(-1, (2, half)).flip(-2).flatten(-2)  # cat(x2, x1): one copy, not two slices + cat
    return torch.addcmul(x * cos, swapped, sin)


class RotaryEmbedding(nn.Module):
    """One instance is shared by every attention layer with the same rope settings (``HybridLM``), so the
    cos/sin of a forward's positions are computed once, not once per layer."""

    def __init__(self, head_dim: int, theta: float, scaling: Optional[dict] = None):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        if scaling and scaling.get("rope_type", scaling.get("type")) == "llama3":
            inv_freq = _llama3_inv_freq(inv_freq, scaling)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._last: Optional[tuple] = None  # (positions, cos, signed sin) of the current forward

    def forget(self) -> None:
        """Called at the start of each model forward: a positions tensor may be reused and changed in place
        between forwards (inference tensors carry no version counter to notice it)."""
        self._last = None

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sign-folded sin, [T, 1, head_dim] fp32; reused while the same positions tensor comes back."""
        last = self._last
        if last is not None and last[0] is positions:
            return last[1], last[2]
        freqs = positions.to(self.inv_freq.device).float()[:, None] * self.inv_freq[None, :]
        cos, sin = rope_tables(freqs)
        cos, sin = cos[:, None, :], sin[:, None, :]
        self._last = (positions, cos, sin)
        return cos, sin

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x [T, heads, hd], positions [T] -> rotated x (same dtype): x*cos + rotate_half(x)*sin, where
        rotate_half(x)*sin = cat(x2, x1) * cat(-sin, sin)."""
        cos, sin = self.cos_sin(positions)
        return apply_rope(x, cos, sin)
