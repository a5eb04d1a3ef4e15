"""LLMEngine: the step loop (schedule -> run -> postprocess -> detokenize), one step at a time, not thread-safe.

The thread-safe facade that runs it on a background thread, ``LLM``, lives in engine/llm.py (it imports this
module; this one does not import it back).
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Optional, Union

import torch

from engine.block_manager import BlockManager
from engine.compiled_decode import use_cache_dir
from engine.detokenizer import IncrementalText
from engine.kernels.cpu_prefill_attention import bf16_prefill
from engine.model_runner import ModelRunner
from engine.memory_budget import engine_budget, resolve_engine_config
from engine.planner import pools_of
from engine.sampling import SamplingParams
from engine.scheduler import Scheduler, SchedulerConfig
from engine.sequence import Sequence
from engine.snapshot import SnapshotStore
from engine.spec_decode import PromptLookup, SpecStats

Prompt = Union[str, list[int]]


@dataclass
class EngineConfig:
    max_model_len: int = 8192
    max_num_seqs: int = 8
    memory_gib: Optional[float] = None  # a cap; None: CUDA sizes from the device, CPU from the model's need
    kv_dtype: str = "bfloat16"
    chunk_tokens: Optional[int] = None  # None: the device's default (engine/memory_budget.py: CPU 512, CUDA 2048)
    device: str = "cpu"
    speculative: Optional[bool] = None  # prompt-lookup drafts for greedy requests (outputs identical to plain
    # greedy); None: the device's default (engine/memory_budget.py: on for CPU, off for CUDA)
    num_spec_tokens: int = 4
    block_size: int = 16
    max_waiting: int = 64
    n_snapshot_slots: Optional[int] = None  # None: the device's default (CPU 4, CUDA 2)
    memory_fraction: Optional[float] = None  # of the device's memory, on CUDA (None: 1.0, the reserve counted apart)
    kernels: str = "auto"  # engine.kernels.select_ops: Triton on CUDA, the torch paths on CPU
    decode_graphs: str = "auto"  # CUDA graphs for decode steps on CUDA; "off" disables them (ModelRunner)
    compile_decode: str = "off"  # CPU one-sequence decode steps compiled whole: off | background | wait (ModelRunner)
    compile_cache_dir: Optional[str] = None  # inductor's on-disk caches (compiled_decode.use_cache_dir); None: /tmp
    spec_seqs: Optional[int] = None  # sequences that may speculate in one step (their Mamba checkpoints are
    # allocated); None: the device's default (CPU every running sequence, CUDA 2)
    runtime_reserve_gib: Optional[float] = None  # None: the device's default (CUDA 1 GiB, or more if measured)


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
        # every allocation below (pools, state slots, checkpoints, decode tables) from the one budget that
        # ``lexicon plan`` prints (engine/memory_budget.py)
        self.config = config = resolve_engine_config(config, self.model.device)
        conv_bytes = torch.finfo(self.model.dtype).bits // 8
        spec_tokens = config.num_spec_tokens if config.speculative else 0
        self.budget = engine_budget(cfg, _weights_bytes(self.model), config, self.model.device, conv_bytes)
        self.pools = pools = pools_of(self.budget)
        if config.compile_decode != "off" and config.compile_cache_dir:
            use_cache_dir(config.compile_cache_dir)
        self.runner = ModelRunner(self.model, pools.num_kv_blocks, config.block_size, pools.num_state_slots,
                                  config.kv_dtype, config.kernels, config.max_num_seqs, config.max_model_len,
                                  config.decode_graphs, spec_tokens, config.compile_decode,
                                  spec_rows=config.spec_seqs)
        # bf16 prefill attention where the prefill GEMMs round to bf16 anyway (int4 weights) and the pool is bf16
        self.runner.ctx.prefill_bf16 = bf16_prefill(self.model)
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
        ids, vocab = list(prompt), self.model.config.vocab_size
        bad = [t for t in ids if not isinstance(t, int) or not 0 <= t < vocab]
        if bad:  # checked here, not per step on the device (an out-of-range id would be a device-side assert)
            raise ValueError(f"token id out of range [0, {vocab}): {bad[0]!r}")
        return ids

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
            drafting = 0  # no more than spec_seqs sequences speculate in one step (their checkpoint rows)
            for seq in self.scheduler.running:
                if drafting < self.config.spec_seqs and not seq.is_prefilling and seq.pending == 1 \
                        and seq.params.greedy:
                    room = seq.max_len - len(seq)  # never write KV past the reservation
                    if seq.ngram_index is None:
                        seq.ngram_index = self.lookup.new_index()
                    k = min(self.lookup.k, room, seq.params.max_tokens - seq.num_output - 1)
                    seq.draft = self.lookup.propose(seq.token_ids, k, seq.ngram_index)
                    drafting += bool(seq.draft)
        batch = self.scheduler.schedule()
        if not batch.seqs:
            return []
        self.peak_batch = max(self.peak_batch, len(batch.seqs))
        drafted = {s.seq_id: len(s.draft) for s in batch.seqs if s.draft}
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
        if drafted and self.runner.checkpoints is not None:
            self._roll_back_rejected(drafted, tokens, batch)
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

    def _roll_back_rejected(self, drafted: dict[int, int], tokens, batch) -> None:
        """A hybrid model's Mamba state absorbed every draft: where some were rejected, the state after the last
        kept position comes back from the step's checkpoints (engine/spec_checkpoints.py)."""
        for seq, toks in zip(batch.seqs, tokens):
            if seq.seq_id in drafted and toks is not None and not seq.is_finished:
                self.runner.checkpoints.restore(seq.state_slot, len(toks) - 1)

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
        compiled = self._compiled_state()
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
            "pool_budget": self.pools.source, "compiled_decode": compiled,
            "compiled_decode_ready": int(compiled.startswith("ready")),  # one-sequence steps run the compiled graph
            "compiled_decode_trial": self.runner.compiled.trial.summary()
            if self.runner.compiled is not None and self.runner.compiled.trial else {},
        }

    def _compiled_state(self) -> str:
        """off | off: <why not attempted> | compiling | ready | failed: <error> | eager: <measured slower> |
        ready; eager group steps: <...> (engine/compiled_decode.py)."""
        c = self.runner.compiled
        if c is None:
            return f"off: {self.runner.compiled_off}" if self.runner.compiled_off else "off"
        return c.state()
