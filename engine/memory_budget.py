"""One memory budget: every allocation the engine makes, computed by one function (``memory_budget``) for the
planner (``lexicon plan``) and for the engine's pools at start (engine/llm_engine.py).

Allocated by the engine when it starts (exact tensor bytes; tests/engine/serving/test_memory_budget.py sums the
engine's real tensors against them):
  - KV pool: (KV blocks + 1 scratch block that padded decode rows write into) x one block's K and V of every
    attention layer, + FP8's per-(block, kv head) scales (engine/paged_context.KVPool);
  - Mamba state pool: (max_num_seqs + snapshot slots + the null slot 0) x one sequence's conv + SSM state
    (engine/state_pool.py);
  - speculative checkpoints: for the ``spec_seqs`` sequences that may speculate at once (not every running
    one), the state after each of the ``spec_tokens + 1`` positions of a verify step (engine/spec_checkpoints.py);
  - static decode tables (with decode graphs): a block table per state slot and per batch row.
On a CPU, whose memory is the host's, the sequences' token-id lists too (8 B a token).
Reserved, not allocated up front (estimates, each its own line):
  - activations of one prefill chunk (``activation_bytes``; the chunk bounds them, not the context);
  - the CUDA graph pool: one decode step's activations at the largest captured batch;
  - the runtime reserve (CUDA only): CUDA context, cuBLAS/Triton workspaces, allocator slack. The engine measures
    what lives outside torch's allocator at start and uses the larger of that + slack and this default.
Weights are an input: the planner counts them from the config (engine/planner.py), the engine sums its tensors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from engine.config import BlockSpec, ModelConfig

GIB = 1024 ** 3
MIB = 1024 ** 2

KV_BYTES = {"bf16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "float8_e4m3fn": 1, "fp16": 2, "float16": 2,
            "fp32": 4, "float32": 4}
FP8_DTYPES = {"fp8", "fp8_e4m3", "float8_e4m3fn"}
KV_SCALE_BYTES = 1  # FP8 KV: one E8M0 (power-of-two exponent, int8) scale per block per kv head, K and V
CONV_STATE_BYTES = 2  # bf16 conv state (model dtype on a GPU)
SSM_STATE_BYTES = 4  # fp32 SSM state, as vLLM recommends for every checkpoint precision
SSD_CHUNK = 128
TABLE_BYTES = 4  # int32 block-table entries of the static decode step
TOKEN_ID_BYTES = 8  # a sequence's token ids: a Python list, one 8-byte reference per token (small ints are shared)
# CUDA runtime reserve: the CUDA context (~0.5 GiB with lazy module loading), cuBLAS/cuBLASLt and Triton
# workspaces, and the caching allocator's fragmentation slack. The engine measures the part outside torch's
# allocator at start (mem_get_info total - free - torch's reserved) and keeps max(this, measured + SLACK).
CUDA_RESERVE_BYTES = GIB
ALLOCATOR_SLACK_BYTES = 256 * MIB


@dataclass(frozen=True)
class DeviceDefaults:
    """The engine's defaults per device type (EngineConfig fields left None take these; ``lexicon plan`` too)."""
    chunk_tokens: int
    n_snapshot_slots: int
    spec_seqs: Optional[int]  # sequences that may speculate in one step (checkpoint rows); None: all of them
    memory_fraction: float  # of the device's total memory (CUDA); the reserve below is counted on top
    reserve_bytes: int
    speculative: bool = True  # prompt-lookup drafts by default


# CUDA: a 2048-token prefill chunk (0.6 GiB of activations on Puzzle, against 2.5 GiB at 8192; a chunk of 2048
# still gives every MoE expert ~40-100 rows), 2 snapshot slots, speculative checkpoints for 2 sequences
# (1.2 GiB on Puzzle; 4.7 GiB for all 8), the whole device with an explicit reserve.
# Speculation is off by default on CUDA: its verify steps are not captured in a CUDA graph yet, so on a GPU it
# would replace graph-replayed decode steps with eager ones (EngineConfig(speculative=True) still turns it on).
CUDA_DEFAULTS = DeviceDefaults(chunk_tokens=2048, n_snapshot_slots=2, spec_seqs=2, memory_fraction=1.0,
                               reserve_bytes=CUDA_RESERVE_BYTES, speculative=False)
