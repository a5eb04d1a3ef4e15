"""Capacity planner on the shipped presets at the engine's CUDA defaults: the 1M-token H100 numbers the product
promises (79.1 GiB: what an H100 reports)."""
from __future__ import annotations

import pytest

from engine.planner import GIB, MIB, plan, plan_command, size_pools
from engine.presets import get_preset

H100 = dict(weights="nvfp4", kv_dtype="fp8", gpu_gib=79.1, context=1_000_000)  # what an H100 reports; CUDA defaults


def test_super_nvfp4_fits_two_1m_contexts_on_an_h100():
    p = plan(get_preset("super"), **H100)
    assert p.kv_bytes_per_token == 4096  # 8 attention layers x K,V x 2 kv heads x 128 x 1 B
    assert p.mamba_bytes_per_seq / MIB == pytest.approx(162.3, abs=0.1)
    assert p.params.total / 1e9 == pytest.approx(120.67, abs=0.01)
    assert p.max_contexts == 2


def test_puzzle_nvfp4_fits_eight_1m_contexts_on_an_h100():
    p = plan(get_preset("puzzle"), **H100)
    assert p.kv_bytes_per_token == 4096
    assert p.mamba_bytes_per_seq / MIB == pytest.approx(122.2, abs=0.1)
    assert p.params.total / 1e9 == pytest.approx(75.35, abs=0.01)
    assert p.params.fp32 == 40 * 512 * (4096 + 1)  # the router + correction bias of 40 MoE layers, fp32 as loaded
    assert p.max_contexts >= 8 and p.budget.engine_contexts == 8
    # speculation is off by default on CUDA (its verify steps are not graph-captured): no checkpoints counted;
    # turned on, its checkpoints for 2 sequences still leave room for eight
    assert p.budget.shape.spec_seqs == 0
    spec = plan(get_preset("puzzle"), **H100, speculative=True)
    assert spec.budget.shape.spec_seqs == 2 and spec.max_contexts == 8 and spec.budget.engine_contexts == 8
    # activations depend on the chunk, not on the context length
    assert plan(get_preset("puzzle"), **{**H100, "context": 10_000}).activation_bytes == p.activation_bytes


def test_formats_and_kv_dtype_change_the_breakdown():
    bf16 = plan(get_preset("puzzle"), "bf16", "bf16", 80.0, 1_000_000)
    assert bf16.weights_bytes > 80 * GIB and bf16.max_contexts == 0  # 75B in bf16 does not fit at all
    assert bf16.kv_bytes_per_token == 8192
    with pytest.raises(ValueError, match="unknown format"):
        plan(get_preset("puzzle"), "int3")


def test_plan_command_prints_breakdown_and_assumptions(capsys):
    assert plan_command("puzzle", "nvfp4", "fp8", 79.1, 1_000_000) == 0
    out = capsys.readouterr().out
    for needle in ("concurrent contexts: 8", "memory fraction 1", "0.5625 B/param", "4096 B/token",
                   "122.2 MiB", "activations (chunk 2048)",
                   "Mamba states (11 slots)", "runtime reserve", "CUDA graph pool",
                   "the engine (max_num_seqs 8) holds 8 contexts of 1,000,000 tokens"):
        assert needle in out, needle
    assert plan_command("no-such-model", "nvfp4", "fp8", 80.0, 1000, 0.9) == 2
    assert "unknown preset" in capsys.readouterr().out


