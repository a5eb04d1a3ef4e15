"""Our engine's logits equal transformers 5.24 NemotronHForCausalLM (torch_forward path) on tiny random
configs covering M, *, -, E, latent MoE, grouped routing, n_groups > 1 and a Puzzle-style heterogeneous stack.

All fp32. atol 1e-4 on logits of magnitude ~1-10: both sides compute the same math, differences are
summation order (einsum vs our einsum layout, attention kernels).
"""
import pytest
import torch

from engine.forward_context import DenseContext
from engine.loader import load_model
from nemotron_fixtures import build_reference, save_reference

pytestmark = pytest.mark.slow
ATOL = 1e-4


def our_logits(folder, ids, dt_clamp="torch_forward"):
    lm = load_model(folder, mamba_dt_clamp=dt_clamp)
    ctx = DenseContext.for_model(lm.model).next_step([len(ids)])
    with torch.inference_mode():
        return lm, lm.model.compute_logits(lm.model(ids, torch.arange(len(ids)), ctx))


def reference_logits(model, ids):
    with torch.inference_mode():
        return model(ids[None]).logits[0].float()


def assert_close(ours, theirs):
    assert theirs.abs().max() > 0.5, "reference logits degenerate; the test would not catch bugs"
    diff = (ours - theirs).abs().max().item()
    assert diff < ATOL, f"max |diff| {diff}"


CASES = {
    # pattern, overrides
    "all_kinds_latent_grouped": ("M*-EM-E*M", dict(moe_latent_size=20, n_group=2, topk_group=1)),
    "no_latent_ngroups3_unnormed": ("ME*M-E", dict(n_groups=3, mamba_num_heads=6, norm_topk_prob=False,
                                                   n_routed_experts=6, num_experts_per_tok=2)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_logits_match_transformers(tmp_path, case):
    pattern, overrides = CASES[case]
    ref = build_reference(pattern, seed=1, **overrides)
    folder = save_reference(ref, tmp_path / case)
    ids = torch.randint(0, 96, (37,), generator=torch.Generator().manual_seed(2))  # > 4 SSD chunks of 8
    lm, ours = our_logits(folder, ids)
    assert lm.config.pattern == pattern
    assert_close(ours, reference_logits(ref, ids))


def test_puzzle_heterogeneous_layers_match(tmp_path):
    """Per-layer MoE width / top-k / expert count / latent and per-layer Mamba state size."""
    per_layer = {0: {"ssm_state_size": 8}, 1: {"moe_intermediate_size": 16, "num_experts_per_tok": 2},
                 3: {"moe_intermediate_size": 32, "num_experts_per_tok": 4, "n_routed_experts": 12},
                 4: {"ssm_state_size": 20}, 5: {"moe_latent_size": 16, "num_experts_per_tok": 1}}
    ref = build_reference("ME*EME", seed=3, per_layer=per_layer)
    folder = save_reference(ref, tmp_path / "puzzle", per_layer)
    ids = torch.randint(0, 96, (29,), generator=torch.Generator().manual_seed(4))
    lm, ours = our_logits(folder, ids)
    c = lm.config
    assert c.arch == "nemotron_h_puzzle"
    assert [c.blocks[i].mamba.ssm_state_size for i in (0, 4)] == [8, 20]
    assert (c.blocks[3].moe.n_routed_experts, c.blocks[3].moe.num_experts_per_tok) == (12, 4)
    assert c.blocks[5].moe.latent_size == 16 and c.blocks[1].moe.latent_size is None
    assert_close(ours, reference_logits(ref, ids))


def test_dt_clamp_switch(tmp_path):
    """With dt_bias pushed far down, softplus(dt) < time_step_min: "torch_forward" matches transformers'
    torch path, "kernel" (no lower clamp, as the CUDA kernels) matches it once its clamp is lifted."""
    ref = build_reference("M*M", seed=5)
    with torch.no_grad():
        for layer in (ref.model.layers[0], ref.model.layers[2]):
            layer.mixer.dt_bias.fill_(-9.0)  # softplus(-9) ~ 1.2e-4 < 1e-3
    folder = save_reference(ref, tmp_path / "dt")
    ids = torch.randint(0, 96, (20,), generator=torch.Generator().manual_seed(6))
    _, torch_path = our_logits(folder, ids, "torch_forward")
    _, kernel_path = our_logits(folder, ids, "kernel")
    assert_close(torch_path, reference_logits(ref, ids))
    assert (torch_path - kernel_path).abs().max() > 1e-3  # the switch really changes the math here
    for layer in (ref.model.layers[0], ref.model.layers[2]):
        layer.mixer.time_step_limit = (0.0, float("inf"))
    assert_close(kernel_path, reference_logits(ref, ids))