CPU_DEFAULTS = DeviceDefaults(chunk_tokens=512, n_snapshot_slots=4, spec_seqs=None, memory_fraction=1.0,
                              reserve_bytes=0)


def defaults_for(device) -> DeviceDefaults:
    return CUDA_DEFAULTS if str(device).split(":")[0] == "cuda" else CPU_DEFAULTS


def norm_dtype(name: str, table: dict = KV_BYTES) -> str:
    key = name.strip().lower()
    if key not in table:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(sorted(table))}")
    return key


def _attention(config: ModelConfig):
    return [b.attention for b in config.blocks if b.kind == "attention"]


def kv_bytes_per_token(config: ModelConfig, kv_dtype: str) -> int:
    per = KV_BYTES[norm_dtype(kv_dtype)]
    return sum(2 * a.num_kv_heads * a.head_dim * per for a in _attention(config))


def kv_scale_bytes_per_token(config: ModelConfig, kv_dtype: str, block_size: int = 16) -> float:
    """FP8 KV keeps one power-of-two scale per (block, kv head) for K and for V (engine/kv_quant.py)."""
    if norm_dtype(kv_dtype) not in FP8_DTYPES:
        return 0.0
    return sum(2 * a.num_kv_heads * KV_SCALE_BYTES for a in _attention(config)) / block_size


def kv_block_bytes(config: ModelConfig, kv_dtype: str, block_size: int) -> int:
    """One KV block of every attention layer: K and V data + FP8 scales (exactly what KVPool allocates)."""
    scales = sum(2 * a.num_kv_heads * KV_SCALE_BYTES for a in _attention(config)) \
        if norm_dtype(kv_dtype) in FP8_DTYPES else 0
    return kv_bytes_per_token(config, kv_dtype) * block_size + scales


def mamba_state_bytes(config: ModelConfig, conv_bytes: int = CONV_STATE_BYTES) -> int:
    """One sequence's Mamba state: conv state (model dtype) + SSM state (fp32) of every Mamba layer."""
    total = 0
    for b in config.blocks:
        if b.kind == "mamba":
            m = b.mamba
            total += m.conv_dim * (m.conv_kernel - 1) * conv_bytes
            total += m.num_heads * m.head_dim * m.ssm_state_size * SSM_STATE_BYTES
    return total


def checkpoint_bytes(config: ModelConfig, rows: int, positions: int, conv_bytes: int = CONV_STATE_BYTES) -> int:
    """Speculative verification's Mamba checkpoints (engine/spec_checkpoints.py): per Mamba layer and row,
    ``positions`` SSM states (fp32) and the conv inputs ``conv_dim x (d_conv - 1 + positions)``."""
    total = 0
    for b in config.blocks:
        if b.kind == "mamba":
            m = b.mamba
            ssm = m.num_heads * m.head_dim * m.ssm_state_size * SSM_STATE_BYTES
            total += rows * (positions * ssm + m.conv_dim * (m.conv_kernel - 1 + positions) * conv_bytes)
    return total


def static_table_bytes(state_slots: int, max_batch: int, max_blocks: int) -> int:
    """The static decode step's buffers (engine/static_decode.py): a block table per state slot (null slot
    included) and per batch row, + per-row metadata (5 int64 + 1 int32)."""
    return (state_slots + max_batch) * max_blocks * TABLE_BYTES + max_batch * (5 * 8 + 4)


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
    """Peak activations of a step of ``chunk_tokens`` tokens: tokens x (residual stream + the widest block's
    working set) x safety, + fp32 logits for up to 64 sampled rows. Independent of the context length."""
    H = config.hidden_size
    widest = max((_block_activation_bytes(H, b) for b in config.blocks), default=0)
    logits = config.vocab_size * 4 * 64
    return int(chunk_tokens * (4 * H * 2 + widest) * safety) + logits


