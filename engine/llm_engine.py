"""LLMEngine (the step loop: schedule -> run -> postprocess -> detokenize) and the thread-safe ``LLM`` facade.

``LLM`` runs the engine on a background thread: every caller's request joins the same continuous batch,
so concurrent callers are served by shared decode steps. ``stream`` yields text deltas; closing the
iterator cancels the request and frees its blocks and slot at once.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional, Union

import torch

from engine.block_manager import BlockManager
from engine.detokenizer import IncrementalText
from engine.model_runner import ModelRunner
from engine.openmp import release_thread_pool
from engine.planner import GIB, size_pools
from engine.sampling import SamplingParams
from engine.scheduler import Scheduler, SchedulerConfig
from engine.sequence import Sequence
from engine.snapshot import SnapshotInfo, SnapshotStore
from engine.spec_decode import PromptLookup, SpecStats

Prompt = Union[str, list[int]]


@dataclass
class EngineConfig:
    max_model_len: int = 8192
    max_num_seqs: int = 8
    memory_gib: Optional[float] = None  # a cap; None: CUDA sizes from the device, CPU from the model's need
    kv_dtype: str = "bfloat16"
    chunk_tokens: int = 512
    device: str = "cpu"
    speculative: bool = True  # prompt-lookup drafts for greedy requests (outputs identical to plain greedy)
    num_spec_tokens: int = 4
    block_size: int = 16
    max_waiting: int = 64
    n_snapshot_slots: int = 4
    memory_fraction: float = 0.9  # of the device's memory, on CUDA
    kernels: str = "auto"  # engine.kernels.select_ops: Triton on CUDA, the torch paths on CPU


@dataclass
class RequestOutput:
    request_id: str
    text: str
    token_ids: list[int]
    prompt_tokens: int
    finish_reason: Optional[str]


def _weights_bytes(model: torch.nn.Module) -> int:
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    for m in model.modules():
        for attr in ("compressed", "compressed_up", "compressed_down"):  # Linear parts, routed experts
            for part in getattr(m, attr, None) or []:
                total += part.nbytes
        total += getattr(m, "packed_nbytes", 0)  # a CPU-packed copy that replaced the weight
    return total


class LLMEngine:
    def __init__(self, loaded, config: EngineConfig):
        self.loaded, self.config = loaded, config
        self.model, self.tokenizer = loaded.model, loaded.tokenizer
        cfg = self.model.config
        self.eos_ids = set(self.tokenizer.eos_token_ids if self.tokenizer else cfg.eos_token_ids)
        cap = None if config.memory_gib is None else int(config.memory_gib * GIB)
        pools = size_pools(cfg, cap, _weights_bytes(self.model), config.kv_dtype,
                           config.max_model_len, config.max_num_seqs, config.chunk_tokens, config.block_size,
                           config.n_snapshot_slots, conv_bytes=torch.finfo(self.model.dtype).bits // 8,
                           device=str(self.model.device), memory_fraction=config.memory_fraction)
        self.pools = pools
        self.runner = ModelRunner(self.model, pools.num_kv_blocks, config.block_size, pools.num_state_slots,
                                  config.kv_dtype, config.kernels)
        blocks = BlockManager(pools.num_kv_blocks, config.block_size)
        self.scheduler = Scheduler(
            SchedulerConfig(config.max_num_seqs, config.chunk_tokens, config.max_waiting, config.max_model_len),
            blocks, self.runner.states, SnapshotStore(blocks, self.runner.states))
        self.lookup = PromptLookup(config.num_spec_tokens) if config.speculative else None
        self.spec = SpecStats()
        self._detok: dict[int, IncrementalText] = {}
        self._snapshot_target: dict[int, str] = {}
        self.generated_tokens = 0
        self.recent: deque[tuple[float, int]] = deque()  # (time, tokens) of the last steps, for tokens_per_s
        self.peak_batch = 0
        self.started = time.monotonic()

    def encode(self, prompt: Prompt) -> list[int]:
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise ValueError("this model has no tokenizer: pass token ids")
            return self.tokenizer.encode(prompt)
        return list(prompt)

    def add_request(self, prompt: Prompt, params: Optional[SamplingParams] = None,
                    snapshot: Optional[str] = None, snapshot_target: Optional[str] = None) -> Sequence:
        params = params or SamplingParams()
        seq = Sequence(self.encode(prompt), params, snapshot=snapshot)
        self.scheduler.add(seq)
        self._detok[seq.seq_id] = IncrementalText(params.stop, self.tokenizer)
        if snapshot_target is not None:
            self._snapshot_target[seq.seq_id] = snapshot_target
        return seq

    def abort(self, seq: Sequence) -> None:
        self.scheduler.abort(seq)
        self._forget(seq)

    def _forget(self, seq: Sequence) -> None:
        self._detok.pop(seq.seq_id, None)
        self._snapshot_target.pop(seq.seq_id, None)

    @property
    def has_work(self) -> bool:
        return self.scheduler.has_work

    def step(self) -> list[tuple[Sequence, str]]:
        """One batch; -> (sequence, new text) for every sequence that produced text or finished."""
        if self.lookup is not None:
            for seq in self.scheduler.running:
                if not seq.is_prefilling and seq.pending == 1 and seq.params.greedy:
                    room = seq.max_len - len(seq)  # never write KV past the reservation
                    if seq.ngram_index is None:
                        seq.ngram_index = self.lookup.new_index()
                    k = min(self.lookup.k, room, seq.params.max_tokens - seq.num_output - 1)
                    seq.draft = self.lookup.propose(seq.token_ids, k, seq.ngram_index)
        batch = self.scheduler.schedule()
        if not batch.seqs:
            return []
        self.peak_batch = max(self.peak_batch, len(batch.seqs))
        drafted = {s.seq_id: (len(s.draft), s.num_cached) for s in batch.seqs if s.draft}
        backup = self._backup_states([s for s in batch.seqs if s.draft]) if drafted and self.runner.has_mamba else None
        tokens, _ = self.runner.run(batch)
        for i, seq in enumerate(batch.seqs):
            if tokens[i] is None:
                continue
            name = self._snapshot_target.get(seq.seq_id)
            if name is not None:
                seq.num_cached = len(seq.token_ids)
                self.scheduler.release_to_snapshot(seq, name)
                tokens[i] = []
            elif seq.seq_id in drafted:
                tokens[i] = self.spec.accept(seq.draft, tokens[i])
        finished = set(s.seq_id for s in self.scheduler.postprocess(batch, tokens, self.eos_ids))
        if backup is not None:
            self._restore_rejected(backup, drafted, tokens, batch)
        events = []
        for seq, toks in zip(batch.seqs, tokens):
            if toks is None:
                continue
            self.generated_tokens += len(toks)
            self.recent.append((time.monotonic(), len(toks)))
            if len(self.recent) > 4096:
                self.recent.popleft()
            det = self._detok.get(seq.seq_id)
            if det is None:
                continue
            delta, hit = det.update_ids(seq.output_ids, seq.is_finished)  # decodes only the new tokens
            if hit and not seq.is_finished:
                self.scheduler.finish(seq, "stop")
            if delta or seq.is_finished:
                events.append((seq, delta))
            if seq.is_finished:
                finished.add(seq.seq_id)
        return events

    def _backup_states(self, seqs: list[Sequence]):
        st = self.runner.states
        slots = torch.tensor([s.state_slot for s in seqs], dtype=torch.long)
        return slots, [(c[slots].clone(), s[slots].clone()) for c, s in zip(st.conv, st.ssm)], seqs

    def _restore_rejected(self, backup, drafted, tokens, batch) -> None:
        """A hybrid model's Mamba state already absorbed the rejected drafts: roll it back and re-feed."""
        slots, saved, seqs = backup
        for j, seq in enumerate(seqs):
            n_draft, cached_before = drafted[seq.seq_id]
            accepted = len(tokens[batch.seqs.index(seq)]) - 1
            if seq.is_finished or accepted == n_draft:
                continue
            for (c, s), (c0, s0) in zip(zip(self.runner.states.conv, self.runner.states.ssm), saved):
                c[slots[j]].copy_(c0[j])
                s[slots[j]].copy_(s0[j])
            seq.num_cached = cached_before

    def text_of(self, seq: Sequence) -> str:
        det = self._detok.get(seq.seq_id)
        return det.text if det else ""

    def output(self, seq: Sequence) -> RequestOutput:
        """The final output; forgets the sequence's detokenizer state once it has finished."""
        out = RequestOutput(seq.request_id, self.text_of(seq), seq.output_ids, seq.prompt_len, seq.finish_reason)
        if seq.is_finished:
            self._forget(seq)
        return out

    def stats(self) -> dict:
        s, now = self.scheduler, time.monotonic()
        while self.recent and now - self.recent[0][0] > 10.0:
            self.recent.popleft()
        window = max(1e-9, min(10.0, now - self.started))
        return {
            "running": len(s.running), "waiting": len(s.waiting),
            "kv_blocks_used": s.blocks.num_used, "kv_blocks_total": s.blocks.num_blocks,
            "block_size": s.blocks.block_size, "kv_dtype": self.config.kv_dtype,
            "mamba_slots_used": s.states.num_used, "mamba_slots_total": s.states.num_slots,
            "snapshots": len(s.snapshots), "snapshot_names": sorted(s.snapshots.snapshots),
            "snapshot_evictions": s.snapshots.evictions,
            "generated_tokens": self.generated_tokens, "peak_batch": self.peak_batch,
            "tokens_per_s": sum(n for _, n in self.recent) / window,
            "speculative": self.lookup is not None, "spec_mean_acceptance_length": self.spec.mean_acceptance_length,
            "max_model_len": self.config.max_model_len, "max_num_seqs": self.config.max_num_seqs,
            "kv_pool_bytes": self.pools.kv_bytes, "state_pool_bytes": self.pools.state_bytes,
            "pool_budget": self.pools.source,
        }


