"""Sampling parameters and the batched sampler (greedy, temperature, top-k, top-p, per-request seed)."""
from __future__ import annotations

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


def seeded_generator(seed: int, device) -> torch.Generator:
    """A seeded generator on ``device``: the tensors it draws for live there (torch refuses a CPU generator
    for a CUDA multinomial)."""
    return torch.Generator(device=torch.device(device)).manual_seed(seed)


def sample(logits: torch.Tensor, params: list[SamplingParams],
           generators: list[Optional[torch.Generator]]) -> list[int]:
    """logits [N, V] float32 -> one token per row. Greedy rows take argmax in one batched call. A row's
    generator must live on the logits' device (``Sequence.generator_for``)."""
    for g in generators:
        if g is not None and g.device.type != logits.device.type:
            raise ValueError(f"a {g.device} generator cannot sample {logits.device} logits: "
                             "make it with seeded_generator(seed, logits.device)")
    out = logits.argmax(dim=-1).tolist()
    for i, p in enumerate(params):
        if p.greedy:
            continue
        row = logits[i].float() / p.temperature
        if p.top_k and p.top_k < row.numel():
            kth = torch.topk(row, p.top_k).values[-1]
            row = row.masked_fill(row < kth, float("-inf"))
        probs = torch.softmax(row, dim=-1)
        if p.top_p < 1.0:
            sorted_p, order = probs.sort(descending=True)
            keep = sorted_p.cumsum(0) - sorted_p < p.top_p  # keep the smallest prefix reaching top_p
            sorted_p = sorted_p * keep
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
        out[i] = int(torch.multinomial(probs, 1, generator=generators[i]).item())
    return out