@dataclass(frozen=True)
class EngineShape:
    """The engine settings that decide its allocations."""
    max_model_len: int
    max_num_seqs: int
    kv_dtype: str = "bfloat16"
    block_size: int = 16
    chunk_tokens: int = 512
    n_snapshot_slots: int = 4
    spec_seqs: int = 0  # checkpoint rows: sequences that may speculate in one step (0: no speculation)
    spec_tokens: int = 0  # drafts per verify step (checkpoints keep spec_tokens + 1 positions)
    conv_bytes: int = CONV_STATE_BYTES  # the model dtype's bytes (conv states, checkpoints' conv inputs)
    decode_graphs: bool = False  # the static decode step's tables (any device)
    graph_pool: bool = False  # CUDA graphs captured: their private pool holds one decode step's activations
    host_tokens: bool = False  # count the sequences' token-id lists (a CPU engine: host memory is its memory)


@dataclass
class MemoryBudget:
    """Every byte of the engine on its device; ``lines`` is the plan's breakdown."""
    total_bytes: int
    source: str  # where total_bytes came from
    shape: EngineShape
    weights_bytes: int
    activation_bytes: int
    graph_pool_bytes: int
    reserve_bytes: int
    checkpoint_bytes: int
    state_slot_bytes: int  # one sequence's Mamba state
    kv_block_bytes: int  # one KV block of every attention layer
    blocks_per_seq: int
    num_kv_blocks: int  # blocks the block manager hands out (the pool holds one more: the scratch block)

    @property
    def n_state_slots(self) -> int:
        """State-pool rows: running sequences + snapshots + the null slot 0."""
        return self.shape.max_num_seqs + self.shape.n_snapshot_slots + 1 if self.state_slot_bytes else 0

    @property
    def kv_pool_bytes(self) -> int:
        return (self.num_kv_blocks + 1) * self.kv_block_bytes

    @property
    def state_pool_bytes(self) -> int:
        return self.n_state_slots * self.state_slot_bytes

    @property
    def table_bytes(self) -> int:
        s = self.shape
        return static_table_bytes(s.max_num_seqs + s.n_snapshot_slots + 1, s.max_num_seqs, self.blocks_per_seq) \
            if s.decode_graphs else 0

    @property
    def allocated_bytes(self) -> int:
        """The tensors the engine allocates at start: KV pool, state pool, checkpoints, static tables."""
        return self.kv_pool_bytes + self.state_pool_bytes + self.checkpoint_bytes + self.table_bytes

    @property
    def token_list_bytes(self) -> int:
        """The token ids of max_num_seqs + snapshot full-length sequences as Python lists (8 B a token), counted
        where host memory is the engine's memory (a CPU)."""
        s = self.shape
        return (s.max_num_seqs + s.n_snapshot_slots) * s.max_model_len * TOKEN_ID_BYTES if s.host_tokens else 0

    @property
    def reserved_bytes(self) -> int:
        return self.activation_bytes + self.graph_pool_bytes + self.reserve_bytes + self.token_list_bytes

    @property
    def used_bytes(self) -> int:
        return self.weights_bytes + self.allocated_bytes + self.reserved_bytes

    @property
    def per_context_bytes(self) -> int:
        """What one more full-length sequence costs: its KV blocks, its state slot, its two table rows."""
        tables = 2 * self.blocks_per_seq * TABLE_BYTES + 44 if self.shape.decode_graphs else 0
        tokens = self.shape.max_model_len * TOKEN_ID_BYTES if self.shape.host_tokens else 0
        return self.blocks_per_seq * self.kv_block_bytes + self.state_slot_bytes + tables + tokens

    @property
    def fixed_bytes(self) -> int:
        """Everything but the per-context part: weights, reserves, checkpoints, snapshot + null slots, scratch."""
        s = self.shape
        tables = (s.n_snapshot_slots + 1) * self.blocks_per_seq * TABLE_BYTES if s.decode_graphs else 0
        null_slot = self.state_slot_bytes if self.state_slot_bytes else 0
        return (self.weights_bytes + self.reserved_bytes - s.max_num_seqs * s.max_model_len * TOKEN_ID_BYTES
                * s.host_tokens + self.checkpoint_bytes + tables + null_slot
                + s.n_snapshot_slots * self.state_slot_bytes + self.kv_block_bytes)

    def exact_contexts(self, tokens: Optional[int] = None) -> float:
        """Full-length contexts this budget holds when max_num_seqs is set to that many (``tokens``: another
        context length under the same fixed costs)."""
        per = self.per_context_bytes
        if tokens is not None and tokens != self.shape.max_model_len:
            bps = -(-tokens // self.shape.block_size)
            per += (bps - self.blocks_per_seq) * (self.kv_block_bytes + (2 * TABLE_BYTES if self.shape.decode_graphs
                                                                          else 0))
        return max(0.0, (self.total_bytes - self.fixed_bytes) / per) if per else math.inf

    def contexts(self, tokens: Optional[int] = None) -> int:
        return int(self.exact_contexts(tokens))

    @property
    def engine_contexts(self) -> int:
        """Full-length sequences the engine holds at once: KV blocks for them and a slot each."""
        by_kv = self.num_kv_blocks // self.blocks_per_seq if self.kv_block_bytes else self.shape.max_num_seqs
        return min(self.shape.max_num_seqs, by_kv)

    def lines(self) -> list[tuple[str, int]]:
        s = self.shape
        return [
            ("weights", self.weights_bytes),
            (f"activations (chunk {s.chunk_tokens})", self.activation_bytes),
            ("CUDA graph pool", self.graph_pool_bytes),
            ("runtime reserve", self.reserve_bytes),
            (f"spec checkpoints ({s.spec_seqs} seqs x {s.spec_tokens + 1 if s.spec_seqs else 0} pos)",
             self.checkpoint_bytes),
            (f"Mamba states ({self.n_state_slots} slots)", self.state_pool_bytes),
            (f"KV pool ({self.num_kv_blocks:,} + 1 blocks)", self.kv_pool_bytes),
            ("static decode tables", self.table_bytes),
            ("token-id lists (host)", self.token_list_bytes),
        ]


def memory_budget(config: ModelConfig, weights_bytes: int, shape: EngineShape, total_bytes: Optional[int] = None,
                  source: str = "", reserve_bytes: int = 0, strict: bool = True) -> MemoryBudget:
    """The one sizing function. ``total_bytes``: what the engine may use on its device (device memory x
    fraction, or a cap); None: exactly what max_num_seqs + snapshot slots full-length sequences need (a CPU).
    The KV pool gets what is left after everything else, at most (max_num_seqs + n_snapshot_slots) full
    sequences; fewer than one full sequence is an error (``strict``; the planner reports it as 0 contexts)."""
    if shape.max_num_seqs < 1 or shape.max_model_len < 1 or shape.chunk_tokens < 1 or shape.block_size < 1:
        raise ValueError(f"max_num_seqs, max_model_len, chunk_tokens and block_size must be positive: {shape}")
    has_mamba = bool(config.layer_indices("mamba"))
    spec_rows = min(shape.spec_seqs, shape.max_num_seqs) if shape.spec_tokens and has_mamba else 0
    if spec_rows != shape.spec_seqs:
        from dataclasses import replace
        shape = replace(shape, spec_seqs=spec_rows)
    b = MemoryBudget(
        total_bytes=0, source=source, shape=shape, weights_bytes=int(weights_bytes),
        activation_bytes=activation_bytes(config, shape.chunk_tokens),
        graph_pool_bytes=activation_bytes(config, shape.max_num_seqs) if shape.graph_pool else 0,
        reserve_bytes=int(reserve_bytes),
        checkpoint_bytes=checkpoint_bytes(config, spec_rows, shape.spec_tokens + 1, shape.conv_bytes)
        if spec_rows else 0,
        state_slot_bytes=mamba_state_bytes(config, shape.conv_bytes) if has_mamba else 0,
        kv_block_bytes=kv_block_bytes(config, shape.kv_dtype, shape.block_size),
        blocks_per_seq=-(-shape.max_model_len // shape.block_size), num_kv_blocks=0)
    cap = (shape.max_num_seqs + shape.n_snapshot_slots) * b.blocks_per_seq if b.kv_block_bytes else 0
    b.num_kv_blocks = cap
    need = b.used_bytes
    if total_bytes is None:
        b.total_bytes, b.source = need, source or "model need"
        return b
    b.total_bytes = int(total_bytes)
    if not b.kv_block_bytes:
        if need > b.total_bytes and strict:
            raise ValueError(f"memory budget {b.total_bytes / GIB:.2f} GiB ({source}) cannot hold the model and "
                             f"its {b.n_state_slots} state slots (needs {need / GIB:.2f} GiB)")
        return b
    b.num_kv_blocks = 0
    room = b.total_bytes - b.used_bytes  # everything but the KV blocks handed out
    b.num_kv_blocks = max(0, min(cap, room // b.kv_block_bytes))
    if b.num_kv_blocks < b.blocks_per_seq and strict:
        one = need - (cap - b.blocks_per_seq) * b.kv_block_bytes
        raise ValueError(f"memory budget {b.total_bytes / GIB:.2f} GiB ({source}) cannot hold one "
                         f"{shape.max_model_len}-token sequence (needs about {one / GIB:.2f} GiB); raise memory_gib "
                         "or lower max_model_len")
    return b


def cuda_budget(device, memory_fraction: float, default_reserve: int) -> tuple[int, int, str]:
    """(total bytes, runtime reserve, source) on a CUDA device: total memory x fraction, and a reserve of at
    least what already lives outside torch's allocator (the CUDA context, library workspaces, other processes)
    + allocator slack. Called after the weights are loaded (they are inside torch's allocator)."""
    import torch
    free, total = torch.cuda.mem_get_info(device)
    outside = max(0, total - free - torch.cuda.memory_reserved(device))
    reserve = max(int(default_reserve), outside + ALLOCATOR_SLACK_BYTES)
    return int(total * memory_fraction), reserve, (f"cuda mem_get_info: {total / GIB:.2f} GiB x {memory_fraction:g}, "
                                                   f"{outside / GIB:.2f} GiB outside torch at start")


def resolve_engine_config(config, device):
    """EngineConfig with its device-dependent fields (None) set from ``defaults_for(device)``."""
    from dataclasses import replace
    d = defaults_for(device)
    spec = config.spec_seqs if config.spec_seqs is not None else d.spec_seqs
    return replace(config,
                   speculative=d.speculative if config.speculative is None else config.speculative,
                   chunk_tokens=config.chunk_tokens or d.chunk_tokens,
                   n_snapshot_slots=d.n_snapshot_slots if config.n_snapshot_slots is None else config.n_snapshot_slots,
                   memory_fraction=config.memory_fraction or d.memory_fraction,
                   spec_seqs=config.max_num_seqs if spec is None else min(spec, config.max_num_seqs))


def engine_shape(config, device, conv_bytes: int) -> EngineShape:
    """What decides the allocations of an engine of (resolved) EngineConfig ``config`` on ``device``."""
    cuda = str(device).split(":")[0] == "cuda"
    graphs = config.decode_graphs in ("static", "capture") or (config.decode_graphs == "auto" and cuda)
    return EngineShape(config.max_model_len, config.max_num_seqs, config.kv_dtype, config.block_size,
                       config.chunk_tokens, config.n_snapshot_slots,
                       spec_seqs=config.spec_seqs if config.speculative else 0,
                       spec_tokens=config.num_spec_tokens if config.speculative else 0, conv_bytes=conv_bytes,
                       decode_graphs=graphs, graph_pool=graphs and cuda and config.decode_graphs != "static",
                       host_tokens=not cuda)


def engine_budget(model_config: ModelConfig, weights_bytes: int, config, device, conv_bytes: int) -> MemoryBudget:
    """The engine's budget at start (``config``: a resolved EngineConfig): on CUDA from the device
    (``cuda_budget``; ``memory_gib`` caps it), elsewhere exactly what the model needs (``memory_gib`` caps it)."""
    dev = str(device).split(":")[0]
    shape = engine_shape(config, dev, conv_bytes)
    reserve = defaults_for(dev).reserve_bytes if config.runtime_reserve_gib is None \
        else int(config.runtime_reserve_gib * GIB)
    total, source = None, ""
    if dev == "cuda":
        total, reserve, source = cuda_budget(device, config.memory_fraction, reserve)
    if config.memory_gib is not None:
        cap = int(config.memory_gib * GIB)
        if cap < (total if total is not None else memory_budget(model_config, weights_bytes, shape, None, "",
                                                                  reserve).total_bytes):
            total, source = cap, "memory_gib cap"
    return memory_budget(model_config, weights_bytes, shape, total, source, reserve)
