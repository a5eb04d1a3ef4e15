"""Capacity planner on the shipped presets: the 1M-token / 80 GB H100 numbers the product promises."""
from __future__ import annotations

import pytest

from engine.planner import GIB, MIB, plan, plan_command, size_pools
from engine.presets import get_preset

H100 = dict(weights="nvfp4", kv_dtype="fp8", gpu_gib=80.0, context=1_000_000, memory_fraction=0.95)


def test_super_nvfp4_fits_one_1m_context_on_an_h100():
    p = plan(get_preset("super"), **H100)
    assert p.kv_bytes_per_token == 4096  # 8 attention layers x K,V x 2 kv heads x 128 x 1 B
    assert p.mamba_bytes_per_seq / MIB == pytest.approx(162.3, abs=0.1)
    assert p.params.total / 1e9 == pytest.approx(120.67, abs=0.01)
    assert p.max_contexts == 1


def test_puzzle_nvfp4_fits_eight_1m_contexts_on_an_h100():
    p = plan(get_preset("puzzle"), **H100)
    assert p.kv_bytes_per_token == 4096
    assert p.mamba_bytes_per_seq / MIB == pytest.approx(122.2, abs=0.1)
    assert p.params.total / 1e9 == pytest.approx(75.35, abs=0.01)
    assert p.max_contexts == 8
    # activations depend on the chunk, not on the context length
    assert plan(get_preset("puzzle"), **{**H100, "context": 10_000}).activation_bytes == p.activation_bytes


def test_formats_and_kv_dtype_change_the_breakdown():
    bf16 = plan(get_preset("puzzle"), "bf16", "bf16", 80.0, 1_000_000, 0.95)
    assert bf16.weights_bytes > 80 * GIB and bf16.max_contexts == 0  # 75B in bf16 does not fit at all
    assert bf16.kv_bytes_per_token == 8192
    with pytest.raises(ValueError, match="unknown format"):
        plan(get_preset("puzzle"), "int3")


def test_plan_command_prints_breakdown_and_assumptions(capsys):
    assert plan_command("puzzle", "nvfp4", "fp8", 80.0, 1_000_000, 0.95) == 0
    out = capsys.readouterr().out
    for needle in ("concurrent contexts: 8", "memory fraction 0.95", "0.5625 B/param", "4096 B/token",
                   "122.2 MiB", "activations (chunk 8192)"):
        assert needle in out
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
