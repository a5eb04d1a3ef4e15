"""The decode step captured in CUDA graphs, one per padded batch size, replayed on static buffers.

``DecodeGraphs`` runs a decode step (every sequence one token) through ``StaticDecodeContext``: the batch is
padded to the next size of ``batch_sizes(max_num_seqs)`` (1, 2, 4, 8, 16, 32, ... max), its rows written into
the persistent buffers, and the step replayed. On CUDA every size is captured once when the engine starts
(largest first, one shared memory pool); warm-up and capture run on padded rows only (null state slot,
scratch KV block), so no sequence's state moves. Prefill and mixed steps, and speculative verification, run
eagerly (``ModelRunner``). With ``capture=False`` (a CPU, or graphs switched off) the same static-buffer step
runs eagerly: tests compare it with the eager step on a CPU, so what the graph replays is checked everywhere.

A capture fails on any host sync in the step (an op that is not sync-free on this model: a compressed non-NVFP4
MoE, the torch reference kernels); then graphs are switched off with a warning and the eager static step runs.
Any other error of warm-up or capture does the same (its type and first line in ``capture_error``); a Triton
kernel that cannot be built falls back per op to its torch reference first (engine/kernels/fallback.py).
"""
from __future__ import annotations

import logging
from typing import Optional

import torch

from engine.static_decode import StaticDecodeContext, batch_sizes, padded_size

log = logging.getLogger(__name__)


class DecodeGraphs:
    def __init__(self, model, ctx: StaticDecodeContext, max_num_seqs: int, capture: bool):
        self.model, self.ctx = model, ctx
        self.sizes = batch_sizes(max_num_seqs)
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self.capture_error: Optional[str] = None
        self.replays = self.eager_steps = 0
        if capture:
            self._capture_all()

    @property
    def captured(self) -> list[int]:
        return sorted(self.graphs)

    @torch.inference_mode()
    def _capture_all(self) -> None:
        if self.ctx.device.type != "cuda":
            raise ValueError("CUDA graphs need a CUDA device")
        pool = torch.cuda.graph_pool_handle()
        try:
            for bs in reversed(self.sizes):
                self.ctx.load([], bs)  # padded rows only: the warm-up runs touch no sequence's caches
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2):  # compiles the Triton kernels, settles the allocator
                        self.ctx.step(self.model, bs)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=pool):
                    out = self.ctx.step(self.model, bs)
                self.graphs[bs] = (graph, out)
            torch.cuda.synchronize()
        except Exception as exc:  # a host sync or an uncapturable op in this model's step (RuntimeError), or
            # anything else the warm-up or capture raises (a kernel that fails to build is already caught per
            # op by engine/kernels/fallback.py, which logs it and runs the torch reference): decode runs eagerly
            self.graphs.clear()
            self.capture_error = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
            log.warning("CUDA graph capture failed (%s): decode steps run eagerly", self.capture_error)

    def fits(self, n: int) -> bool:
        return padded_size(self.sizes, n) is not None

    @torch.inference_mode()
    def run(self, seqs, replay: bool = True) -> torch.Tensor:
        """Logits [len(seqs), V] fp32 of one decode step (a view of the graph's output buffer when replayed:
        read it before the next step). ``replay=False`` runs the same step eagerly (benchmarks)."""
        n = len(seqs)
        bs = padded_size(self.sizes, n)
        if bs is None:
            raise ValueError(f"a decode batch of {n} exceeds the largest graph size {self.sizes[-1]}")
        self.ctx.load(seqs, bs)
        hit = self.graphs.get(bs) if replay else None
        if hit is not None:
            hit[0].replay()
            self.replays += 1
            return hit[1][:n]
        self.eager_steps += 1
        return self.ctx.step(self.model, bs)[:n]
