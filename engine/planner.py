"""Capacity planner: how many concurrent contexts of a given length fit on one device, and what the engine
allocates there.

Every figure comes from ``engine.memory_budget.memory_budget``, the same function the engine sizes its pools
with at start: weights (counted here from the config, in the stored format; the MoE router and its correction
bias in fp32, as the loader keeps them) + activations of the prefill chunk + the CUDA graph pool + the runtime
reserve + speculative checkpoints (for the sequences that speculate) + Mamba state slots (running sequences,
snapshots, the null slot) + the KV pool (+ its scratch block) + the static decode tables. Defaults are the
engine's own on the device (``engine.memory_budget.CUDA_DEFAULTS``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from engine.config import ModelConfig
from engine.memory_budget import (  # noqa: F401  (re-exported: the per-token / per-sequence arithmetic)
    CONV_STATE_BYTES, FP8_DTYPES, GIB, KV_BYTES, KV_SCALE_BYTES, MIB, SSD_CHUNK, SSM_STATE_BYTES, EngineShape,
    MemoryBudget, activation_bytes, defaults_for, kv_bytes_per_token, kv_scale_bytes_per_token, mamba_state_bytes,
    memory_budget)

# Stored bytes per weight element, scales included.
WEIGHT_BYTES = {
    "bf16": 2.0,
    "fp8": 1.0 + 4 / (128 * 128),  # e4m3 + one fp32 scale per 128x128 block
    "nvfp4": 0.5 + 1 / 16,  # e2m1 (4 bit) + one fp8 e4m3 scale per 16 elements (+ a per-tensor fp32 scale)
    "fp32": 4.0,
}


@dataclass
class WeightCount:
    quantized: int = 0  # projection matrices stored in the weight format
    high_precision: int = 0  # embedding, lm_head, conv, norms, biases: kept in the model dtype (bf16)
    fp32: int = 0  # the MoE router and its correction bias: the loader keeps them fp32 (engine/loader)

    @property
    def total(self) -> int:
        return self.quantized + self.high_precision + self.fp32

    def bytes(self, fmt: str, dtype_bytes: int = 2) -> int:
        return int(self.quantized * WEIGHT_BYTES[fmt] + self.high_precision * dtype_bytes + self.fp32 * 4)


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
            c.fp32 += e.n_routed_experts * (H + 1)  # router weight + correction bias (fp32, as loaded)
            c.quantized += e.n_routed_experts * n * d * e.moe_intermediate_size
            c.quantized += n * H * e.shared_intermediate_size
            if e.latent_size:
                c.quantized += 2 * H * e.latent_size
    return c


@dataclass
class CapacityPlan:
    model: str
    weights_format: str
    kv_dtype: str
    device: str
    device_gib: float
    memory_fraction: float
    context_tokens: int
    params: WeightCount
    budget: MemoryBudget  # the engine's allocation at max_num_seqs on this device (memory_budget)
    config: ModelConfig = field(repr=False, default=None)
    assumptions: list[str] = field(default_factory=list)

    # the figures of the one budget, under the names the report and the tests use
    @property
    def weights_bytes(self) -> int:
        return self.budget.weights_bytes

    @property
    def activation_bytes(self) -> int:
        return self.budget.activation_bytes

    @property
    def overhead_bytes(self) -> int:
        return self.budget.reserve_bytes

    @property
    def chunk_tokens(self) -> int:
        return self.budget.shape.chunk_tokens

    @property
    def snapshot_slots(self) -> int:
        return self.budget.shape.n_snapshot_slots

    @property
    def block_size(self) -> int:
        return self.budget.shape.block_size

    @property
    def kv_bytes_per_token(self) -> int:
        return kv_bytes_per_token(self.config, self.kv_dtype)

    @property
    def kv_scale_bytes_per_token(self) -> float:
        return kv_scale_bytes_per_token(self.config, self.kv_dtype, self.block_size)

    @property
    def mamba_bytes_per_seq(self) -> int:
        return self.budget.state_slot_bytes

    @property
    def budget_bytes(self) -> int:
        return self.budget.total_bytes

    @property
    def bytes_per_context(self) -> int:
        return self.budget.per_context_bytes

    @property
    def free_for_contexts(self) -> int:
        return self.budget.total_bytes - self.budget.fixed_bytes

    @property
    def max_contexts(self) -> int:
        return self.budget.contexts()

    @property
    def exact_contexts(self) -> float:
        return self.budget.exact_contexts()

    def budget_at(self, device_gib: float, context: Optional[int] = None) -> MemoryBudget:
        """The same engine on another device size (or with another max_model_len)."""
        shape = self.budget.shape if context is None else replace(self.budget.shape, max_model_len=context)
        return memory_budget(self.config, self.weights_bytes, shape, int(device_gib * GIB * self.memory_fraction),
                             f"{device_gib:g} GiB x {self.memory_fraction:g}", self.overhead_bytes, strict=False)

    def fit_table(self, contexts=(1_000_000, 2 ** 20), devices_gib=(79.1, 80.0)) -> list[tuple[int, float, int, float]]:
        """(context tokens, device GiB, contexts that fit, exact) for the sizes an H100 is quoted at."""
        gibs = sorted(set(devices_gib) | {self.device_gib})
        out = []
        for c in sorted(set(contexts) | {self.context_tokens}):
            for g in gibs:
                b = self.budget_at(g, c)
                out.append((c, g, b.contexts(), b.exact_contexts()))
        return out

    def report(self) -> str:
        g = lambda n: f"{n / GIB:8.2f} GiB"  # noqa: E731
        b, s = self.budget, self.budget.shape
        p = self.params
        lines = [
            f"model {self.model}: {p.total / 1e9:.2f} B params ({p.quantized / 1e9:.2f} B in {self.weights_format}, "
            f"{p.high_precision / 1e9:.2f} B in bf16, {p.fp32 / 1e9:.3f} B in fp32: MoE router + bias)",
            f"engine on {self.device} ({self.device} defaults unless given): max_num_seqs {s.max_num_seqs}, "
            f"max_model_len {s.max_model_len:,}, kv {self.kv_dtype}, chunk {s.chunk_tokens}, {s.n_snapshot_slots} "
            f"snapshot slots, speculation checkpoints for {s.spec_seqs} seqs",
            f"device {self.device_gib:g} GiB x memory fraction {self.memory_fraction:g} = {g(b.total_bytes)}",
        ]
        lines += [f"  {label + (' (' + self.weights_format + ')' if label == 'weights' else ''):<36}{g(n)}"
                  for label, n in b.lines()]
        lines += [
            f"  {'total the engine uses':<36}{g(b.used_bytes)}",
            f"  {'left unused':<36}{g(b.total_bytes - b.used_bytes)}",
            f"  {'tensors allocated at start':<36}{g(b.allocated_bytes)}",
            f"per context of {self.context_tokens:,} tokens:",
            f"  {'KV (' + self.kv_dtype + ', ' + str(self.kv_bytes_per_token) + ' B/token)':<36}"
            f"{g(self.kv_bytes_per_token * self.context_tokens)}",
            f"  {'KV scales (' + format(self.kv_scale_bytes_per_token, 'g') + ' B/token)':<36}"
            f"{self.kv_scale_bytes_per_token * self.context_tokens / MIB:8.1f} MiB",
            f"  {'Mamba state':<36}{self.mamba_bytes_per_seq / MIB:8.1f} MiB",
            f"  {'total (+ static table rows)':<36}{g(self.bytes_per_context)}",
            f"concurrent contexts: {min(self.max_contexts, self.budget.engine_contexts)}  (memory for "
            f"{self.exact_contexts:.2f}; the engine runs at most max_num_seqs at once)",
            f"the engine (max_num_seqs {s.max_num_seqs}) holds {b.engine_contexts} contexts of "
            f"{self.context_tokens:,} tokens: KV pool {b.num_kv_blocks:,} blocks of {s.block_size} "
            f"({b.num_kv_blocks / b.blocks_per_seq if b.blocks_per_seq else 0:.2f} contexts), {b.n_state_slots} state slots",
            f"which fit (memory fraction {self.memory_fraction:g}, same engine settings):",
        ]
        for c, gib, n, exact in self.fit_table():
            lines.append(f"  {c:>9,} tokens on {gib:g} GiB: {n} contexts (exact {exact:.3f})")
        lines.append("assumptions:")
        return "\n".join(lines + [f"  - {a}" for a in self.assumptions])


def plan(config: ModelConfig, weights: str = "bf16", kv_dtype: str = "bf16", gpu_gib: float = 80.0,
         context: int = 1_000_000, memory_fraction: Optional[float] = None, chunk_tokens: Optional[int] = None,
         overhead_gib: Optional[float] = None, block_size: int = 16, snapshot_slots: Optional[int] = None,
         max_num_seqs: int = 8, spec_seqs: Optional[int] = None, spec_tokens: int = 4, device: str = "cuda",
         decode_graphs: Optional[bool] = None, speculative: Optional[bool] = None) -> CapacityPlan:
    """The engine's budget on a device of ``gpu_gib`` for sequences of ``context`` tokens; every None takes the
    engine's default for ``device`` (engine.memory_budget.CUDA_DEFAULTS)."""
    d = defaults_for(device)
    memory_fraction = d.memory_fraction if memory_fraction is None else memory_fraction
    if not 0 < memory_fraction <= 1:
        raise ValueError(f"memory_fraction must be in (0, 1], got {memory_fraction}")
    if context < 1 or (chunk_tokens is not None and chunk_tokens < 1):
        raise ValueError("context and chunk_tokens must be positive")
    fmt = _norm(weights, WEIGHT_BYTES)
    counts = count_weights(config)
    cuda = str(device).startswith("cuda")
    graphs = cuda if decode_graphs is None else decode_graphs
    shape = EngineShape(
        max_model_len=context, max_num_seqs=max_num_seqs, kv_dtype=kv_dtype, block_size=block_size,
        chunk_tokens=chunk_tokens or d.chunk_tokens,
        n_snapshot_slots=d.n_snapshot_slots if snapshot_slots is None else snapshot_slots,
        spec_seqs=0 if not (d.speculative if speculative is None else speculative)
        else max_num_seqs if (spec_seqs if spec_seqs is not None else d.spec_seqs) is None
        else (spec_seqs if spec_seqs is not None else d.spec_seqs),
        spec_tokens=spec_tokens if (d.speculative if speculative is None else speculative) else 0,
        conv_bytes=CONV_STATE_BYTES, decode_graphs=graphs, graph_pool=graphs and cuda,
        host_tokens=not cuda)
    reserve = d.reserve_bytes if overhead_gib is None else int(overhead_gib * GIB)
    budget = memory_budget(config, counts.bytes(fmt), shape, int(gpu_gib * GIB * memory_fraction),
                           f"{gpu_gib:g} GiB x {memory_fraction:g}", reserve, strict=False)
    s = budget.shape
    assumptions = [
        f"weights: {fmt} = {WEIGHT_BYTES[fmt]:.4f} B/param incl. scales for every projection (Mamba in/out, "
        "attention qkv/o, routed + shared experts, latent fc1/fc2); embedding, lm_head, conv1d, norms and biases "
        "bf16 (2 B); MoE router + correction bias fp32 (4 B, as the loader keeps them); no MTP head loaded",
        f"KV cache: attention layers only ({len(config.layer_indices('attention'))} of {config.num_layers}), "
        f"{kv_dtype}; FP8 adds one 1-byte power-of-two scale per {block_size}-token block per kv head (K and V); "
        "the pool holds one scratch block more (padded decode rows write there)",
        f"Mamba state: conv bf16 + SSM fp32, one slot per running sequence ({len(config.layer_indices('mamba'))} "
        f"layers) + {s.n_snapshot_slots} snapshot slots + the null slot",
        f"speculative decoding: Mamba checkpoints of {s.spec_tokens + 1} positions for the {s.spec_seqs} sequences "
        "that may speculate in one step (the engine drafts for no more)",
        f"activations: one prefill chunk of {s.chunk_tokens} tokens, residual stream + widest block working set, "
        "x2 safety; independent of context length" + ("; CUDA graph pool: one decode step at the largest batch"
                                                      if s.graph_pool else ""),
        f"runtime reserve: {reserve / GIB:g} GiB (CUDA context, GEMM/Triton workspaces, allocator slack; the engine "
        "keeps at least what it measures outside torch's allocator at start + 256 MiB)",
        f"context: {context:,} tokens each, every one reserved in full (prompt + output)",
    ]
    return CapacityPlan(model=config.name or config.arch, weights_format=fmt, kv_dtype=kv_dtype, device=device,
                        device_gib=gpu_gib, memory_fraction=memory_fraction, context_tokens=context, params=counts,
                        budget=budget, config=config, assumptions=assumptions)