def test_pool_sizing_for_a_small_engine_and_a_clear_error_when_too_small():
    cfg = get_preset("smollm2")
    pools = size_pools(cfg, memory_bytes=2 * GIB, weights_bytes=540 * MIB, kv_dtype="bf16",
                       max_model_len=2048, max_num_seqs=4, chunk_tokens=256)
    assert pools.num_kv_blocks == (2048 // 16) * 8 and pools.state_bytes == 0  # capped: no Mamba layers
    with pytest.raises(ValueError, match="cannot hold one"):
        size_pools(cfg, memory_bytes=600 * MIB, weights_bytes=540 * MIB, kv_dtype="bf16",
                   max_model_len=8192, max_num_seqs=4, chunk_tokens=256)


def test_cpu_pools_hold_what_the_model_needs_not_the_cap():
    """#15 item 7: a 135M model's engine reserves max_num_seqs x max_model_len of KV, not a 4 GiB budget."""
    cfg = get_preset("smollm2")
    per_token = 30 * 2 * 3 * 64 * 2  # layers x K,V x kv heads x head_dim x bf16
    for cap in (None, 4 * GIB):
        pools = size_pools(cfg, memory_bytes=cap, weights_bytes=540 * MIB, kv_dtype="bf16", max_model_len=4096,
                           max_num_seqs=2, chunk_tokens=256, n_snapshot_slots=1)
        assert pools.source == "model need"
        assert pools.kv_bytes == (3 * 4096 + 16) * per_token  # (2 sequences + 1 snapshot) x 4096 + scratch block
        assert pools.budget.total_bytes < 2 * GIB


@pytest.mark.parametrize("gib,context", [(80.0, 1_000_000), (79.1, 1_000_000), (80.0, 2 ** 20), (76.0, 500_000)])
def test_planner_and_engine_shape_and_pools_agree(gib, context):
    """One sizing function: the plan at the CUDA defaults uses the engine's own shape (EngineConfig() resolved
    for a CUDA device), and an engine of max_num_seqs = the planned count holds exactly that many full contexts,
    one more does not."""
    from engine.llm_engine import EngineConfig
    from engine.memory_budget import engine_shape, memory_budget, resolve_engine_config

    cfg = get_preset("puzzle")
    p = plan(cfg, "nvfp4", "fp8", gib, context)
    n = p.max_contexts
    assert n >= 1
    ec = resolve_engine_config(EngineConfig(max_model_len=context, max_num_seqs=8, kv_dtype="fp8"), "cuda")
    assert engine_shape(ec, "cuda", 2) == p.budget.shape
    for seqs, holds in ((n, n), (n + 1, n)):
        shape = engine_shape(resolve_engine_config(
            EngineConfig(max_model_len=context, max_num_seqs=seqs, kv_dtype="fp8"), "cuda"), "cuda", 2)
        b = memory_budget(cfg, p.weights_bytes, shape, p.budget.total_bytes, "test", p.overhead_bytes, strict=False)
        assert b.engine_contexts == holds and b.used_bytes <= b.total_bytes


def test_plan_reports_which_contexts_fit_for_1e6_and_2_20_tokens_at_79_1_and_80_gib(capsys):
    p = plan(get_preset("puzzle"), **H100)
    table = {(c, g): n for c, g, n, _ in p.fit_table()}
    # speculation off (the CUDA default) leaves room for a ninth 1M context; with its checkpoints, eight
    assert table[(1_000_000, 79.1)] == 9 and table[(1_000_000, 80.0)] == 9
    assert table[(2 ** 20, 79.1)] == 8 and table[(2 ** 20, 80.0)] == 8
    spec = {(c, g): n for c, g, n, _ in plan(get_preset("puzzle"), **H100, speculative=True).fit_table()}
    assert spec[(1_000_000, 79.1)] == 8 and spec[(1_000_000, 80.0)] == 9
    assert p.kv_scale_bytes_per_token == 2.0  # fp8 block scales: 8 layers x K,V x 2 heads x 1 B / 16 tokens
    plan_command("puzzle", "nvfp4", "fp8", 79.1, 1_000_000)
    out = capsys.readouterr().out
    assert "1,048,576 tokens on 80 GiB: 8 contexts" in out and "1,000,000 tokens on 79.1 GiB: 9 contexts" in out


def test_engine_counts_compressed_expert_weights():
    """NVFP4 routed experts are weights too: the pools are sized after them (they were left out)."""
    from hybrid_fixtures import random_hybrid, tiny_hybrid_config

    from engine.llm_engine import _weights_bytes
    from engine.quant.nvfp4 import quantize_nvfp4

    loaded = random_hybrid(tiny_hybrid_config())
    dense = _weights_bytes(loaded.model)
    experts = next(m for m in loaded.model.modules() if type(m).__name__ == "Experts")
    experts.compressed_up = [quantize_nvfp4(w) for w in experts.up.detach()]
    experts.compressed_down = [quantize_nvfp4(w) for w in experts.down.detach()]
    expert_bytes = sum(p.nbytes for p in experts.compressed_up + experts.compressed_down)
    assert expert_bytes > 0 and _weights_bytes(loaded.model) == dense + expert_bytes
