"""Which of a model's tensors are stored in the weight format (NVFP4, FP8), and their bytes: one rule, used by
the loader when it quantizes a BF16 checkpoint at load and by the planner when it counts weight memory.

Quantized: the projection matrices (Mamba in/out, attention qkv/o, MLP up/down, routed experts up/down,
shared expert, latent fc1/fc2) whose input dim is a multiple of the format's block (16 for NVFP4).
Kept dense: the embedding, the LM head, norms, the conv1d, A_log / D / dt_bias, biases, and the MoE router
with its correction bias, which the loader keeps in fp32 (engine/loader/__init__.py ``FP32_PARAMS``).

``weight_plan(config, fmt)`` lists every parameter of the model with its shape, whether it is quantized and
its stored bytes (scales included); ``weight_bytes(config, fmt)`` sums them. Names are our parameter paths
(``blocks.{i}.mixer.in_proj.weight``, ``blocks.{i}.mixer.experts.up``), the keys of engine/loader/names.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.config import ModelConfig

FORMATS = ("bf16", "fp8", "nvfp4")
NVFP4_BLOCK = 16
FP8_BLOCK = 128
FP32_PARAMS = ("router_weight", "e_score_correction_bias")  # kept fp32, as in the reference implementation
_QUANTIZED_SUFFIXES = ("mixer.in_proj.weight", "mixer.out_proj.weight", "mixer.qkv_proj.weight",
                       "mixer.o_proj.weight", "mixer.up_proj.weight", "mixer.down_proj.weight",
                       "fc1_latent.weight", "fc2_latent.weight", "experts.up", "experts.down",
                       "shared.up_proj.weight", "shared.down_proj.weight")


def is_quantized(name: str, shape: tuple[int, ...], fmt: str) -> bool:
    """Is our parameter ``name`` of ``shape`` stored in ``fmt``? (bf16: nothing is.)"""
    if fmt not in FORMATS:
        raise ValueError(f"weight format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "bf16" or not name.endswith(_QUANTIZED_SUFFIXES) or len(shape) < 2:
        return False
    return fmt != "nvfp4" or shape[-1] % NVFP4_BLOCK == 0


def quantized_nbytes(shape: tuple[int, ...], fmt: str, parts: int = 1) -> int:
    """Stored bytes of one quantized weight [..., out, in] (leading dims: experts, each with its own scales;
    ``parts``: checkpoint tensors fused into it, each with its own global scale, e.g. q, k, v)."""
    *lead, out, inp = shape
    n = math.prod(lead) if lead else 1
    if fmt == "nvfp4":  # e2m1 two per byte + an e4m3 scale per 16 + an fp32 global scale per matrix
        return n * (out * inp // 2 + out * inp // NVFP4_BLOCK + 4 * parts)
    if fmt == "fp8":  # e4m3 + an fp32 scale per 128x128 tile
        return n * (out * inp + 4 * math.ceil(out / FP8_BLOCK) * math.ceil(inp / FP8_BLOCK))
    raise ValueError(f"{fmt!r} is not a quantized format")


@dataclass(frozen=True)
class TensorPlan:
    name: str
    shape: tuple[int, ...]
    quantized: bool
    nbytes: int


@dataclass(frozen=True)
class WeightBytes:
    quantized: int  # bytes of the tensors stored in the format (scales included)
    dense: int  # bytes of everything else, in the model dtype
    fp32: int  # of which: the router and its bias (fp32)
    quantized_params: int  # element counts
    dense_params: int

    @property
    def total(self) -> int:
        return self.quantized + self.dense


def _model_shapes(config: ModelConfig) -> list[tuple[str, tuple[int, ...]]]:
    from engine.models.hybrid import HybridLM
    with torch.device("meta"):
        model = HybridLM(config)
    return [(name, tuple(p.shape)) for name, p in model.named_parameters()]


def weight_plan(config: ModelConfig, fmt: str, dtype_bytes: int = 2) -> list[TensorPlan]:
    """Every parameter the loader fills, as the loader stores it for weight format ``fmt`` and model dtype
    ``dtype_bytes`` (2: bf16). Built from the model's own modules on the meta device (nothing allocated)."""
    plan = []
    for name, shape in _model_shapes(config):
        if is_quantized(name, shape, fmt):
            parts = 3 if name.endswith("qkv_proj.weight") else 1  # q, k, v quantized apart (engine/loader)
            plan.append(TensorPlan(name, shape, True, quantized_nbytes(shape, fmt, parts)))
        else:
            per = 4 if name.rsplit(".", 1)[-1] in FP32_PARAMS else dtype_bytes
            plan.append(TensorPlan(name, shape, False, math.prod(shape) * per))
    return plan


def weight_bytes(config: ModelConfig, fmt: str, dtype_bytes: int = 2) -> WeightBytes:
    """The sums of ``weight_plan``: what the planner's memory budget counts for the weights."""
    plan = weight_plan(config, fmt, dtype_bytes)
    q = [t for t in plan if t.quantized]
    d = [t for t in plan if not t.quantized]
    return WeightBytes(sum(t.nbytes for t in q), sum(t.nbytes for t in d),
                       sum(t.nbytes for t in d if t.name.rsplit(".", 1)[-1] in FP32_PARAMS),
                       sum(math.prod(t.shape) for t in q), sum(math.prod(t.shape) for t in d))
