"""Scheduler, block manager, state pool and snapshots without a model: a driver plays the model."""
from __future__ import annotations

import random

import pytest
import torch

from engine.block_manager import BlockManager, OutOfBlocks
from engine.sampling import SamplingParams
from engine.scheduler import QueueFull, RequestTooLarge, Scheduler, SchedulerConfig
from engine.sequence import Sequence
from engine.snapshot import SnapshotStore
from engine.state_pool import StatePool

EOS = 0


def make(num_blocks=64, block_size=16, slots=8, **cfg) -> Scheduler:
    config = SchedulerConfig(**{"max_num_seqs": 8, "chunk_tokens": 64, "max_waiting": 16,
                                "max_model_len": 4096, **cfg})
    return Scheduler(config, BlockManager(num_blocks, block_size), StatePool(slots))


def fake_step(sched: Scheduler, rng: random.Random | None = None, token: int = 7):
    """Play the model: a sequence whose chunk reaches the end of its tokens samples one token."""
    batch = sched.schedule()
    new = []
    for seq, n in zip(batch.seqs, batch.num_tokens):
        assert seq.num_cached + n <= seq.max_len <= len(seq.block_table) * sched.blocks.block_size
        done = seq.num_cached + n == len(seq)
        new.append([rng.randrange(0, 50) if rng else token] if done else None)
    sched.postprocess(batch, new, {EOS})
    return batch


def test_new_request_joins_running_decodes():
    s = make()
    a = Sequence([1, 2, 3], SamplingParams(max_tokens=10, ignore_eos=True))
    s.add(a)
    fake_step(s)
    assert a.num_output == 1
    b = Sequence([4] * 20, SamplingParams(max_tokens=5))
    s.add(b)
    batch = fake_step(s)
    assert batch.seqs == [a, b] and batch.num_tokens == [1, 20]
    assert a.num_output == 2 and b.num_output == 1


