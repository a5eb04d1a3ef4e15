"""One memory budget (engine/memory_budget.py): what the planner prints is what the engine allocates.

At scaled-down sizes on a CPU: a tiny Nemotron-H checkpoint written by transformers and read by the real loader
(bf16, its MoE router kept fp32), an engine given a budget smaller than its need (as a device would), and the sum
of the tensors the engine really allocates (KV pool, Mamba states, speculative checkpoints, static decode tables)
against the plan of the same settings."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from hybrid_fixtures import random_hybrid, tiny_hybrid_config

from engine.llm_engine import EngineConfig, LLMEngine, _weights_bytes
from engine.memory_budget import CUDA_DEFAULTS, GIB, EngineShape, memory_budget
from engine.planner import count_weights, plan
from engine.sampling import SamplingParams

CONTEXT, SEQS, SNAPSHOTS, SPEC_SEQS, CHUNK = 4096, 4, 2, 2, 64


@pytest.fixture(scope="module")
def loaded_bf16(tmp_path_factory):
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).parents[1] / "core"))  # the checkpoint writer of the loader's tests
    from nemotron_fixtures import build_reference, save_reference

    from engine.loader import load_model
    ref = build_reference("M*EM*E", seed=3)
    return load_model(save_reference(ref, tmp_path_factory.mktemp("tiny") / "ckpt"), dtype=torch.bfloat16)


def real_allocations(engine: LLMEngine) -> dict[str, int]:
    """Bytes of the tensors the engine allocated at start, read from the tensors themselves."""
    nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)  # noqa: E731
    r = engine.runner
    out = {"kv": r.kv.nbytes, "states": nbytes(r.states.conv + r.states.ssm),
           "checkpoints": r.checkpoints.nbytes if r.checkpoints is not None else 0, "tables": 0}
    if r.graphs is not None:
        c = r.graphs.ctx
        out["tables"] = nbytes([c.meta, c.lens32, c.slot_tables, c.tables_buf])
    return out


def test_the_loader_keeps_the_router_fp32_and_the_planner_counts_it(loaded_bf16):
    model = loaded_bf16.model
    router = [p for n, p in model.named_parameters() if n.endswith(("router_weight", "e_score_correction_bias"))]
    assert router and all(p.dtype == torch.float32 for p in router)
    counts = count_weights(loaded_bf16.config)
    assert counts.fp32 == sum(p.numel() for p in router)
    assert counts.bytes("bf16") == pytest.approx(_weights_bytes(model), rel=0.01)
    as_bf16 = counts.bytes("bf16") - 2 * counts.fp32  # what counting the router as bf16 gave: not the real bytes
    assert abs(as_bf16 - _weights_bytes(model)) > abs(counts.bytes("bf16") - _weights_bytes(model))


@pytest.mark.parametrize("kv_dtype", ["fp8", "bfloat16"])
def test_engine_allocations_equal_the_plan_within_1_percent(loaded_bf16, kv_dtype):
    cfg = loaded_bf16.config
    # a budget that holds ~2.6 contexts, fewer than the 4 + 2 the engine could use: the KV pool is sized by it
    kw = dict(max_num_seqs=SEQS, chunk_tokens=CHUNK, snapshot_slots=SNAPSHOTS, spec_seqs=SPEC_SEQS,
              spec_tokens=4, device="cpu", decode_graphs=True, memory_fraction=1.0)
    probe = plan(cfg, "bf16", kv_dtype, 1.0, CONTEXT, **kw).budget
    gib = (probe.fixed_bytes + 2.6 * probe.per_context_bytes) / GIB
    p = plan(cfg, "bf16", kv_dtype, gib, CONTEXT, **kw)
    engine = LLMEngine(loaded_bf16, EngineConfig(
        max_model_len=CONTEXT, max_num_seqs=SEQS, memory_gib=gib, kv_dtype=kv_dtype, chunk_tokens=CHUNK,
        n_snapshot_slots=SNAPSHOTS, spec_seqs=SPEC_SEQS, num_spec_tokens=4, decode_graphs="static"))
    b = engine.budget
    assert b.source == "memory_gib cap" and p.budget.num_kv_blocks < (SEQS + SNAPSHOTS) * p.budget.blocks_per_seq
    real = real_allocations(engine)
    assert real["checkpoints"] > 0 and real["tables"] > 0 and real["states"] > 0
    assert sum(real.values()) == b.allocated_bytes  # the engine's budget is its tensors, byte for byte
    assert sum(real.values()) == pytest.approx(p.budget.allocated_bytes, rel=0.01)  # and the plan's (counted weights)
    for name, planned in (("kv", p.budget.kv_pool_bytes), ("states", p.budget.state_pool_bytes),
                          ("checkpoints", p.budget.checkpoint_bytes), ("tables", p.budget.table_bytes)):
        assert real[name] == pytest.approx(planned, rel=0.01), name
    assert p.max_contexts == 2 and b.engine_contexts == 2 and p.budget.engine_contexts == 2
    assert engine.scheduler.blocks.num_blocks == b.num_kv_blocks
    assert engine.runner.checkpoints.max_rows == SPEC_SEQS  # rows for the sequences that speculate, not all 4


def test_only_spec_seqs_sequences_speculate_and_outputs_stay_greedy():
    loaded = random_hybrid(tiny_hybrid_config())
    prompts = [[5, 6, 7, 8, 9] * 5 + [5, 6], [11, 12, 13] * 6, [7, 8, 9, 7, 8, 9, 7, 8], [3, 4, 5] * 5]
    params = SamplingParams(max_tokens=16, ignore_eos=True)

    def run(speculative: bool, spec_seqs=None):
        e = LLMEngine(loaded, EngineConfig(max_model_len=96, max_num_seqs=4, kv_dtype="float32", chunk_tokens=48,
                                           block_size=8, speculative=speculative, spec_seqs=spec_seqs))
        seqs = [e.add_request(p, params) for p in prompts]
        most = 0  # verify spans of one step (a step with more than the checkpoint rows would raise)
        while e.has_work:
            e.step()
            if e.runner.checkpoints is not None:
                most = max(most, len(e.runner.checkpoints.rows))
        return e, [s.output_ids for s in seqs], most

    _, want, _ = run(False)
    every, got_every, most_every = run(True)  # CPU default: every running sequence may speculate
    one, got_one, most_one = run(True, spec_seqs=1)
    assert got_one == want and got_every == want
    assert every.runner.checkpoints.max_rows == 4 and most_every > 1
    assert one.runner.checkpoints.max_rows == 1 and most_one == 1 and one.spec.verify_steps > 0


def test_cuda_defaults_hold_eight_1m_contexts_of_puzzle_nvfp4_fp8_on_79_1_gib():
    from engine.presets import get_preset
    assert plan(get_preset("puzzle"), "nvfp4", "fp8", 79.1, 1_000_000).budget.shape.spec_seqs == 0  # off on CUDA
    # the CUDA defaults with speculation turned on (its checkpoints counted): still eight
    p = plan(get_preset("puzzle"), "nvfp4", "fp8", 79.1, 1_000_000, speculative=True)
    b = p.budget
    assert (b.shape.chunk_tokens, b.shape.n_snapshot_slots, b.shape.spec_seqs) == (
        CUDA_DEFAULTS.chunk_tokens, CUDA_DEFAULTS.n_snapshot_slots, CUDA_DEFAULTS.spec_seqs)
    assert p.max_contexts == 8 and b.engine_contexts == 8 and b.used_bytes <= b.total_bytes
    assert b.reserve_bytes == CUDA_DEFAULTS.reserve_bytes and b.graph_pool_bytes > 0 and b.checkpoint_bytes > 0
    # the same engine with the old settings (fraction 0.9, chunk 8192, 4 snapshot slots, checkpoints for all 8)
    old = plan(get_preset("puzzle"), "nvfp4", "fp8", 79.1, 1_000_000, memory_fraction=0.9, chunk_tokens=8192,
               snapshot_slots=4, spec_seqs=8, speculative=True)
    assert old.max_contexts < 8


def test_budget_refuses_less_than_one_sequence_with_a_clear_error():
    cfg = tiny_hybrid_config()
    shape = EngineShape(max_model_len=4096, max_num_seqs=2, kv_dtype="fp8")
    need = memory_budget(cfg, 10_000, shape).total_bytes
    with pytest.raises(ValueError, match="cannot hold one 4096-token sequence"):
        memory_budget(cfg, 10_000, shape, total_bytes=need // 10, source="test")


def test_serve_on_cuda_sizes_from_the_device_not_a_4_gib_setting(tmp_path):
    """engine_memory_gib "auto" (the default): no cap on a CUDA device (the engine reads mem_get_info), the CPU
    cap elsewhere; a number set by the operator caps both."""
    from app.settings import CPU_MEMORY_GIB, Settings
    assert Settings(data_dir=tmp_path, engine_device="cuda").engine_memory_cap_gib is None
    assert Settings(data_dir=tmp_path, engine_device="cuda:1").engine_memory_cap_gib is None
    assert Settings(data_dir=tmp_path, engine_device="cpu").engine_memory_cap_gib == CPU_MEMORY_GIB
    assert Settings(data_dir=tmp_path, engine_device="cuda", engine_memory_gib=20).engine_memory_cap_gib == 20.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (mem_get_info)")
def test_cuda_budget_reads_the_device_and_keeps_what_lives_outside_torch():
    from engine.memory_budget import ALLOCATOR_SLACK_BYTES, cuda_budget
    free, total = torch.cuda.mem_get_info()
    budget, reserve, source = cuda_budget(torch.device("cuda"), 1.0, 0)
    assert budget == total and "cuda mem_get_info" in source
    outside = total - free - torch.cuda.memory_reserved()
    assert reserve >= ALLOCATOR_SLACK_BYTES and abs(reserve - (max(0, outside) + ALLOCATOR_SLACK_BYTES)) < 64 * 2 ** 20
    assert cuda_budget(torch.device("cuda"), 0.5, 8 * GIB)[:2] == (int(total * 0.5), max(8 * GIB, reserve))
