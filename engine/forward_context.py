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
from functools import lru_cache
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


FOLD_MAX_ROWS = 16  # query steps up to this long (decode, speculative verify) fold GQA groups into rows


@lru_cache(maxsize=16)
def causal_mask(past_len: int, L: int, S: int, sliding_window: Optional[int], group: int,
                dtype: torch.dtype, device: torch.device) -> Optional[torch.Tensor]:
    """Additive [group * L, S] mask (0 or -inf, rows ordered (group, L)) of L queries at past_len.. over S
    keys, or None where none is needed: a one-token step, or a fresh prompt with unfolded rows (SDPA's
    ``is_causal``). Additive in the query dtype, because SDPA turns a boolean mask into one on every call.
    Cached: every attention layer of a step asks for the same masks; callers must not modify it."""
    windowed = sliding_window is not None and S > sliding_window
    if not windowed and (L == 1 or (past_len == 0 and group == 1)):
        return None
    qpos = torch.arange(past_len, past_len + L, device=device)[:, None]
    kpos = torch.arange(S, device=device)[None, :]
    mask = kpos <= qpos
    if windowed:
        mask &= kpos > qpos - sliding_window
    if group > 1:
        mask = mask.repeat(group, 1)
    return torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill_(~mask, float("-inf"))


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, past_len: int,
                     sliding_window: Optional[int] = None) -> torch.Tensor:
    """One sequence: q [L, H, hd] for positions past_len..past_len+L-1, k/v [past_len+L, KV, hd] (any strides;
    a head-major cache passes transposed views) -> [L, H, hd].

    One SDPA call on [1, heads, len, hd] views, so torch picks its flash kernel. Short query steps (decode,
    speculative verify) fold each kv group's query heads into query rows, so k/v are read once per kv head;
    longer ones use ``enable_gqa`` (no k/v repeat). A fresh prompt is ``is_causal`` and a one-token step needs
    no mask; only steps after a past (or with a sliding window) use a cached additive mask. The 3-D folded form
    for every length that this replaced fell back to the math kernel (4.5x slower on a 512-token prefill).
    """
    L, n_heads, hd = q.shape
    S, n_kv = k.shape[0], k.shape[1]
    group = n_heads // n_kv
    kh, vh = k.transpose(0, 1)[None].to(q.dtype), v.transpose(0, 1)[None].to(q.dtype)
    if L <= FOLD_MAX_ROWS:
        mask = causal_mask(past_len, L, S, sliding_window, group, q.dtype, q.device)
        qf = q.view(L, n_kv, group, hd).permute(1, 2, 0, 3).reshape(1, n_kv, group * L, hd)
        out = F.scaled_dot_product_attention(qf, kh, vh, attn_mask=mask, is_causal=mask is None and L > 1,
                                             scale=scale)
        return out.view(n_kv, group, L, hd).permute(2, 0, 1, 3).reshape(L, n_heads, hd)
    mask = causal_mask(past_len, L, S, sliding_window, 1, q.dtype, q.device)
    out = F.scaled_dot_product_attention(q.transpose(0, 1)[None], kh, vh, attn_mask=mask,
                                         is_causal=mask is None, scale=scale, enable_gqa=n_heads != n_kv)
    return out[0].transpose(0, 1)


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