def test_long_prefill_is_chunked_and_never_stalls_decodes():
    s = make(num_blocks=512, chunk_tokens=64)
    decoders = [Sequence([1, 2], SamplingParams(max_tokens=100, ignore_eos=True)) for _ in range(3)]
    for d in decoders:
        s.add(d)
    fake_step(s)
    long = Sequence(list(range(1, 1001)), SamplingParams(max_tokens=4))
    s.add(long)
    steps = 0
    while long.is_prefilling:
        before = [d.num_output for d in decoders]
        batch = fake_step(s)
        steps += 1
        assert batch.total_tokens <= 64
        assert [d.num_output for d in decoders] == [x + 1 for x in before]  # every decode advanced
    assert steps == -(-1000 // (64 - 3))


def test_admission_reserves_prompt_plus_max_tokens_and_never_preempts():
    s = make(num_blocks=4, block_size=16)  # 64 token slots
    a = Sequence([1] * 10, SamplingParams(max_tokens=40, ignore_eos=True))  # 50 -> 4 blocks
    b = Sequence([1] * 10, SamplingParams(max_tokens=10, ignore_eos=True))
    s.add(a)
    s.add(b)
    fake_step(s)
    assert a in s.running and b in s.waiting and s.blocks.num_free == 0
    while not a.is_finished:
        fake_step(s)
        assert a.is_finished or a in s.running
    assert a.finish_reason == "length" and a.num_output == 40
    fake_step(s)
    assert b in s.running


def test_bounded_queue_and_oversized_requests_refused():
    s = make(max_waiting=2, max_model_len=100, num_blocks=4, block_size=16)
    s.add(Sequence([1], SamplingParams(max_tokens=5)))
    s.add(Sequence([1], SamplingParams(max_tokens=5)))
    with pytest.raises(QueueFull, match="queue is full"):
        s.add(Sequence([1], SamplingParams(max_tokens=5)))
    with pytest.raises(RequestTooLarge, match="max_model_len"):
        make(max_model_len=100).add(Sequence([1] * 90, SamplingParams(max_tokens=20)))
    with pytest.raises(RequestTooLarge, match="KV blocks"):
        make(num_blocks=2, block_size=16).add(Sequence([1] * 30, SamplingParams(max_tokens=20)))


def test_eos_stops_and_frees():
    s = make()
    a = Sequence([1, 2], SamplingParams(max_tokens=10))
    s.add(a)
    fake_step(s, token=EOS)
    assert a.finish_reason == "stop" and s.blocks.num_used == 0 and s.states.num_used == 0


def test_block_refcounts_and_copy_on_write_fork():
    bm = BlockManager(8, 4)
    shared = bm.allocate(3)  # 10 tokens: 2 full blocks + a partial one
    table, copies = bm.fork_table(shared, 10, 14)
    assert table[:2] == shared[:2] and table[2] not in shared and copies == [(shared[2], table[2])]
    assert [bm.ref_counts[b] for b in shared] == [2, 2, 1]
    bm.free(table)
    bm.free(shared)
    assert bm.num_free == 8
    with pytest.raises(ValueError, match="double free"):
        bm.free([shared[0]])
    with pytest.raises(OutOfBlocks):
        bm.allocate(9)


def test_state_pool_null_slot_zeroed_on_allocation_and_copy():
    pool = StatePool(2, [((3, 2), (2, 2, 4))])
    a = pool.allocate()
    assert a != 0
    pool.conv[0][a].fill_(5.0)
    pool.ssm[0][a].fill_(3.0)
    b = pool.allocate()
    pool.copy(a, b)
    assert torch.equal(pool.ssm[0][b], pool.ssm[0][a]) and pool.ssm[0].dtype == torch.float32
    pool.free(a)
    a2 = pool.allocate()
    assert a2 == a and pool.conv[0][a2].abs().sum() == 0 and pool.ssm[0][a2].abs().sum() == 0
    assert pool.conv[0][0].abs().sum() == 0  # the null slot is never handed out
    with pytest.raises(ValueError):
        pool.free(0)


def _snapshot(s: Scheduler, name: str, n_tokens: int):
    seq = Sequence(list(range(1, n_tokens + 1)), SamplingParams(max_tokens=1))
    s.add(seq)
    while seq.is_prefilling:
        batch = s.schedule()
        s.postprocess(batch, [None] * len(batch), {EOS})
    s.release_to_snapshot(seq, name)


def test_snapshot_fork_shares_blocks_and_lru_eviction():
    s = make(num_blocks=10, block_size=16, slots=3)
    _snapshot(s, "dossier", 40)  # 3 blocks, the last partial
    snap = s.snapshots.get("dossier")
    assert len(snap.block_table) == 3 and s.blocks.num_used == 3 and s.states.num_used == 1
    q = Sequence([99, 98], SamplingParams(max_tokens=4, ignore_eos=True), snapshot="dossier")
    s.add(q)
    batch = s.schedule()
    assert batch.num_tokens == [2] and q.prefix_len == 40 and q.token_ids[:40] == snap.token_ids
    assert q.block_table[:2] == snap.block_table[:2] and batch.kv_copies == [(snap.block_table[2], q.block_table[2])]
    s.postprocess(batch, [[5]], {EOS})
    while not q.is_finished:
        fake_step(s)
    assert s.blocks.num_used == 3  # only the snapshot's blocks remain
    _snapshot(s, "other", 40)
    s.snapshots.get("other")  # "dossier" is now least recently used
    big = Sequence([1] * 60, SamplingParams(max_tokens=20))  # 5 blocks: 4 free, must evict one snapshot
    s.add(big)
    fake_step(s)
    assert "dossier" not in s.snapshots and "other" in s.snapshots and big in s.running
    with pytest.raises(KeyError, match="evicted"):
        s.add(Sequence([1], snapshot="dossier"))


def test_no_leaks_after_1000_random_requests_with_cancellations():
    rng = random.Random(0)
    s = make(num_blocks=96, block_size=8, slots=6, max_num_seqs=6, chunk_tokens=48, max_waiting=20)
    _snapshot(s, "doc", 30)
    live, submitted, refused = [], 0, 0
    while submitted < 1000 or s.has_work:
        for _ in range(rng.randrange(0, 4)):
            if submitted >= 1000:
                break
            snap = "doc" if "doc" in s.snapshots and rng.random() < 0.2 else None
            seq = Sequence([rng.randrange(1, 50) for _ in range(rng.randrange(1, 60))],
                           SamplingParams(max_tokens=rng.randrange(1, 30)), snapshot=snap)
            try:
                s.add(seq)
                live.append(seq)
            except QueueFull:
                refused += 1
            submitted += 1
        if live and rng.random() < 0.3:
            s.abort(live.pop(rng.randrange(len(live))))
        fake_step(s, rng)
        live = [q for q in live if not q.is_finished]
        assert s.blocks.num_used <= s.blocks.num_blocks
    assert sorted(s.blocks.free_ids) == sorted(set(s.blocks.free_ids))
    s.snapshots.drop("doc")  # may already be evicted under memory pressure
    assert s.blocks.num_used == 0 and s.states.num_used == 0 and refused < 1000
