"""The thread-safe ``LLM`` facade over ``LLMEngine``.

``LLM`` runs the engine on a background thread: every caller's request joins the same continuous batch,
so concurrent callers are served by shared decode steps. ``stream`` yields text deltas; closing the
iterator cancels the request and frees its blocks and slot at once.
"""
from __future__ import annotations

import queue
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

import torch

from engine.llm_engine import EngineConfig, LLMEngine, Prompt, RequestOutput
from engine.openmp import LoadAwareTeam, release_thread_pool
from engine.sampling import SamplingParams
from engine.sequence import Sequence
from engine.snapshot import SnapshotInfo


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
                 kv_dtype: str = "bfloat16", chunk_tokens: Optional[int] = None, device: str = "cpu",
                 speculative: Optional[bool] = None, max_waiting: int = 64, dtype: Optional[torch.dtype] = None, loaded=None,
                 decode_graphs: str = "auto", cpu_gemm: Optional[str] = None, compile_decode: str = "off",
                 compile_cache_dir: Optional[str] = None):
        """``dtype``: weights and activations; default fp32 on CPU, bf16 on accelerators. ``memory_gib``: a cap on
        weights + caches; None sizes the pools from the device (CUDA) or from what max_num_seqs x max_model_len
        need (CPU). ``decode_graphs``: "auto" captures decode steps in CUDA graphs on CUDA, "off" does not. ``cpu_gemm``: the CPU GEMM kind
        (engine.loader.resolve_cpu_gemm; None: LEXICON_ENGINE_CPU_GEMM, else "auto"). ``compile_decode``: "background"
        compiles a CPU dense model's one-sequence decode step on a thread (engine/compiled_decode.py), its on-disk caches
        under ``compile_cache_dir`` (None: inductor's default, /tmp/torchinductor_<user>)."""
        if loaded is None:
            from engine.loader import load_model
            dtype = dtype or (torch.float32 if device == "cpu" else torch.bfloat16)
            loaded = load_model(model_path, dtype=dtype, device=device, cpu_gemm=cpu_gemm)
        self.engine = LLMEngine(loaded, EngineConfig(max_model_len, max_num_seqs, memory_gib, kv_dtype,
                                                     chunk_tokens, device, speculative, max_waiting=max_waiting,
                                                     decode_graphs=decode_graphs, compile_decode=compile_decode,
                                                     compile_cache_dir=compile_cache_dir))
        release_thread_pool()  # the loop thread below is the one that computes (engine/openmp.py)
        self.team = LoadAwareTeam()  # its OpenMP team: one thread while the machine is oversubscribed
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
                if not self._closed and not self.engine.has_work:
                    self._idle()
                while not self._closed and not self.engine.has_work:
                    self._cv.wait()
                if self._closed:
                    return
                try:
                    self.team.update()
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

    @staticmethod
    def _idle() -> None:
        """The loop has no work: free its OpenMP pool until the next step (engine/openmp.py). A parked pool of an
        idle engine still counts among libgomp's managed threads, and past the CPU count every other thread's
        team stops spinning between regions. Measured on the 2-vCPU AMD VM (issue #25): an int4 engine's eager
        batch-1 decode ran at 71-73 tok/s alone and 45-49 while a oneDNN-path engine that had served one request
        lived; with this release, 72-75 and 75-76."""
        release_thread_pool()

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
