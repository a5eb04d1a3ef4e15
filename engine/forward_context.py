"""What a model forward needs from the caches, and the simplest implementation of it.

The model runs on a *packed* batch: the new tokens of every sequence of this step concatenated into one
``[T]`` tensor. Linear layers, norms, MLP and MoE run over all ``T`` tokens at once; the two sequence
mixers ask the context:

- attention layers call ``ctx.attend(attn_idx, q, k, v, scale)`` with this step's projected (and
  rotated) q/k/v; the context stores k/v after each sequence's past and returns the causal attention
  output. ``DenseContext`` keeps contiguous per-sequence tensors; the serving engine's paged context keeps
  blocks of a shared KV pool.
- Mamba layers read and write each sequence's (conv_state, ssm_state); ``*_batch`` variants serve a
  decode step where every sequence has exactly one new token.

``attn_idx`` / ``mamba_idx`` count only layers of that kind (0 = first attention layer).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

import torch
import torch.nn.functional as F


@dataclass
class SeqSpan:
    start: int  # offset of this sequence's new tokens in the packed batch
    length: int  # new tokens this step
    past_len: int  # tokens already in the cache before this step


class ForwardContext(Protocol):
    spans: list[SeqSpan]

    @property
    def is_decode(self) -> bool:  # every span has exactly one new token
        ...

    def attend(self, attn_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
               sliding_window: Optional[int] = None) -> torch.Tensor:
        """q [T, n_heads, hd], k/v [T, n_kv, hd] for the packed tokens -> output [T, n_heads, hd]."""

    def mamba_state(self, mamba_idx: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(conv_state [conv_dim, d_conv-1], ssm_state [n_heads, head_dim, d_state] fp32); zeros if new."""

    def set_mamba_state(self, mamba_idx: int, seq: int, conv: torch.Tensor, ssm: torch.Tensor) -> None: ...

    def mamba_state_batch(self, mamba_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Stacked states of all spans: conv [B, conv_dim, d_conv-1], ssm [B, n_heads, head_dim, d_state]."""

    def set_mamba_state_batch(self, mamba_idx: int, conv: torch.Tensor, ssm: torch.Tensor) -> None: ...


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, past_len: int,
                     sliding_window: Optional[int] = None) -> torch.Tensor:
    """One sequence: q [L, H, hd] for positions past_len..past_len+L-1, k/v [past_len+L, KV, hd].

    GQA without copying k/v: the H/KV query heads sharing a kv head are folded into extra query rows, so
    SDPA runs over KV heads. A one-token step with no window needs no mask at all.
    """
    L, n_heads, hd = q.shape
    S, n_kv = k.shape[0], k.shape[1]
    group = n_heads // n_kv
    qg = q.view(L, n_kv, group, hd).permute(1, 2, 0, 3).reshape(n_kv, group * L, hd)  # rows (group, L)
    kk, vv = k.transpose(0, 1).to(q.dtype).contiguous(), v.transpose(0, 1).to(q.dtype).contiguous()
    mask = None
    if L > 1 or (sliding_window is not None and S > sliding_window):
        qpos = torch.arange(past_len, past_len + L, device=q.device)[:, None]
        kpos = torch.arange(S, device=q.device)[None, :]
        mask = kpos <= qpos
        if sliding_window is not None:
            mask &= kpos > qpos - sliding_window
        mask = mask.repeat(group, 1)  # [group * L, S], same for every kv head
    out = F.scaled_dot_product_attention(qg, kk, vv, attn_mask=mask, scale=scale)  # [KV, group * L, hd]
    return out.view(n_kv, group, L, hd).permute(2, 0, 1, 3).reshape(L, n_heads, hd)


class DenseContext:
    """Contiguous per-sequence caches; for tests, references and single-request use.

    Reusable across steps: call ``next_step(lengths)`` before each forward to describe the new tokens.
    """

    def __init__(self, n_seqs: int = 1, mamba_shapes=None, device="cpu", dtype=torch.float32):
        """``mamba_shapes``: per Mamba layer (conv_state shape, ssm_state shape), e.g.
        ``model.mamba_state_shapes()``; ``DenseContext.for_model(model, n)`` fills it in."""
        self.n_seqs = n_seqs
        self.kv: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}
        self.states: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor]] = {}
        self.seen = [0] * n_seqs
        self.spans: list[SeqSpan] = []
        self._state_shapes: dict[int, tuple[tuple[int, ...], tuple[int, ...], torch.device, torch.dtype]] = {}
        for i, (conv_shape, ssm_shape) in enumerate(mamba_shapes or []):
            self.register_mamba_shape(i, conv_shape, ssm_shape, device, dtype)

    @classmethod
    def for_model(cls, model, n_seqs: int = 1) -> "DenseContext":
        return cls(n_seqs, model.mamba_state_shapes(), model.device, model.dtype)

    def next_step(self, lengths: list[int]) -> "DenseContext":
        if len(lengths) != self.n_seqs:
            raise ValueError(f"next_step got {len(lengths)} lengths for {self.n_seqs} sequences")
        self.spans, start = [], 0
        for i, n in enumerate(lengths):
            self.spans.append(SeqSpan(start, n, self.seen[i]))
            start += n
            self.seen[i] += n
        return self

    @property
    def is_decode(self) -> bool:
        return all(s.length == 1 for s in self.spans)

    def attend(self, attn_idx, q, k, v, scale, sliding_window=None):
        outs = []
        for i, s in enumerate(self.spans):
            sl = slice(s.start, s.start + s.length)
            past = self.kv.get((attn_idx, i))
            k_all = k[sl] if past is None else torch.cat([past[0], k[sl]])
            v_all = v[sl] if past is None else torch.cat([past[1], v[sl]])
            self.kv[(attn_idx, i)] = (k_all, v_all)
            outs.append(causal_attention(q[sl], k_all, v_all, scale, s.past_len, sliding_window))
        return torch.cat(outs)

    def register_mamba_shape(self, mamba_idx: int, conv_shape, ssm_shape, device, dtype) -> None:
        self._state_shapes[mamba_idx] = (tuple(conv_shape), tuple(ssm_shape), device, dtype)

    def mamba_state(self, mamba_idx, seq):
        if (mamba_idx, seq) not in self.states:
            if mamba_idx not in self._state_shapes:
                raise KeyError(f"no state shape for Mamba layer {mamba_idx}: build with DenseContext.for_model()")
            conv_shape, ssm_shape, device, dtype = self._state_shapes[mamba_idx]
            return (torch.zeros(conv_shape, device=device, dtype=dtype),
                    torch.zeros(ssm_shape, device=device, dtype=torch.float32))
        return self.states[(mamba_idx, seq)]

    def set_mamba_state(self, mamba_idx, seq, conv, ssm):
        self.states[(mamba_idx, seq)] = (conv, ssm)

    def mamba_state_batch(self, mamba_idx):
        pairs = [self.mamba_state(mamba_idx, i) for i in range(len(self.spans))]
        return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])

    def set_mamba_state_batch(self, mamba_idx, conv, ssm):
        for i in range(len(self.spans)):
            self.states[(mamba_idx, i)] = (conv[i], ssm[i])
