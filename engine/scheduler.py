"""Continuous-batching scheduler with chunked prefill and reservation-based admission.

Each step: every running decode gets its token(s) first, then the remaining token budget
(``chunk_tokens``) goes to prompt chunks — running prefills first, then newly admitted requests — so a
long prefill is spread over many steps and never stalls other users' decoding. A request is admitted only
when the blocks for prompt + max_tokens and a Mamba slot can be reserved (evicting LRU snapshots if
needed), so nothing is ever preempted mid-decode. The waiting queue is bounded: ``add`` raises
``QueueFull`` instead of growing without limit.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from engine.block_manager import BlockManager
from engine.sequence import Sequence, SequenceStatus
from engine.snapshot import SnapshotStore
from engine.state_pool import StatePool


class QueueFull(RuntimeError):
    pass


class RequestTooLarge(ValueError):
    pass


@dataclass
class SchedulerConfig:
    max_num_seqs: int = 8
    chunk_tokens: int = 512  # token budget of one step (decodes + prefill chunks)
    max_waiting: int = 64
    max_model_len: int = 8192


@dataclass
class ScheduledBatch:
    seqs: list[Sequence] = field(default_factory=list)
    num_tokens: list[int] = field(default_factory=list)  # new tokens of each sequence this step
    kv_copies: list[tuple[int, int]] = field(default_factory=list)  # (src, dst) blocks to copy first

    def __len__(self) -> int:
        return len(self.seqs)

    @property
    def total_tokens(self) -> int:
        return sum(self.num_tokens)


class Scheduler:
    def __init__(self, config: SchedulerConfig, blocks: BlockManager, states: StatePool,
                 snapshots: Optional[SnapshotStore] = None):
        self.config, self.blocks, self.states = config, blocks, states
        self.snapshots = snapshots or SnapshotStore(blocks, states)
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self._pending_copies: list[tuple[int, int]] = []

    # -- requests ------------------------------------------------------------------------------
    def add(self, seq: Sequence) -> None:
        if len(self.waiting) >= self.config.max_waiting:
            raise QueueFull(f"request queue is full ({self.config.max_waiting} waiting); retry later")
        prefix = 0
        if seq.snapshot is not None:
            if seq.prompt_len == 0:
                raise ValueError("a request on a snapshot needs a non-empty continuation prompt")
            prefix = len(self.snapshots.get(seq.snapshot).token_ids)  # KeyError if absent
        total = prefix + seq.prompt_len + seq.params.max_tokens
        if total > self.config.max_model_len:
            raise RequestTooLarge(f"prompt ({prefix + seq.prompt_len} tokens) + max_tokens "
                                  f"({seq.params.max_tokens}) = {total} exceeds max_model_len "
                                  f"{self.config.max_model_len}")
        if self.blocks.blocks_for(total) > self.blocks.num_blocks:
            raise RequestTooLarge(f"request needs {self.blocks.blocks_for(total)} KV blocks; the cache "
                                  f"has {self.blocks.num_blocks} in all")
        if seq.snapshot is not None:
            self.snapshots.get(seq.snapshot).pins += 1
        self.waiting.append(seq)

    def abort(self, seq: Sequence) -> None:
        if seq.is_finished:
            return
        if seq.status == SequenceStatus.WAITING:
            self.waiting.remove(seq)
            self._unpin(seq)
        self.finish(seq, "cancelled")

    def finish(self, seq: Sequence, reason: str) -> None:
        if seq.is_finished:
            return
        if seq.status == SequenceStatus.RUNNING:
            self.running.remove(seq)
            self.blocks.free(seq.block_table)
            if seq.state_slot:
                self.states.free(seq.state_slot)
            seq.block_table, seq.state_slot = [], 0
        seq.status, seq.finish_reason = SequenceStatus.FINISHED, reason

    def release_to_snapshot(self, seq: Sequence, name: str) -> None:
        """A fully prefilled sequence becomes a snapshot: its blocks and slot change owner."""
        self.running.remove(seq)
        self.snapshots.put(name, seq.token_ids, seq.block_table, seq.state_slot)
        seq.block_table, seq.state_slot = [], 0
        seq.status, seq.finish_reason = SequenceStatus.FINISHED, "snapshot"

    def _unpin(self, seq: Sequence) -> None:
        if seq.snapshot is not None and seq.snapshot in self.snapshots:
            self.snapshots.snapshots[seq.snapshot].pins -= 1

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    # -- admission -----------------------------------------------------------------------------
    def _try_admit(self, seq: Sequence) -> bool:
        snap = self.snapshots.snapshots.get(seq.snapshot) if seq.snapshot is not None else None
        prefix = len(snap.token_ids) if snap else 0
        total = prefix + seq.prompt_len + seq.params.max_tokens
        n_full_shared = prefix // self.blocks.block_size
        need_blocks = self.blocks.blocks_for(total) - n_full_shared
        if not self.snapshots.evict_for(need_blocks, 1):
            return False
        if snap:
            snap.pins -= 1
            seq.block_table, copies = self.blocks.fork_table(snap.block_table, prefix, total)
            self._pending_copies.extend(copies)
            seq.state_slot = self.states.allocate()
            self.states.copy(snap.state_slot, seq.state_slot)
            seq.token_ids = snap.token_ids + seq.token_ids
            seq.prefix_len = seq.num_cached = prefix
            snap.last_used = time.monotonic()
        else:
            seq.block_table = self.blocks.allocate(need_blocks)
            seq.state_slot = self.states.allocate()
        seq.num_prompt_tokens = len(seq.token_ids)
        seq.status = SequenceStatus.RUNNING
        self.running.append(seq)
        return True

    # -- one step ------------------------------------------------------------------------------
    def schedule(self) -> ScheduledBatch:
        batch = ScheduledBatch()
        budget = self.config.chunk_tokens
        for seq in self.running:  # decodes first: they are never stalled by prefills
            if not seq.is_prefilling:
                n = seq.pending + len(seq.draft)
                batch.seqs.append(seq)
                batch.num_tokens.append(n)
                budget -= n
        for seq in self.running:
            if seq.is_prefilling and budget > 0:
                n = min(seq.pending, budget)
                batch.seqs.append(seq)
                batch.num_tokens.append(n)
                budget -= n
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            seq = self.waiting[0]
            if not self._try_admit(seq):
                break  # FIFO: the head waits for memory, later requests do not overtake it
            self.waiting.popleft()
            n = min(seq.pending, budget)
            batch.seqs.append(seq)
            batch.num_tokens.append(n)
            budget -= n
        batch.kv_copies, self._pending_copies = self._pending_copies, []
        return batch

    def postprocess(self, batch: ScheduledBatch, new_tokens: list[Optional[list[int]]],
                    eos_ids: set[int]) -> list[Sequence]:
        """Advance caches and append sampled tokens (None = a prompt chunk that samples nothing).

        Returns the sequences that finished this step.
        """
        finished = []
        for seq, n, toks in zip(batch.seqs, batch.num_tokens, new_tokens):
            if seq.is_finished:
                continue
            seq.draft = []
            if toks is None:
                seq.num_cached += n
                continue
            for t in toks:
                seq.token_ids.append(t)
                seq.num_cached = len(seq.token_ids) - 1  # every token but the newest is in the cache
                reason = self._finish_reason(seq, t, eos_ids)
                if reason:
                    self.finish(seq, reason)
                    finished.append(seq)
                    break
        return finished

    def _finish_reason(self, seq: Sequence, token: int, eos_ids: set[int]) -> Optional[str]:
        if not seq.params.ignore_eos and token in eos_ids:
            return "stop"
        if seq.num_output >= seq.params.max_tokens or len(seq) >= self.config.max_model_len:
            return "length"
        return None
