"""CPU decode steps compiled whole by ``torch.compile`` (inductor, C++ wrapper) (issue #14).

An eager CPU decode step of SmolLM2-135M issues ~1,600 torch ops; each small one costs 2-5 us of Python and
dispatch on this project's 2-vCPU VMs, as much again as the 121 int4 GEMMs together. Compiled whole, the
step is one C++ call: inductor fuses the norms, rope, casts and residual adds into a few C++ loops per layer,
calls the int4 GEMMs and the attention as they are, and its C++ wrapper skips Python between them.

What it covers: dense models of ``attention`` (rope, no sliding window) and ``mlp`` blocks with a bf16 or fp32
KV pool. Two graphs (engine/direct_graph.py: compiled once, called without dynamo):
- one sequence whose past is one run of pool slots (the block manager hands a sequence its blocks at once
  and in order);
- a group of n >= 2 such sequences whose pasts start equally spaced in the pool (sequences admitted together
  with equal reservations), each reading as many keys as the longest past and masked past its own end: the
  eager decode plan's group (engine/kernels/cpu_decode_attention.py) as one graph.
Everything else keeps the eager step (``ModelRunner``). The hidden states are the eager step's up to the fused
kernels' summation order (tests/engine/serving/test_compiled_decode.py); the LM head stays eager
(``HybridLM.compute_logits``).

Compiling both costs ~2-4 min cold and ~20 s from inductor's on-disk cache (measured on the 2-vCPU VMs), so
``start(background=True)`` compiles on a thread from warm-up steps on the pool's scratch block while
the engine decodes eagerly; ``ready`` turns true when it is done. A failure (no C++ compiler, an inductor
error) is kept in ``error`` and the eager step stays: the engine never waits on or dies from it.

The slot ints go in shifted by 2: dynamo specializes ints 0 and 1, and a sequence at slot 0 would otherwise
compile a second graph.
"""
from __future__ import annotations

import logging
import os
import statistics
import threading
import time
from typing import Optional

import torch
import torch.nn.functional as F

from engine.direct_graph import DirectGraph
from engine.layers.embedding import apply_rope, rope_tables

log = logging.getLogger(__name__)
SHIFT = 2  # start and write slots go in + 2: never the 0 / 1 that dynamo specializes


def use_cache_dir(path) -> str:
    """Keep inductor's on-disk caches (its FX graph cache, AOT autograd's and the compiled C++ libraries) under
    ``path`` rather than /tmp/torchinductor_<user>, so that they outlive a reboot: a second start of the engine
    then loads both graphs from there instead of compiling them cold. A TORCHINDUCTOR_CACHE_DIR already in the
    environment wins, unless it is inductor's own default: inductor writes that into the environment itself the
    first time it asks for its cache directory, which loading a model may already have done). Returns the
    directory in use."""
    from torch._inductor.runtime.runtime_utils import default_cache_dir

    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if current is None or os.path.abspath(current) == os.path.abspath(default_cache_dir()):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(os.fspath(path))
    path = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    os.makedirs(path, exist_ok=True)
    return path


def unsupported(model, kv) -> Optional[str]:
    """Why the compiled steps do not cover this model and pool, or None: they take dense attention (rope, no
    window) + MLP blocks on CPU over a bf16 / fp32 pool, with int4, fp16 or plain GEMMs."""
    if model.device.type != "cpu":
        return f"a {model.device.type} model (CPU only)"
    if kv.fp8 or not kv.k or kv.block_size < 8 or any(t.storage_offset() for t in kv.k + kv.v):
        return "an FP8, empty or offset KV pool, or blocks under 8 slots"  # warm-up writes in one block
    for b in model.blocks:
        if b.kind == "attention":
            if b.mixer.rotary is None or b.mixer.spec.sliding_window is not None:
                return "attention without rope or with a sliding window"
        elif b.kind != "mlp":
            return f"{b.kind} blocks"
    if any(getattr(m, "packed_kind", None) == "onednn" for m in model.blocks.modules()):
        return ("oneDNN-packed weights: torch.compile cannot trace mkldnn._linear_pointwise, whose weight is an "
                "opaque oneDNN tensor with no fake-tensor form (int4, fp16 and plain GEMMs compile)")
    return None


