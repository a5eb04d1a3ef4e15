"""Helpers of bench/gpu_check.py: a model at real dimensions with random NVFP4 weights made on the device, the
bytes one decode step must read (the bandwidth ideal), the device's copy bandwidth, timing, the toy config."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import torch

from engine.config import AttentionSpec, BlockSpec, MambaSpec, ModelConfig, MoeSpec

ROOT = Path(__file__).resolve().parent.parent
GIB = 1024 ** 3


def log(*a) -> None:
    print(*a, flush=True)


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, repeat: int = 3) -> tuple[float, object]:
    out = fn()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    sync(device)
    return (time.perf_counter() - t0) / repeat, out



def random_nvfp4(shape: tuple[int, ...], device, g):
    """Packed e2m1 bytes (no NaN pattern exists in e2m1), unit e4m3 block scales, a global scale that keeps
    outputs near unit scale: rms(e2m1) ~ 2.9."""
    from engine.quant.nvfp4 import BLOCK, Nvfp4Tensor

    *lead, out, inp = shape
    packed = torch.randint(0, 256, (*lead, out, inp // 2), dtype=torch.uint8, device=device, generator=g)
    scale = torch.ones(*lead, out, inp // BLOCK, device=device).to(torch.float8_e4m3fn)
    glob = torch.full((*lead, 1, 1) if lead else (), 1.0 / (2.9 * math.sqrt(inp)), device=device)
    return Nvfp4Tensor(packed, scale, glob)


def build_model(config: ModelConfig, device, dtype, seed: int = 0):
    from torch import nn

    from engine.layers.linear import Linear
    from engine.layers.moe import Experts
    from engine.models.hybrid import HybridLM

    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device("meta"):
        model = HybridLM(config)
    for name, module in model.named_modules():
        if isinstance(module, Linear) and name != "lm_head":
            module.set_weight([random_nvfp4((module.out_features, module.in_features), device, g)], dtype, device)
        elif isinstance(module, Experts):
            E, inter, dim = module.up.shape
            for attr, shape in (("up", (E, inter, dim)), ("down", (E, dim, inter))):
                stacked = random_nvfp4(shape, device, g)
                setattr(module, f"compressed_{attr}", [stacked[e] for e in range(E)])
                setattr(module, attr, nn.Parameter(torch.empty(E, 0, 0, dtype=dtype, device=device),
                                                   requires_grad=False))
    H = config.hidden_size
    for name, p in list(model.named_parameters()):
        if not p.is_meta:
            continue
        mod_name, attr = name.rsplit(".", 1)
        module = model.get_submodule(mod_name)
        if attr == "A_log":
            t = torch.log(torch.linspace(1, 16, p.numel(), device=device))
        elif attr == "dt_bias":
            t = torch.full(p.shape, math.log(math.expm1(0.01)), device=device)
        elif attr == "D" or "norm" in name:
            t = torch.ones(p.shape, device=device)
        elif p.dim() >= 2:
            t = torch.randn(p.shape, device=device, generator=g) / math.sqrt(p.shape[-1])
        else:
            t = torch.zeros(p.shape, device=device)
        fp32 = attr in ("router_weight", "e_score_correction_bias", "A_log", "dt_bias", "D")
        setattr(module, attr, nn.Parameter(t.to(torch.float32 if fp32 else dtype), requires_grad=False))
    if model.lm_head is not None:
        model.lm_head.set_weight([torch.randn(config.vocab_size, H, device=device, generator=g) / math.sqrt(H)],
                                 dtype, device)
    model.share_rotaries(device)
    return model.eval()


def check_against_reference(config: ModelConfig) -> None:
    ref = ROOT.parent / "shared" / "reference" / "puzzle-75b-a9b-block-configs.json"
    if not ref.exists():
        log(f"(no {ref}: the preset's per-layer values are used unchecked)")
        return
    blocks = json.loads(ref.read_text())
    same = len(blocks) == len(config.blocks) and all(
        b["block_type"] == s.kind and (s.kind != "moe" or (b["moe_intermediate_size"], b["num_experts_per_tok"])
                                       == (s.moe.moe_intermediate_size, s.moe.num_experts_per_tok))
        for b, s in zip(blocks, config.blocks))
    log(f"preset vs {ref.name}: {len(blocks)} layers, per-layer kinds/widths/top-k {'equal' if same else 'DIFFER'}")


def step_bytes(config: ModelConfig, n_seqs: int, context: int, kv_per_token: float, mamba_bytes: int) -> dict:
    """Bytes one decode step must move at least: active weights (expected distinct experts for n_seqs random
    tokens), the whole KV of every sequence, Mamba state read + written, the LM head."""
    from engine.planner import WEIGHT_BYTES
    q = WEIGHT_BYTES["nvfp4"]
    H, w = config.hidden_size, 0.0
    for b in config.blocks:
        if b.kind == "mamba":
            m = b.mamba
            w += (H * (m.d_inner + m.conv_dim + m.num_heads) + m.d_inner * H) * q
        elif b.kind == "attention":
            a = b.attention
            w += (H * (a.num_heads + 2 * a.num_kv_heads) * a.head_dim + a.num_heads * a.head_dim * H) * q
        elif b.kind == "moe":
            e = b.moe
            d = e.latent_size or H
            experts = e.n_routed_experts * (1 - (1 - e.num_experts_per_tok / e.n_routed_experts) ** n_seqs)
            w += (experts * 2 * d * e.moe_intermediate_size + 2 * H * e.shared_intermediate_size
                  + (2 * H * e.latent_size if e.latent_size else 0)) * q + e.n_routed_experts * H * 4
    w += config.vocab_size * H * 2
    kv = n_seqs * context * kv_per_token
    state = 2 * n_seqs * mamba_bytes
    return {"weights": w, "kv": kv, "state": state, "total": w + kv + state}


def copy_bandwidth(device) -> float:
    if torch.device(device).type != "cuda":
        return float("nan")
    x = torch.empty(1 * GIB // 2, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    t, _ = timed(lambda: y.copy_(x), device, 5)
    del x, y
    return 2 * (GIB // 2) / t


def tiny_config() -> ModelConfig:
    mamba = MambaSpec(num_heads=4, head_dim=16, ssm_state_size=12, n_groups=2, chunk_size=16)
    attn = AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=16)
    blocks = []
    for i, ch in enumerate("MEM*EMEM*E"):
        if ch == "M":
            blocks.append(BlockSpec("mamba", mamba=mamba))
        elif ch == "*":
            blocks.append(BlockSpec("attention", attention=attn))
        else:
            blocks.append(BlockSpec("moe", moe=MoeSpec(16, 2 + i % 3, 32, 64, latent_size=32, routed_scaling_factor=5.0)))
    return ModelConfig(arch="nemotron_h_puzzle", vocab_size=256, hidden_size=64, blocks=blocks, name="tiny-puzzle")
