"""Capacity planner: how many concurrent contexts of a given length fit on one device.

Memory = weights + activation reserve (bounded by the prefill chunk, not the context) + runtime overhead
+ spare Mamba slots (snapshots) + per context (KV of the attention layers only x context length, with FP8's
block scales, + one Mamba state per sequence). ``MemoryBudget`` is that sum, and it is the one sizing code:
``plan`` reports it for a device size, ``size_pools`` turns it into the engine's KV block pool and Mamba state
pool (budget from ``torch.cuda.mem_get_info`` on CUDA; on CPU exactly what the model needs for
max_num_seqs x max_model_len, with ``memory_gib`` only a cap).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import BlockSpec, ModelConfig

GIB = 1024 ** 3
MIB = 1024 ** 2

# Stored bytes per weight element, scales included.
WEIGHT_BYTES = {
    "bf16": 2.0,
    "fp8": 1.0 + 4 / (128 * 128),  # e4m3 + one fp32 scale per 128x128 block
    "nvfp4": 0.5 + 1 / 16,  # e2m1 (4 bit) + one fp8 e4m3 scale per 16 elements (+ a per-tensor fp32 scale)
    "fp32": 4.0,
}
KV_BYTES = {"bf16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "float8_e4m3fn": 1, "fp16": 2, "float16": 2,
            "fp32": 4, "float32": 4}
FP8_DTYPES = {"fp8", "fp8_e4m3", "float8_e4m3fn"}
KV_SCALE_BYTES = 1  # FP8 KV: one E8M0 (power-of-two exponent, int8) scale per block per kv head, K and V
CONV_STATE_BYTES = 2  # bf16 conv state (model dtype on a GPU)
SSM_STATE_BYTES = 4  # fp32 SSM state, as vLLM recommends for every checkpoint precision
SSD_CHUNK = 128


@dataclass
class WeightCount:
    quantized: int = 0  # projection matrices stored in the weight format
    high_precision: int = 0  # embedding, lm_head, router, conv, norms, biases: kept in bf16

    @property
    def total(self) -> int:
        return self.quantized + self.high_precision


def count_weights(config: ModelConfig) -> WeightCount:
    H, c = config.hidden_size, WeightCount()
    c.high_precision += config.vocab_size * H * (1 if config.tie_word_embeddings else 2) + H  # + final norm
    for b in config.blocks:
        c.high_precision += H  # pre-norm
        if b.kind == "mamba":
            m = b.mamba
            c.quantized += H * (m.d_inner + m.conv_dim + m.num_heads) + m.d_inner * H
            c.high_precision += m.conv_dim * (m.conv_kernel + (1 if m.use_conv_bias else 0)) + 3 * m.num_heads + m.d_inner
        elif b.kind == "attention":
            a = b.attention
            q, kv = a.num_heads * a.head_dim, a.num_kv_heads * a.head_dim
            c.quantized += H * (q + 2 * kv) + q * H
        elif b.kind == "mlp":
            n = 3 if b.mlp.activation == "silu_gated" else 2
            c.quantized += n * H * b.mlp.intermediate_size
        elif b.kind == "moe":
            e = b.moe
            n = 3 if e.activation == "silu_gated" else 2
            d = e.latent_size or H
            c.high_precision += e.n_routed_experts * (H + 1)  # router weight + correction bias
            c.quantized += e.n_routed_experts * n * d * e.moe_intermediate_size
            c.quantized += n * H * e.shared_intermediate_size
            if e.latent_size:
                c.quantized += 2 * H * e.latent_size
    return c


def kv_bytes_per_token(config: ModelConfig, kv_dtype: str) -> int:
    per = KV_BYTES[_norm(kv_dtype, KV_BYTES)]
    return sum(2 * b.attention.num_kv_heads * b.attention.head_dim * per
               for b in config.blocks if b.kind == "attention")


def kv_scale_bytes_per_token(config: ModelConfig, kv_dtype: str, block_size: int = 16) -> float:
    """FP8 KV keeps one power-of-two scale per (block, kv head) for K and for V (engine/kv_quant.py)."""
    if _norm(kv_dtype, KV_BYTES) not in FP8_DTYPES:
        return 0.0
    return sum(2 * b.attention.num_kv_heads * KV_SCALE_BYTES
               for b in config.blocks if b.kind == "attention") / block_size


def mamba_state_bytes(config: ModelConfig, conv_bytes: int = CONV_STATE_BYTES) -> int:
    total = 0
    for b in config.blocks:
        if b.kind == "mamba":
            m = b.mamba
            total += m.conv_dim * (m.conv_kernel - 1) * conv_bytes
            total += m.num_heads * m.head_dim * m.ssm_state_size * SSM_STATE_BYTES
    return total


def _block_activation_bytes(H: int, b: BlockSpec) -> int:
    """Working set of one token through one block in bf16 (+ fp32 where the kernels keep fp32)."""
    if b.kind == "mamba":
        m = b.mamba
        proj = (m.d_inner + m.conv_dim + m.num_heads) * 2
        scan = m.d_inner * 4 * 2 + m.num_heads * m.head_dim * m.ssm_state_size * 4 // SSD_CHUNK  # y + chunk states
        return proj + scan
    if b.kind == "attention":
        a = b.attention
        return (2 * a.num_heads + 2 * a.num_kv_heads) * a.head_dim * 2  # q, k, v, out (flash: no scores)
    if b.kind == "mlp":
        return 3 * b.mlp.intermediate_size * 2
    e = b.moe
    d = e.latent_size or H
    return (e.num_experts_per_tok * (e.moe_intermediate_size + d) + e.shared_intermediate_size + e.n_routed_experts * 2) * 2


def activation_bytes(config: ModelConfig, chunk_tokens: int, safety: float = 2.0) -> int:
    """Peak prefill activations: chunk x (residual stream + the widest block's working set) x safety."""
    H = config.hidden_size
    widest = max((_block_activation_bytes(H, b) for b in config.blocks), default=0)
    logits = config.vocab_size * 4 * 64  # fp32 logits for up to 64 sampled rows
    return int(chunk_tokens * (4 * H * 2 + widest) * safety) + logits


def overhead_bytes_for(device_type: str) -> int:
    """CUDA context, cuBLAS/Triton workspaces and allocator slack on a GPU; nothing extra on a CPU."""
    return GIB if device_type == "cuda" else 0


@dataclass
class MemoryBudget:
    """The one sizing sum behind ``plan`` (reports) and ``size_pools`` (engine pools)."""
    budget_bytes: int
    weights_bytes: int
    activation_bytes: int
    overhead_bytes: int
    kv_bytes_per_token: int  # K and V data of every attention layer
    kv_scale_bytes_per_token: float  # FP8 block scales
    mamba_bytes_per_seq: int
    spare_state_slots: int = 0  # Mamba slots beyond one per context (snapshots)

    @property
    def free_for_contexts(self) -> int:
        return (self.budget_bytes - self.weights_bytes - self.activation_bytes - self.overhead_bytes
                - self.spare_state_slots * self.mamba_bytes_per_seq)

    def bytes_per_context(self, tokens: int) -> int:
        return int(-(-(self.kv_bytes_per_token + self.kv_scale_bytes_per_token) * tokens // 1)) \
            + self.mamba_bytes_per_seq

    def exact_contexts(self, tokens: int) -> float:
        return max(0.0, self.free_for_contexts / self.bytes_per_context(tokens))

    def contexts(self, tokens: int) -> int:
        return max(0, self.free_for_contexts // self.bytes_per_context(tokens))


@dataclass
class CapacityPlan:
    model: str
    weights_format: str
    kv_dtype: str
    device_gib: float
    memory_fraction: float
    context_tokens: int
    chunk_tokens: int
    params: WeightCount
    weights_bytes: int
    kv_bytes_per_token: int
    mamba_bytes_per_seq: int
    activation_bytes: int
    overhead_bytes: int
    kv_scale_bytes_per_token: float = 0.0
    block_size: int = 16
    snapshot_slots: int = 0
    assumptions: list[str] = field(default_factory=list)

    def budget(self, device_gib: float | None = None) -> MemoryBudget:
        gib = self.device_gib if device_gib is None else device_gib
        return MemoryBudget(int(gib * GIB * self.memory_fraction), self.weights_bytes, self.activation_bytes,
                            self.overhead_bytes, self.kv_bytes_per_token, self.kv_scale_bytes_per_token,
                            self.mamba_bytes_per_seq, self.snapshot_slots)

    @property
    def budget_bytes(self) -> int:
        return self.budget().budget_bytes

    @property
    def free_for_contexts(self) -> int:
        return self.budget().free_for_contexts

    @property
    def bytes_per_context(self) -> int:
        return self.budget().bytes_per_context(self.context_tokens)

    @property
    def max_contexts(self) -> int:
        return self.budget().contexts(self.context_tokens)

    @property
    def exact_contexts(self) -> float:
        return self.budget().exact_contexts(self.context_tokens)

    def fit_table(self, contexts=(1_000_000, 2 ** 20), devices_gib=(79.1, 80.0)) -> list[tuple[int, float, int, float]]:
        """(context tokens, device GiB, contexts that fit, exact) for the sizes an H100 is quoted at."""
        gibs = sorted(set(devices_gib) | {self.device_gib})
        return [(c, g, self.budget(g).contexts(c), self.budget(g).exact_contexts(c))
                for c in sorted(set(contexts) | {self.context_tokens}) for g in gibs]

    def report(self) -> str:
        g = lambda n: f"{n / GIB:8.2f} GiB"  # noqa: E731
        lines = [
            f"model {self.model}: {self.params.total / 1e9:.2f} B params "
            f"({self.params.quantized / 1e9:.2f} B in {self.weights_format}, {self.params.high_precision / 1e9:.2f} B in bf16)",
            f"device {self.device_gib:g} GiB x memory fraction {self.memory_fraction:g} = {g(self.budget_bytes)}",
            f"  {'weights (' + self.weights_format + ')':<30}{g(self.weights_bytes)}",
            f"  {'activations (chunk ' + str(self.chunk_tokens) + ')':<30}{g(self.activation_bytes)}",
            f"  {'runtime overhead':<30}{g(self.overhead_bytes)}",
            f"  {'left for contexts':<30}{g(self.free_for_contexts)}",
            f"per context of {self.context_tokens:,} tokens:",
            f"  {'KV (' + self.kv_dtype + ', ' + str(self.kv_bytes_per_token) + ' B/token)':<30}"
            f"{g(self.kv_bytes_per_token * self.context_tokens)}",
            f"  {'KV scales (' + format(self.kv_scale_bytes_per_token, 'g') + ' B/token)':<30}"
            f"{self.kv_scale_bytes_per_token * self.context_tokens / MIB:8.1f} MiB",
            f"  {'Mamba state':<30}{self.mamba_bytes_per_seq / MIB:8.1f} MiB",
            f"  {'total':<30}{g(self.bytes_per_context)}",
            f"concurrent contexts: {self.max_contexts}  (exact {self.exact_contexts:.2f})",
            f"which fit (memory fraction {self.memory_fraction:g}):",
        ]
        for c, gib, n, exact in self.fit_table():
            lines.append(f"  {c:>9,} tokens on {gib:g} GiB: {n} contexts (exact {exact:.3f})")
        lines.append("assumptions:")
        return "\n".join(lines + [f"  - {a}" for a in self.assumptions])


def _norm(name: str, table: dict) -> str:
    key = name.strip().lower()
    if key not in table:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(sorted(table))}")
    return key


def plan(config: ModelConfig, weights: str = "bf16", kv_dtype: str = "bf16", gpu_gib: float = 80.0,
         context: int = 1_000_000, memory_fraction: float = 0.9, chunk_tokens: int = 8192,
         overhead_gib: float = 1.0, block_size: int = 16, snapshot_slots: int = 0) -> CapacityPlan:
    if not 0 < memory_fraction <= 1:
        raise ValueError(f"memory_fraction must be in (0, 1], got {memory_fraction}")
    if context < 1 or chunk_tokens < 1:
        raise ValueError("context and chunk_tokens must be positive")
    fmt = _norm(weights, WEIGHT_BYTES)
    counts = count_weights(config)
    weights_bytes = int(counts.quantized * WEIGHT_BYTES[fmt] + counts.high_precision * 2)
    assumptions = [
        f"weights: {fmt} = {WEIGHT_BYTES[fmt]:.4f} B/param incl. scales for every projection (Mamba in/out, "
        "attention qkv/o, routed + shared experts, latent fc1/fc2); embedding, lm_head, router, conv1d, norms "
        "and biases stay bf16 (2 B); no MTP head loaded",
        f"KV cache: attention layers only ({len(config.layer_indices('attention'))} of {config.num_layers}), "
        f"{kv_dtype}; Mamba/MoE layers keep no per-token cache; FP8 adds one 1-byte power-of-two scale per "
        f"{block_size}-token block per kv head (K and V)",
        f"Mamba state: conv bf16 + SSM fp32, one slot per sequence ({len(config.layer_indices('mamba'))} layers)"
        f" + {snapshot_slots} snapshot slots",
        f"activations: chunked prefill of {chunk_tokens} tokens, residual stream + widest block working set, "
        "x2 safety; independent of context length (the engine reserves the same)",
        f"runtime overhead: {overhead_gib:g} GiB (CUDA context, GEMM workspaces, allocator slack)",
        f"context: {context:,} tokens each, every one reserved in full (prompt + output)",
    ]
    return CapacityPlan(
        model=config.name or config.arch, weights_format=fmt, kv_dtype=kv_dtype, device_gib=gpu_gib,
        memory_fraction=memory_fraction, context_tokens=context, chunk_tokens=chunk_tokens, params=counts,
        weights_bytes=weights_bytes, kv_bytes_per_token=kv_bytes_per_token(config, kv_dtype),
        mamba_bytes_per_seq=mamba_state_bytes(config), activation_bytes=activation_bytes(config, chunk_tokens),
        overhead_bytes=int(overhead_gib * GIB), kv_scale_bytes_per_token=kv_scale_bytes_per_token(
            config, kv_dtype, block_size), block_size=block_size, snapshot_slots=snapshot_slots,
        assumptions=assumptions)


def load_config(model: str) -> ModelConfig:
    """A preset name or a path to an HF config.json."""
    path = Path(model)
    if path.suffix == ".json" or path.is_dir():
        from engine.hf_config import model_config_from_hf
        file = path / "config.json" if path.is_dir() else path
        config = model_config_from_hf(json.loads(file.read_text()))
        config.name = config.name or path.stem
        return config
    from engine.presets import get_preset
    return get_preset(model)


def plan_command(model: str, weights: str, kv_dtype: str, gpu_gib: float, context: int,
                 memory_fraction: float) -> int:
    try:
        p = plan(load_config(model), weights, kv_dtype, gpu_gib, context, memory_fraction)
    except (KeyError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}")
        return 2
    print(p.report())
    return 0


@dataclass
class PoolSizes:
    num_kv_blocks: int
    num_state_slots: int
    block_size: int
    kv_bytes: int  # K/V data + FP8 scales
    state_bytes: int
    budget: MemoryBudget
    source: str  # where the budget came from: "cuda mem_get_info", "model need", "memory_gib cap"
    blocks_per_seq: int = 1

    @property
    def contexts(self) -> float:
        """Full-length sequences the KV pool holds."""
        return self.num_kv_blocks / self.blocks_per_seq


def device_budget_bytes(device, memory_fraction: float = 0.9) -> int:
    """CUDA: fraction x total device memory, no more than is free now plus what this process already holds
    (the weights are loaded before the pools are sized)."""
    import torch
    free, total = torch.cuda.mem_get_info(device)
    return int(min(total * memory_fraction, free + torch.cuda.memory_allocated(device)))


def size_pools(config: ModelConfig, memory_bytes: int | None, weights_bytes: int, kv_dtype: str, max_model_len: int,
               max_num_seqs: int, chunk_tokens: int, block_size: int = 16, n_snapshot_slots: int = 4,
               conv_bytes: int = CONV_STATE_BYTES, device: str = "cpu",
               memory_fraction: float = 0.9, reserved_bytes: int = 0) -> PoolSizes:
    """Engine start: KV blocks + Mamba slots from the same ``MemoryBudget`` the planner reports.

    One Mamba slot per running sequence plus ``n_snapshot_slots``; the KV pool holds at most what
    max_num_seqs + n_snapshot_slots full-length sequences could need (and at least one). The budget: on CUDA
    ``torch.cuda.mem_get_info`` (``memory_bytes``, if given, caps it); on CPU exactly that need, unless
    ``memory_bytes`` caps it lower. ``reserved_bytes``: other fixed buffers the engine allocates (the Mamba
    checkpoints of speculative verification), counted with the runtime overhead.
    """
    device_type = str(device).split(":")[0]
    per_token = kv_bytes_per_token(config, kv_dtype)
    scale_per_token = kv_scale_bytes_per_token(config, kv_dtype, block_size)
    has_mamba = bool(config.layer_indices("mamba"))
    mamba = mamba_state_bytes(config, conv_bytes) if has_mamba else 0
    slots = max_num_seqs + n_snapshot_slots
    blocks_per_seq = -(-max_model_len // block_size)
    per_block = max(1, int(per_token * block_size + scale_per_token * block_size))
    cap = blocks_per_seq * slots
    acts, overhead = activation_bytes(config, chunk_tokens), overhead_bytes_for(device_type) + reserved_bytes
    need = weights_bytes + acts + overhead + slots * mamba + (cap * per_block if per_token else 0)
    if device_type == "cuda":
        total, source = device_budget_bytes(device, memory_fraction), "cuda mem_get_info"
        if memory_bytes is not None and memory_bytes < total:
            total, source = memory_bytes, "memory_gib cap"
    elif memory_bytes is not None and memory_bytes < need:
        total, source = memory_bytes, "memory_gib cap"
    else:
        total, source = need, "model need"
    budget = MemoryBudget(total, weights_bytes, acts, overhead, per_token, scale_per_token, mamba, n_snapshot_slots)
    free = budget.free_for_contexts - max_num_seqs * mamba
    num_blocks = min(cap, free // per_block) if per_token else 1
    if num_blocks < blocks_per_seq and per_token:
        raise ValueError(f"memory budget {total / GIB:.2f} GiB ({source}) cannot hold one {max_model_len}-token "
                         f"sequence (needs about {(need - (cap - blocks_per_seq) * per_block) / GIB:.2f} GiB); "
                         "raise memory_gib or lower max_model_len")
    return PoolSizes(int(num_blocks), slots, block_size, int(num_blocks * per_block) if per_token else 0,
                     slots * mamba, budget, source, blocks_per_seq)