class _Handle:
    """One request as seen by its caller: a queue of text deltas, then the final RequestOutput."""

    def __init__(self, llm: "LLM", seq: Sequence):
        self.llm, self.seq = llm, seq
        self.events: queue.Queue = queue.Queue()
        self.output: Optional[RequestOutput] = None

    def result(self) -> RequestOutput:
        while self.output is None:
            item = self.events.get()
            if isinstance(item, RequestOutput):
                self.output = item
        return self.output

    def deltas(self) -> "TextStream":
        return TextStream(self)

    def _deltas(self) -> Iterator[str]:
        try:
            while True:
                item = self.events.get()
                if isinstance(item, RequestOutput):
                    self.output = item
                    return
                if isinstance(item, BaseException):
                    raise item
                if item:
                    yield item
        finally:
            self.cancel()

    def cancel(self) -> None:
        if self.output is None:
            self.llm._cancel(self)


class TextStream:
    """The iterator ``LLM.stream`` returns. Closing it cancels the request whenever that happens, also before
    the first ``next()`` (a plain generator's ``close()`` does not run its body then, so 63 of 63 requests
    closed early ran to max_tokens), and so does dropping it unclosed."""

    def __init__(self, handle: _Handle):
        self.handle, self._it, self._closed = handle, handle._deltas(), False

    def __iter__(self) -> "TextStream":
        return self

    def __next__(self) -> str:
        return next(self._it)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._it.close()
            self.handle.cancel()

    def __enter__(self) -> "TextStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the engine may be gone
            pass


