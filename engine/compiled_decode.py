"""A CPU decode step for one sequence, compiled whole by ``torch.compile`` (inductor, C++ wrapper) (issue #14).

An eager CPU decode step of SmolLM2-135M issues ~1,600 torch ops; each small one costs 2-5 us of Python and
dispatch on this project's 2-vCPU VMs, as much again as the 121 int4 GEMMs together. Compiled whole, the
step is one C++ call: inductor fuses the norms, rope, casts and residual adds into a few C++ loops per layer,
calls the int4 GEMMs and the attention as they are, and its C++ wrapper skips Python between them.

What it covers: dense models of ``attention`` (rope, no sliding window) and ``mlp`` blocks with a bf16 or fp32
KV pool, one sequence whose past is one run of pool slots (the block manager hands a sequence its blocks at
once and in order). Everything else keeps the eager step (``ModelRunner``). The hidden state it returns is
the eager step's, up to the fused kernels' summation order (tests/engine/serving/test_compiled_decode.py);
the LM head stays eager (``HybridLM.compute_logits``).

Compiling costs ~2 min of one core cold and ~25 s from inductor's on-disk cache (measured on the 2-vCPU VM),
so ``start(background=True)`` compiles on a thread from a warm-up step on the pool's scratch block while
the engine decodes eagerly; ``ready`` turns true when it is done. A failure (no C++ compiler, an inductor
error) is kept in ``error`` and the eager step stays: the engine never waits on or dies from it.

The slot ints go in shifted by 2: dynamo specializes ints 0 and 1, and a sequence at slot 0 would otherwise
compile a second graph.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Optional

import torch
import torch.nn.functional as F

from engine.layers.embedding import apply_rope, rope_tables

log = logging.getLogger(__name__)
SHIFT = 2  # start and write slots go in + 2: never the 0 / 1 that dynamo specializes


def supported(model, kv) -> bool:
    """Dense attention (rope, no window) + MLP blocks on CPU over a bf16 / fp32 pool."""
    if model.device.type != "cpu" or kv.fp8 or not kv.k:
        return False
    for b in model.blocks:
        if b.kind == "attention":
            s = b.mixer.spec
            if b.mixer.rotary is None or s.sliding_window is not None:
                return False
        elif b.kind != "mlp":
            return False
    return True


class CompiledDecode:
    def __init__(self, model, kv, scratch_slot: int, bf16_attention: bool):
        """``scratch_slot``: the first slot of a pool block no sequence owns (the warm-up writes there)."""
        self.model, self.kv, self.scratch_slot = model, kv, scratch_slot
        self.bf16_attention = bf16_attention and kv.dtype == torch.bfloat16
        self.ready = False
        self.error: Optional[BaseException] = None
        self.compile_seconds: Optional[float] = None
        self._thread: Optional[threading.Thread] = None
        self._graph = None  # inductor's compiled graph, called directly once ready (see _backend)
        self._args: list = []  # its inputs as captured: the weights, the pool, their sizes
        self._slots: dict[str, int] = {}  # where x, start2 and write2 go in _args
        self._fn = torch.compile(self._forward, backend=self._backend, dynamic=True, fullgraph=True)

    def _backend(self, gm, example_inputs):
        """Compile the traced step with inductor (C++ wrapper) and keep the compiled graph and its inputs, to be
        called without dynamo: its guards (every weight, module and attribute the step read, ~5,000 checks)
        cost 2.3 ms a step, a fifth of it. Nothing the graph reads changes between steps but x and the two
        ints: the weights and the pool are the same tensors, their sizes the same numbers."""
        from torch._inductor.compile_fx import compile_fx

        graph = compile_fx(gm, example_inputs, config_patches={"cpp_wrapper": True})
        names = [n.meta["grapharg"].source.name for n in gm.graph.nodes if n.op == "placeholder"]
        args, slots = [], {}
        for name, value in zip(names, example_inputs):
            if name in ("L['x']", "L['start2']", "L['write2']"):
                slots[name[3:-2]] = len(args)
            elif isinstance(value, torch.SymInt):  # a size or stride of a persistent tensor: its number
                value = value.node.hint
            args.append(value)
        if set(slots) == {"x", "start2", "write2"}:
            self._graph, self._args, self._slots = graph, args, slots
        return graph

    def _forward(self, x: torch.Tensor, start2: int, write2: int) -> torch.Tensor:
        """x [1, hidden] (the token's embedding) -> final-normed hidden [1, hidden]; K/V written at ``write``."""
        start, write = start2 - SHIFT, write2 - SHIFT
        pos = write - start
        for block in self.model.blocks:
            h = block.norm.forward(x)
            if block.kind == "attention":
                h = self._attention(block.mixer, h, start, write, pos)
            else:
                h = block.mixer.forward(h)
            x = x + h
        return self.model.norm_f(x)

    def _attention(self, att, x: torch.Tensor, start, write, pos) -> torch.Tensor:
        s = att.spec
        H, KV, D = s.num_heads, s.num_kv_heads, s.head_dim
        qkv = att.qkv_proj.forward(x).view(H + 2 * KV, D)
        qk, v = qkv[:H + KV], qkv[H + KV:]
        qk = apply_rope(qk, *rope_tables(att.rotary.inv_freq * pos))
        kc, vc = self.kv.k[att.attn_idx], self.kv.v[att.attn_idx]
        kc[:, write:write + 1] = qk[H:].to(kc.dtype).unsqueeze(1)
        vc[:, write:write + 1] = v.to(vc.dtype).unsqueeze(1)
        keys, values = kc[:, start:write + 1], vc[:, start:write + 1]  # [KV, L, D] views of the pool
        q = qk[:H].view(1, KV, H // KV, D)  # each kv head's query heads as rows: its keys read once
        q = q.to(kc.dtype) if self.bf16_attention else q
        if keys.dtype != q.dtype:
            keys, values = keys.to(q.dtype), values.to(q.dtype)
        out = F.scaled_dot_product_attention(q, keys[None], values[None], scale=att.scale)  # in q's dtype
        return att.o_proj.forward(out.reshape(1, H * D))  # bf16 goes in as it is, as in the eager step

    def __call__(self, ids: torch.Tensor, start: int, write: int) -> torch.Tensor:
        """ids [1] -> hidden [1, hidden]: the token at position ``write - start`` of the sequence whose past
        starts at pool slot ``start``."""
        x = self.model.embed(ids)
        if not self.ready:  # the warm-up: traced and compiled through dynamo
            return self._fn(x, start + SHIFT, write + SHIFT)
        return self._direct(x, start + SHIFT, write + SHIFT)

    def _direct(self, x: torch.Tensor, start2: int, write2: int) -> torch.Tensor:
        args = list(self._args)
        args[self._slots["x"]], args[self._slots["start2"]], args[self._slots["write2"]] = x, start2, write2
        return self._graph(*args)[0]

    def warm_up(self) -> None:
        """Compile on a decode step in the scratch block (nothing a sequence owns), then check that the direct
        call of the compiled graph gives the dynamo call's result on the next one."""
        t0 = time.perf_counter()
        try:
            with torch.inference_mode():
                ids = torch.zeros(1, dtype=torch.long)
                self(ids, self.scratch_slot, self.scratch_slot + 1)
                if self._graph is None:
                    raise RuntimeError("the compiled decode graph's inputs were not the expected ones")
                x, start2, write2 = self.model.embed(ids), self.scratch_slot + SHIFT, self.scratch_slot + 2 + SHIFT
                want = self._fn(x, start2, write2)
                got = self._direct(x, start2, write2)
                if not torch.equal(got, want):
                    raise RuntimeError("the compiled decode graph called directly differs from dynamo's call")
            self.compile_seconds = time.perf_counter() - t0
            self.ready = True
            log.info("decode step compiled in %.0f s: one-sequence decode steps run the compiled graph", self.compile_seconds)
        except Exception as exc:  # no C++ compiler, an inductor bug: the eager step stays
            self.error = exc
            log.warning("compiling the decode step failed (%s: %s); decode steps stay eager", type(exc).__name__, exc)

    def start(self, background: bool = True) -> None:
        if background:
            self._thread = threading.Thread(target=self.warm_up, name="lexicon-compile-decode", daemon=True)
            self._thread.start()
        else:
            self.warm_up()

    def wait(self, timeout: Optional[float] = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.ready