def supported(model, kv) -> bool:
    return unsupported(model, kv) is None


class SpeedTrial:
    """The compiled path against the eager one on the engine's own first decode steps, per kind of step ("one":
    one sequence, "batch": a group): once the compiled graphs are ready, steps of a kind alternate between the
    two until each has ``steps`` timings, then the faster median keeps that kind for good. A compiled graph is
    only kept where it measured faster here (issue #25: the compiled path is never slower than eager)."""

    def __init__(self, steps: int = 8):
        self.steps = steps
        self.times: dict[str, dict[bool, list[float]]] = {}
        self.compiled: dict[str, bool] = {}  # kind -> the decision, once made

    def use_compiled(self, kind: str) -> bool:
        if kind in self.compiled:
            return self.compiled[kind]
        t = self.times.setdefault(kind, {True: [], False: []})
        return len(t[True]) <= len(t[False])

    def record(self, kind: str, compiled: bool, seconds: float) -> None:
        if kind in self.compiled:
            return
        t = self.times.setdefault(kind, {True: [], False: []})
        t[compiled].append(seconds)
        if min(len(t[True]), len(t[False])) >= self.steps:
            c, e = self.medians(kind)
            self.compiled[kind] = c <= e
            if c > e:
                log.warning("the compiled %s decode step measured slower than the eager one (%.2f vs %.2f ms, "
                            "median of %d each): those steps stay eager", kind, c * 1e3, e * 1e3, self.steps)
            else:
                log.info("compiled %s decode step %.2f ms vs eager %.2f ms (median of %d each): compiled kept",
                         kind, c * 1e3, e * 1e3, self.steps)

    def medians(self, kind: str) -> tuple[float, float]:
        t = self.times[kind]
        return statistics.median(t[True]), statistics.median(t[False])

    def summary(self) -> dict:
        """kind -> {"compiled_ms", "eager_ms", "kept": compiled | eager | measuring}."""
        out = {}
        for kind, t in self.times.items():
            c, e = (statistics.median(v) * 1e3 if v else None for v in (t[True], t[False]))
            kept = {True: "compiled", False: "eager"}.get(self.compiled.get(kind), "measuring")
            out[kind] = {"compiled_ms": c, "eager_ms": e, "kept": kept}
        return out