class LLM:
    """Thread-safe engine facade (see docs/contracts.md, "engine serving")."""

    def __init__(self, model_path, *, max_model_len: int = 8192, max_num_seqs: int = 8,
                 memory_gib: Optional[float] = None,
                 kv_dtype: str = "bfloat16", chunk_tokens: int = 512, device: str = "cpu",
                 speculative: bool = True, max_waiting: int = 64, dtype: Optional[torch.dtype] = None, loaded=None):
        """``dtype``: weights and activations; default fp32 on CPU, bf16 on accelerators. ``memory_gib``: a cap on
        weights + caches; None sizes the pools from the device (CUDA) or from what max_num_seqs x max_model_len
        need (CPU)."""
        if loaded is None:
            from engine.loader import load_model
            dtype = dtype or (torch.float32 if device == "cpu" else torch.bfloat16)
            loaded = load_model(model_path, dtype=dtype, device=device)
        self.engine = LLMEngine(loaded, EngineConfig(max_model_len, max_num_seqs, memory_gib, kv_dtype,
                                                     chunk_tokens, device, speculative, max_waiting=max_waiting))
        release_thread_pool()  # the loop thread below is the one that computes (engine/openmp.py)
        self.tokenizer = loaded.tokenizer
        self.max_model_len = max_model_len
        self.model_name = loaded.config.name or str(model_path)
        self._handles: dict[int, _Handle] = {}
        self._finished: dict[str, int] = {}  # finish reason -> requests
        self._cv = threading.Condition()  # guards the engine; the loop holds it for a whole step
        # Callers queued for the engine lock during a step go first at the step's end: a lock is not fair,
        # and the loop, re-taking it at once, kept 7 of 8 concurrent submitters out for 5 steps (~4 s).
        self._queued = 0
        self._queued_cv = threading.Condition()
        self._closed = False
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._loop, name="lexicon-engine", daemon=True)
        self._thread.start()

    # -- the step loop -------------------------------------------------------------------------
    @contextmanager
    def _locked(self):
        """The engine lock for a caller thread, ahead of the loop's next step."""
        with self._queued_cv:
            self._queued += 1
        try:
            with self._cv:
                yield
        finally:
            with self._queued_cv:
                self._queued -= 1
                self._queued_cv.notify_all()

    def _loop(self) -> None:
        while True:
            with self._queued_cv:
                self._queued_cv.wait_for(lambda: self._queued == 0, timeout=0.1)
            with self._cv:
                while not self._closed and not self.engine.has_work:
                    self._cv.wait()
                if self._closed:
                    return
                try:
                    events = self.engine.step()
                except BaseException as exc:  # fail every waiting caller rather than hang them
                    self._fail_all(exc)
                    continue
                for seq, delta in events:
                    handle = self._handles.get(seq.seq_id)
                    if handle is None:
                        continue
                    if delta:
                        handle.events.put(delta)
                    if seq.is_finished:
                        self._finish(handle)

    def _finish(self, handle: _Handle) -> None:
        self._handles.pop(handle.seq.seq_id, None)
        out = self.engine.output(handle.seq)
        self._finished[out.finish_reason] = self._finished.get(out.finish_reason, 0) + 1
        handle.events.put(out)

    def _fail_all(self, exc: BaseException) -> None:
        self._error = exc
        for handle in list(self._handles.values()):
            self.engine.abort(handle.seq)
            handle.events.put(RuntimeError(f"engine step failed: {exc!r}"))
            self._finish(handle)

    def _submit(self, prompt: Prompt, params: Optional[SamplingParams], snapshot: Optional[str] = None,
                snapshot_target: Optional[str] = None) -> _Handle:
        with self._locked():
            if self._closed:
                raise RuntimeError("the LLM is closed")
            seq = self.engine.add_request(prompt, params, snapshot=snapshot, snapshot_target=snapshot_target)
            handle = _Handle(self, seq)
            self._handles[seq.seq_id] = handle
            self._cv.notify()
        return handle

    def _cancel(self, handle: _Handle) -> None:
        with self._locked():
            if handle.seq.seq_id in self._handles and not handle.seq.is_finished:
                self.engine.abort(handle.seq)
                self._finish(handle)

    # -- public API ----------------------------------------------------------------------------
    def generate(self, prompts: list[Prompt], params: Optional[SamplingParams] = None) -> list[RequestOutput]:
        if isinstance(prompts, str):
            prompts = [prompts]
        handles: list[_Handle] = []
        try:
            for p in prompts:
                handles.append(self._submit(p, params))
        except BaseException:
            for h in handles:
                self._cancel(h)
            raise
        return [h.result() for h in handles]

    def stream(self, prompt: Prompt, params: Optional[SamplingParams] = None,
               snapshot: Optional[str] = None) -> TextStream:
        return self._submit(prompt, params, snapshot=snapshot).deltas()

    def submit(self, prompt: Prompt, params: Optional[SamplingParams] = None,
               snapshot: Optional[str] = None) -> _Handle:
        """Lower-level: the handle (``.deltas()``, ``.result()``, ``.seq``); used by the HTTP router."""
        return self._submit(prompt, params, snapshot=snapshot)

    def chat_prompt(self, messages: list[dict]) -> list[int]:
        if self.tokenizer is None:
            raise ValueError("this model has no tokenizer / chat template")
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True)

    def chat(self, messages: list[dict], params: Optional[SamplingParams] = None, stream: bool = False,
             snapshot: Optional[str] = None):
        """With ``snapshot``, the rendered messages are the continuation after the snapshot's tokens."""
        ids = self.chat_prompt(messages)
        if stream:
            return self.stream(ids, params, snapshot=snapshot)
        return self._submit(ids, params, snapshot=snapshot).result()

    def create_snapshot(self, name: str, prompt: Prompt) -> SnapshotInfo:
        if not name:
            raise ValueError("a snapshot needs a name")
        out = self._submit(prompt, SamplingParams(max_tokens=1), snapshot_target=name).result()
        if out.finish_reason != "snapshot":
            raise RuntimeError(f"snapshot {name!r} was not created ({out.finish_reason})")
        return SnapshotInfo(name, out.prompt_tokens)

    def has_snapshot(self, name: str) -> bool:
        with self._locked():
            return name in self.engine.scheduler.snapshots

    def drop_snapshot(self, name: str) -> bool:
        with self._locked():
            return self.engine.scheduler.snapshots.drop(name)

    def stats(self) -> dict:
        with self._locked():
            return {**self.engine.stats(), "model": self.model_name, "finished": dict(self._finished)}

    def close(self) -> None:
        with self._cv:
            self._closed = True
            for handle in list(self._handles.values()):
                self.engine.abort(handle.seq)
                self._finish(handle)
            self._cv.notify_all()
        self._thread.join(timeout=30)

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
