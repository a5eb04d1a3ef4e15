"""engine.quant.policy decides which tensors are stored in the weight format: the same element counts as the
planner's count on the real presets, the router counted in fp32 as the loader keeps it, and nothing quantized
whose input dim does not split into NVFP4 blocks."""
from __future__ import annotations

import pytest

from engine.planner import count_weights
from engine.presets import get_preset
from engine.quant.policy import is_quantized, quantized_nbytes, weight_bytes, weight_plan


@pytest.mark.parametrize("preset", ["puzzle", "super"])
def test_policy_counts_the_planner_s_quantized_and_dense_elements(preset):
    config = get_preset(preset)
    w, c = weight_bytes(config, "nvfp4"), count_weights(config)
    assert w.quantized_params == c.quantized and w.quantized_params + w.dense_params == c.total
    moe = [b.moe for b in config.blocks if b.kind == "moe"]
    assert w.fp32 == sum(4 * e.n_routed_experts * (config.hidden_size + 1) for e in moe)
    assert weight_bytes(config, "bf16").quantized == 0


def test_puzzle_nvfp4_bytes():
    w = weight_bytes(get_preset("puzzle"), "nvfp4")
    # 74.19 B quantized elements at 0.5625 B (+ 4 B per matrix): 38.87 GiB; dense 2.32 GiB (router fp32)
    assert round(w.quantized / 2 ** 30, 2) == 38.87 and round(w.dense / 2 ** 30, 2) == 2.32


def test_rules():
    assert is_quantized("blocks.3.mixer.experts.up", (512, 1280, 1024), "nvfp4")
    assert is_quantized("blocks.0.mixer.in_proj.weight", (18048, 4096), "nvfp4")
    assert not is_quantized("blocks.0.mixer.in_proj.weight", (18048, 4100), "nvfp4")  # 4100 % 16
    assert is_quantized("blocks.0.mixer.in_proj.weight", (18048, 4100), "fp8")
    for name in ("embed.weight", "lm_head.weight", "blocks.1.mixer.router_weight", "blocks.0.mixer.conv_weight",
                 "blocks.0.norm.weight", "blocks.0.mixer.A_log"):
        assert not is_quantized(name, (64, 64), "nvfp4"), name
    assert quantized_nbytes((2, 32, 64), "nvfp4") == 2 * (32 * 32 + 32 * 4 + 4)
    with pytest.raises(ValueError, match="weight format"):
        is_quantized("x.weight", (16, 16), "int3")
    plan = weight_plan(get_preset("puzzle"), "nvfp4")
    qkv = next(t for t in plan if t.name.endswith("qkv_proj.weight"))
    assert qkv.nbytes == quantized_nbytes(qkv.shape, "nvfp4", parts=3)  # q, k, v: a global scale each