class CompiledDecode:
    def __init__(self, model, kv, scratch_slot: int, bf16_attention: bool, trial_steps: int = 8):
        """``scratch_slot``: the first slot of a pool block no sequence owns (the warm-up writes there).
        ``trial_steps``: timings of each path per kind before the faster is kept (``SpeedTrial``; 0: no trial,
        the compiled path is taken as soon as it is ready)."""
        self.model, self.kv, self.scratch_slot = model, kv, scratch_slot
        self.bf16_attention = bf16_attention and kv.dtype == torch.bfloat16
        self.trial = SpeedTrial(trial_steps) if trial_steps else None
        self.ready = False  # the one-sequence graph serves (``use``: and every kind whose graph is compiled)
        self.batch_ready = False  # the group graph is compiled too (after the one-sequence graph)
        self.error: Optional[BaseException] = None
        self.batch_error: Optional[BaseException] = None  # the group graph failed where the one-sequence one serves
        self.compile_seconds: Optional[float] = None  # until the one-sequence graph was ready
        self.batch_seconds: Optional[float] = None  # until both were
        self._thread: Optional[threading.Thread] = None
        self._one = DirectGraph(self._forward, ("x", "start2", "write2"))
        self._batch = DirectGraph(self._forward_batch, ("x", "base2", "stride2", "keys2", "past"),
                                  batch_dims=("x", "past"))

    def _forward(self, x: torch.Tensor, start2: int, write2: int) -> torch.Tensor:
        """x [1, hidden] (the token's embedding) -> final-normed hidden [1, hidden]; K/V written at ``write``."""
        start, write = start2 - SHIFT, write2 - SHIFT
        pos = write - start
        return self._layers(x, lambda att, h: self._attention(att, h, start, write, pos))

    def _layers(self, x: torch.Tensor, attend) -> torch.Tensor:
        """Every block and the final norm, ``attend(mixer, h)`` standing for each attention layer."""
        for block in self.model.blocks:
            h = block.norm.forward(x)
            h = attend(block.mixer, h) if block.kind == "attention" else block.mixer.forward(h)
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

    def _forward_batch(self, x: torch.Tensor, base2: int, stride2: int, keys2: int, past: torch.Tensor) -> torch.Tensor:
        """x [n, hidden] (n >= 2 tokens' embeddings), past [n] (each member's past length) -> final-normed hidden
        [n, hidden]. Member i's past starts at slot base + i * stride; each reads ``keys`` keys from there, those
        past its own end masked (the eager plan's group, engine/kernels/cpu_decode_attention.py)."""
        base, stride, keys = base2 - SHIFT, stride2 - SHIFT, keys2 - SHIFT
        n = x.shape[0]
        slots = base + torch.arange(n) * stride + past
        hidden_mask = torch.arange(keys)[None, :] > past[:, None]  # [n, keys]: keys past a member's end
        return self._layers(x, lambda att, h: self._attention_batch(att, h, base, stride, keys, past, slots,
                                                                    hidden_mask))

    def _attention_batch(self, att, x, base, stride, keys, past, slots, hidden_mask) -> torch.Tensor:
        s = att.spec
        H, KV, D = s.num_heads, s.num_kv_heads, s.head_dim
        n = x.shape[0]
        qkv = att.qkv_proj.forward(x).view(n, H + 2 * KV, D)
        qk, v = qkv[:, :H + KV], qkv[:, H + KV:]
        cos, sin = rope_tables(past.float()[:, None] * att.rotary.inv_freq[None, :])
        qk = apply_rope(qk, cos[:, None, :], sin[:, None, :])
        kc, vc = self.kv.k[att.attn_idx], self.kv.v[att.attn_idx]
        kc[:, slots] = qk[:, H:].to(kc.dtype).transpose(0, 1)
        vc[:, slots] = v.to(vc.dtype).transpose(0, 1)
        ss, sk = kc.stride(1), kc.stride(0)
        shape, strides = (n, KV, keys, D), (stride * ss, sk, ss, kc.stride(2))
        k = kc.as_strided(shape, strides, base * ss)  # a pool tensor owns its storage (``supported``)
        vv = vc.as_strided(shape, strides, base * ss)
        q = qk[:, :H].reshape(n, KV, H // KV, D)
        q = q.to(kc.dtype) if self.bf16_attention else q
        if k.dtype != q.dtype:
            k, vv = k.to(q.dtype), vv.to(q.dtype)
        mask = torch.zeros(hidden_mask.shape, dtype=q.dtype).masked_fill(hidden_mask, float("-inf"))[:, None, None]
        out = F.scaled_dot_product_attention(q, k, vv, attn_mask=mask, scale=att.scale)
        return att.o_proj.forward(out.reshape(n, H * D))

    def batch(self, ids: torch.Tensor, base: int, stride: int, pasts: list[int]) -> torch.Tensor:
        """ids [n] (n >= 2) -> hidden [n, hidden]: member i's token at position pasts[i], its past starting at
        pool slot base + i * stride (its new key written at base + i * stride + pasts[i])."""
        inputs = dict(x=self.model.embed(ids), base2=base + SHIFT, stride2=stride + SHIFT,
                      keys2=max(pasts) + 1 + SHIFT, past=torch.tensor(pasts, dtype=torch.long))
        return self._batch(**inputs) if self.batch_ready else self._batch.trace(**inputs)

    def __call__(self, ids: torch.Tensor, start: int, write: int) -> torch.Tensor:
        """ids [1] -> hidden [1, hidden]: the token at position ``write - start`` of the sequence whose past
        starts at pool slot ``start``."""
        inputs = dict(x=self.model.embed(ids), start2=start + SHIFT, write2=write + SHIFT)
        return self._one(**inputs) if self.ready else self._one.trace(**inputs)

    def warm_up(self) -> None:
        """Compile both graphs on decode steps in the scratch block (nothing a sequence owns), then check each on
        other inputs: no recompile, and the direct call gives dynamo's result. The one-sequence graph serves as
        soon as it is done (``ready``), before the group graph is compiled (``batch_ready``)."""
        t0 = time.perf_counter()
        try:
            with torch.inference_mode():
                s = self.scratch_slot
                self(torch.zeros(1, dtype=torch.long), s, s + 1)
                self(torch.zeros(1, dtype=torch.long), s + 1, s + 3)
                self._one.check(x=self.model.embed(torch.zeros(1, dtype=torch.long)), start2=s + SHIFT,
                                write2=s + 2 + SHIFT)
                self.compile_seconds = time.perf_counter() - t0
                self.ready = True
                log.info("one-sequence decode step compiled in %.0f s: it runs the compiled graph",
                         self.compile_seconds)
                # two members 3 slots apart, two 2 apart, then three 2 apart (the scratch block has >= 8 slots)
                self.batch(torch.zeros(2, dtype=torch.long), s, 3, [1, 2])
                self.batch(torch.zeros(2, dtype=torch.long), s + 1, 2, [1, 0])
                self._batch.check(x=self.model.embed(torch.zeros(3, dtype=torch.long)), base2=s + SHIFT,
                                  stride2=2 + SHIFT, keys2=2 + SHIFT, past=torch.tensor([1, 0, 1]))
            self.batch_seconds = time.perf_counter() - t0
            self.batch_ready = True
            log.info("group decode step compiled (both graphs in %.0f s)", self.batch_seconds)
        except Exception as exc:  # no C++ compiler, an inductor bug: the eager step stays
            if self.ready:  # the one-sequence graph stands; group steps stay eager
                self.batch_error = exc
                log.warning("compiling the group decode step failed (%s: %s); group steps stay eager",
                            type(exc).__name__, exc)
            else:
                self.error = exc
                log.warning("compiling the decode step failed (%s: %s); decode steps stay eager",
                            type(exc).__name__, exc)

    def start(self, background: bool = True) -> None:
        if background:
            self._thread = threading.Thread(target=self.warm_up, name="lexicon-compile-decode", daemon=True)
            self._thread.start()
        else:
            self.warm_up()

    def use(self, kind: str) -> bool:
        """Whether a decode step of ``kind`` ("one" | "batch") runs the compiled graph now (ready, and not measured
        slower than eager by the trial)."""
        return self.ready and (kind == "one" or self.batch_ready) and (self.trial is None or self.trial.use_compiled(kind))

    def timed(self, kind: str, compiled: bool, seconds: float) -> None:
        """A decode step of ``kind`` that ``use`` was asked about took ``seconds`` on the path it took."""
        if self.ready and self.trial is not None:
            self.trial.record(kind, compiled, seconds)

    def state(self) -> str:
        """compiling | ready | failed: <error> | eager: <why> (the engine's stats, ``compiled_decode``)."""
        if self.error is not None:
            return f"failed: {type(self.error).__name__}: {str(self.error)[:200]}"
        if not self.ready:
            return "compiling"
        slower = [k for k, v in (self.trial.compiled.items() if self.trial else ()) if not v]
        if slower:
            why = ", ".join(f"{k} {c:.2f} ms compiled vs {e:.2f} eager" for k in slower
                            for c, e in [tuple(x * 1e3 for x in self.trial.medians(k))])
            return ("eager: " if "one" in slower else "ready; eager group steps: ") + \
                f"the compiled step measured slower ({why}, median of {self.trial.steps} each)"
        if self.batch_error is not None:
            return f"ready; eager group steps: {type(self.batch_error).__name__}: {str(self.batch_error)[:200]}"
        return "ready" if self.batch_ready else "ready; group step compiling"

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Until both graphs are compiled (or failed); whether they are."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.ready and self.batch_ready