def _norm(name: str, table: dict) -> str:
    key = name.strip().lower()
    if key not in table:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(sorted(table))}")
    return key


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
                 memory_fraction: Optional[float] = None, **engine) -> int:
    """``engine``: plan's engine settings (chunk_tokens, snapshot_slots, max_num_seqs, spec_seqs, device, ...)."""
    try:
        p = plan(load_config(model), weights, kv_dtype, gpu_gib, context, memory_fraction,
                 **{k: v for k, v in engine.items() if v is not None})
    except (KeyError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}")
        return 2
    print(p.report())
    return 0


@dataclass
class PoolSizes:
    """The engine's pools from ``memory_budget`` (kept for callers of ``size_pools``)."""
    num_kv_blocks: int
    num_state_slots: int  # usable slots (the pool holds one more: the null slot)
    block_size: int
    kv_bytes: int  # the KV pool (data + FP8 scales + the scratch block)
    state_bytes: int
    budget: MemoryBudget
    source: str
    blocks_per_seq: int = 1

    @property
    def contexts(self) -> float:
        """Full-length sequences the KV pool holds."""
        return self.num_kv_blocks / self.blocks_per_seq


def pools_of(budget: MemoryBudget) -> PoolSizes:
    s = budget.shape
    return PoolSizes(max(1, budget.num_kv_blocks), s.max_num_seqs + s.n_snapshot_slots, s.block_size,
                     budget.kv_pool_bytes, budget.state_pool_bytes, budget, budget.source, budget.blocks_per_seq)


