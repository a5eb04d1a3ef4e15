"""Sampling parameters and the batched sampler (greedy, temperature, top-k, top-p, per-request seed).

Everything runs on the logits' device with no host sync: the sampled ids stay a device tensor until the step
copies them to the host once. Random draws are counter-based (Gumbel-max with a hash of (seed, counter,
token id)), not a ``torch.Generator``: a request's draw for the token at position p uses counter p, so a
seeded request gives the same tokens on CPU and CUDA, inside or outside a CUDA graph, whatever else shares
its batch, and no generator state has to live on (or be captured for) the device.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional

import torch


@dataclass
class SamplingParams:
    max_tokens: int = 256
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 = no top-k cut
    seed: Optional[int] = None
    stop: list[str] = field(default_factory=list)
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if any(not s for s in self.stop):
            raise ValueError("stop strings must be non-empty")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def random_seed() -> int:
    """A seed for an unseeded request (drawn once per request; its draws then advance by position)."""
    return random.getrandbits(62)


_M32 = 0xFFFFFFFF


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (xorshift-multiply, hash-prospector constants) on int64 tensors holding values in
    [0, 2^32): both multipliers are below 2^31, so no product overflows int64 on any device."""
    x = x ^ (x >> 16)
    x = (x * 0x21F0AAAD) & _M32
    x = x ^ (x >> 15)
    x = (x * 0x735A2D97) & _M32
    return x ^ (x >> 15)


def gumbel_noise(seeds: torch.Tensor, counters: torch.Tensor, vocab: int) -> torch.Tensor:
    """Gumbel(0, 1) noise [N, vocab] fp32, a pure function of (seed, counter, token id) per row."""
    seeds, counters = seeds.long(), counters.long()
    key = _mix32(_mix32(seeds & _M32) ^ ((seeds >> 32) & _M32))
    key = _mix32((key + _mix32(counters & _M32)) & _M32)
    idx = torch.arange(vocab, device=seeds.device, dtype=torch.int64)
    h = _mix32(_mix32((key[:, None] + idx[None, :] * 0x9E3779B9) & _M32) ^ key[:, None])
    u = ((h >> 8).float() + 0.5) * (1.0 / (1 << 24))  # (0, 1), 24 bits
    return -torch.log(-torch.log(u))


@dataclass
class SamplingBatch:
    """Per-row sampling settings of one step as device tensors (built once per step by ``prepare``)."""
    all_greedy: bool
    greedy: Optional[torch.Tensor] = None  # [N] bool
    temperature: Optional[torch.Tensor] = None  # [N] fp32 (1.0 on greedy rows)
    top_k: Optional[torch.Tensor] = None  # [N] int64, vocab size where there is no cut
    top_p: Optional[torch.Tensor] = None  # [N] fp32
    seeds: Optional[torch.Tensor] = None  # [N] int64
    counters: Optional[torch.Tensor] = None  # [N] int64: the position of the token each row draws
    cut: bool = False  # some row has top-k or top-p

    @classmethod
    def prepare(cls, params: list[SamplingParams], seeds: list[int], counters: list[int], vocab: int,
                device) -> "SamplingBatch":
        if all(p.greedy for p in params):
            return cls(True)
        dev = torch.device(device)
        f = torch.tensor([[1.0 if p.greedy else p.temperature for p in params], [p.top_p for p in params]],
                         dtype=torch.float32)
        i = torch.tensor([[int(p.greedy) for p in params], [p.top_k if 0 < p.top_k < vocab else vocab for p in params],
                          [s & ((1 << 63) - 1) for s in seeds], counters], dtype=torch.int64)
        f, i = to_device(f, dev), to_device(i, dev)
        cut = any(not p.greedy and (0 < p.top_k < vocab or p.top_p < 1.0) for p in params)
        return cls(False, i[0].bool(), f[0], i[1], f[1], i[2], i[3], cut)


def to_device(host: torch.Tensor, device) -> torch.Tensor:
    """A host tensor on ``device`` without a host sync: through pinned memory and a non-blocking copy on
    CUDA (a plain copy from pageable memory waits for the stream)."""
    dev = torch.device(device)
    if dev.type == "cpu":
        return host
    if dev.type == "cuda":
        host = host.pin_memory()
    return host.to(dev, non_blocking=True)


def sample_tokens(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    """logits [N, V] -> token ids [N] int64 on the logits' device (no host sync). Greedy rows take the argmax;
    the others the argmax of logits / T + Gumbel noise over the top-k / top-p set (exactly a draw from the
    renormalised softmax over that set)."""
    best = logits.argmax(dim=-1)
    if batch.all_greedy:
        return best
    V = logits.shape[-1]
    z = logits.float() / batch.temperature[:, None]
    if batch.cut:
        sv, _ = z.sort(dim=-1, descending=True)
        rank = torch.arange(V, device=z.device)[None, :]
        in_k = rank < batch.top_k[:, None]
        p = torch.softmax(sv.masked_fill(~in_k, float("-inf")), dim=-1)
        keep = (p.cumsum(-1) - p < batch.top_p[:, None]) & in_k  # the smallest prefix reaching top_p, within k
        n_keep = keep.sum(-1).clamp_min(1)
        thresh = sv.gather(1, (n_keep - 1)[:, None])
        z = z.masked_fill(z < thresh, float("-inf"))
    drawn = (z + gumbel_noise(batch.seeds, batch.counters, V)).argmax(dim=-1)
    return torch.where(batch.greedy, best, drawn)


def sample(logits: torch.Tensor, params: list[SamplingParams], seeds: Optional[list[int]] = None,
           counters: Optional[list[int]] = None) -> list[int]:
    """Host convenience around ``sample_tokens``: logits [N, V] -> one token per row as a list (one copy to
    the host). ``seeds`` default to each row's ``params.seed`` (else a fresh random seed), ``counters`` to 0."""
    n = len(params)
    if seeds is None:
        seeds = [p.seed if p.seed is not None else random_seed() for p in params]
    counters = counters if counters is not None else [0] * n
    batch = SamplingBatch.prepare(params, seeds, counters, logits.shape[-1], logits.device)
    return sample_tokens(logits, batch).tolist()
