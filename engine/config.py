"""Model configuration: one list of per-layer block specs serves every architecture.

Nemotron-H (`hybrid_override_pattern`), Puzzle (`block_configs`, heterogeneous per layer) and Llama
(mapped to ``*-*-...``: each decoder layer is an attention block then an MLP block) all become a
``ModelConfig`` whose ``blocks`` say, layer by layer, which mixer runs and with which sizes.
Each block is pre-norm RMSNorm + mixer + residual, as in Nemotron-H.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

# GEMM kind on CPU for load_model (engine/layers/linear.py): "auto" = "int4" for a GGUF file with Q4_0/Q4_1/Q8_0
# weights (kept 4-bit, docs/engine-serving-speed.md), else "onednn"; the environment's LEXICON_ENGINE_CPU_GEMM
# (auto|int4|onednn|fp16|plain) overrides it.
DEFAULT_CPU_GEMM = "auto"

BlockKind = Literal["mamba", "attention", "mlp", "moe"]
PATTERN_CHARS: dict[str, BlockKind] = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}


@dataclass
class MambaSpec:
    num_heads: int
    head_dim: int
    ssm_state_size: int
    n_groups: int
    conv_kernel: int = 4
    chunk_size: int = 128
    use_conv_bias: bool = True
    use_bias: bool = False
    time_step_limit: tuple[float, float] = (0.0, float("inf"))
    time_step_min: float = 0.001
    # Which dt clamp after softplus (see docs/engine-model.md): "kernel" clamps to time_step_limit like the
    # mamba_ssm CUDA kernels and vLLM (the default: what the models were trained and are served with);
    # "torch_forward" clamps below at time_step_min like transformers' pure-torch prefill path.
    dt_clamp: Literal["kernel", "torch_forward"] = "kernel"

    @property
    def dt_limits(self) -> tuple[float, float]:
        if self.dt_clamp == "torch_forward":
            return (self.time_step_min, float("inf"))
        return (float(self.time_step_limit[0]), float(self.time_step_limit[1]))

    @property
    def d_inner(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:  # channels that go through the causal conv: x, B, C
        return self.d_inner + 2 * self.n_groups * self.ssm_state_size


@dataclass
class AttentionSpec:
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rope: bool = False
    rope_theta: float = 10000.0
    rope_scaling: Optional[dict] = None  # HF rope_scaling / rope_parameters beyond the default ("llama3")
    sliding_window: Optional[int] = None
    bias: bool = False


@dataclass
class MlpSpec:
    intermediate_size: int
    activation: Literal["relu2", "silu_gated"] = "relu2"
    bias: bool = False


@dataclass
class MoeSpec:
    n_routed_experts: int
    num_experts_per_tok: int
    moe_intermediate_size: int
    shared_intermediate_size: int = 0  # 0 = no shared expert
    latent_size: Optional[int] = None  # latent down/up projections around the routed experts
    routed_scaling_factor: float = 1.0
    n_group: int = 1
    topk_group: int = 1
    norm_topk_prob: bool = True
    activation: Literal["relu2", "silu_gated"] = "relu2"
    bias: bool = False  # on shared expert and latent projections (HF mlp_bias)


@dataclass
class BlockSpec:
    kind: BlockKind
    mamba: Optional[MambaSpec] = None
    attention: Optional[AttentionSpec] = None
    mlp: Optional[MlpSpec] = None
    moe: Optional[MoeSpec] = None


@dataclass
class ModelConfig:
    arch: str  # "nemotron_h" | "nemotron_h_puzzle" | "llama"
    vocab_size: int
    hidden_size: int
    blocks: list[BlockSpec] = field(default_factory=list)
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 262144
    bos_token_id: Optional[int] = None
    eos_token_ids: tuple[int, ...] = ()
    name: str = ""

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    def layer_indices(self, kind: BlockKind) -> list[int]:
        return [i for i, b in enumerate(self.blocks) if b.kind == kind]

    @property
    def pattern(self) -> str:
        inverse = {v: k for k, v in PATTERN_CHARS.items()}
        return "".join(inverse[b.kind] for b in self.blocks)