def size_pools(config: ModelConfig, memory_bytes: int | None, weights_bytes: int, kv_dtype: str, max_model_len: int,
               max_num_seqs: int, chunk_tokens: int, block_size: int = 16, n_snapshot_slots: int = 4,
               conv_bytes: int = CONV_STATE_BYTES, device: str = "cpu",
               memory_fraction: float = 1.0, reserved_bytes: int = 0) -> PoolSizes:
    """``memory_budget`` for callers that size pools without an engine (benchmarks): on CUDA from
    ``torch.cuda.mem_get_info`` (``memory_bytes`` caps it), elsewhere exactly the need (``memory_bytes`` caps it).
    ``reserved_bytes``: a runtime reserve on top of the device default."""
    from engine.memory_budget import cuda_budget
    cuda = str(device).startswith("cuda")
    shape = EngineShape(max_model_len, max_num_seqs, kv_dtype, block_size, chunk_tokens, n_snapshot_slots,
                        conv_bytes=conv_bytes)
    reserve = defaults_for(device).reserve_bytes + reserved_bytes
    total, source = None, ""
    if cuda:
        total, reserve, source = cuda_budget(device, memory_fraction, reserve)
    if memory_bytes is not None:
        need = memory_budget(config, weights_bytes, shape, None, "", reserve).total_bytes
        if memory_bytes < (total if total is not None else need):
            total, source = memory_bytes, "memory_gib cap"
    return pools_of(memory_budget(config, weights_bytes, shape, total, source, reserve))
