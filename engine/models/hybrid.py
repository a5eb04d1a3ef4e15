"""One model for every supported architecture: a stack of pre-norm residual blocks from ``config.blocks``.

``forward`` takes a packed batch (the new tokens of all sequences of one step, see forward_context.py) and
returns final-normed hidden states; ``compute_logits`` applies the LM head to the rows the caller wants
(usually each sequence's last token), in fp32.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from engine.config import BlockSpec, ModelConfig
from engine.layers.attention import Attention
from engine.layers.embedding import Embedding, RotaryEmbedding
from engine.layers.linear import Linear
from engine.layers.mamba2 import Mamba2Mixer
from engine.layers.mlp import MLP
from engine.layers.moe import MoE
from engine.layers.rmsnorm import RMSNorm

HEAD_INT4_MAX_ROWS = 1  # int4 LM head: logits of more rows than this come from its dense (bf16) copy
REFINE_TOP = 8  # int4 tied head: each row's top candidates recomputed in fp32 (refine_top_logits)
GREEDY_CANDIDATES = 32  # greedy rows: the fp32 best of the 4-bit candidate head's top 32 (HybridLM.compute_logits)


def refine_top_logits(logits: torch.Tensor, hidden: torch.Tensor, weight: torch.Tensor,
                      k: int = REFINE_TOP) -> torch.Tensor:
    """The int4 head's logits come rounded to bf16 (0.25 apart near 40: SmolLM2's first answer token after the
    chat prompt ties 2089 and 49 there, 0.09 apart in fp32); each row's top ``k`` are recomputed in fp32 from
    the fp32 weight rows (the tied embedding: exact dequantized GGUF values), so greedy picks among the
    candidates as the fp32 path does. In place on ``logits`` [M, V]."""
    top = logits.topk(min(k, logits.shape[-1]), dim=-1).indices  # [M, k]
    exact = torch.bmm(weight[top], hidden.float()[..., None]).squeeze(-1)  # [M, k, H] x [M, H, 1]
    return logits.scatter_(-1, top, exact)


class Block(nn.Module):
    def __init__(self, config: ModelConfig, spec: BlockSpec, kind_idx: int):
        super().__init__()
        self.kind = spec.kind
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        H = config.hidden_size
        if spec.kind == "mamba":
            self.mixer = Mamba2Mixer(H, spec.mamba, kind_idx, config.rms_norm_eps)
        elif spec.kind == "attention":
            self.mixer = Attention(H, spec.attention, kind_idx)
        elif spec.kind == "mlp":
            self.mixer = MLP(H, spec.mlp)
        elif spec.kind == "moe":
            self.mixer = MoE(H, spec.moe)
        else:
            raise ValueError(f"unknown block kind {spec.kind!r}")

    def forward(self, x: torch.Tensor, positions: torch.Tensor, ctx) -> torch.Tensor:
        # submodules' forward called directly: no hooks are used, and nn.Module.__call__ costs ~2 us per call,
        # ~300 calls per decode step of a 30-layer model
        h = self.norm.forward(x)
        if self.kind in ("mamba", "attention"):
            h = self.mixer.forward(h, positions, ctx)
        else:
            h = self.mixer.forward(h)
        return x + h


class HybridLM(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.embed = Embedding(config.vocab_size, config.hidden_size)
        counters: dict[str, int] = {}
        blocks = []
        for spec in config.blocks:
            blocks.append(Block(config, spec, counters.get(spec.kind, 0)))
            counters[spec.kind] = counters.get(spec.kind, 0) + 1
        self.blocks = nn.ModuleList(blocks)
        self.norm_f = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = None if config.tie_word_embeddings else Linear(config.hidden_size, config.vocab_size)
        self._tied_head: Linear | None = None  # packed copy of the tied embedding for the CPU GEMM path
        self._candidate_head = None  # a 4-bit Int4Weight of the tied embedding: greedy rows' candidates (pack_cpu)
        self.share_rotaries()

    def share_rotaries(self, device=None) -> None:
        """(Re)build the rotary embeddings, one instance per distinct rope setting shared by its layers."""
        shared: dict[tuple, RotaryEmbedding] = {}
        for block in self.blocks:
            if block.kind == "attention" and block.mixer.rotary is not None:
                s = block.mixer.spec
                key = (s.head_dim, s.rope_theta, repr(s.rope_scaling))
                if key not in shared:
                    shared[key] = RotaryEmbedding(s.head_dim, s.rope_theta, s.rope_scaling).to(device or self.device)
                block.mixer.rotary = shared[key]
        self._rotaries = list(shared.values())

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.weight.dtype

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    def mamba_layers(self) -> list[Mamba2Mixer]:
        return [b.mixer for b in self.blocks if b.kind == "mamba"]

    def mamba_state_shapes(self) -> list[tuple[tuple[int, int], tuple[int, int, int]]]:
        """Per Mamba layer (in mamba_idx order): (conv_state shape, ssm_state shape) of one sequence."""
        return [m.state_shapes() for m in self.mamba_layers()]

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, ctx) -> torch.Tensor:
        if input_ids.dim() != 1 or positions.shape != input_ids.shape:
            raise ValueError(f"expected packed input_ids [T] and positions [T], got {tuple(input_ids.shape)} "
                             f"and {tuple(positions.shape)}")
        x = self.embed(input_ids.to(self.device))
        positions = positions.to(self.device)
        for rotary in self._rotaries:
            rotary.forget()
        for block in self.blocks:
            x = block.forward(x, positions, ctx)
        return self.norm_f(x)

    def compute_logits(self, hidden: torch.Tensor, greedy: bool = False) -> torch.Tensor:
        """fp32 logits [M, V]. ``greedy`` (every row picks its argmax, nothing reads the other logits): a single
        row on the int4 tied head takes the top ``GREEDY_CANDIDATES`` of a 4-bit head (the Q8_0 embedding
        rounded per 32 like Q4_1: one int4 plane where the exact head runs two, half its time) and
        recomputes those in fp32; the other logits are the 4-bit head's. Its argmax is the fp32 path's
        wherever that token ranks in the 4-bit head's top 32 (tests/engine/serving/test_greedy_head.py)."""
        if self.lm_head is not None:
            return self.lm_head(hidden).float()
        if self._tied_head is not None:
            if greedy and self._candidate_head is not None and hidden.shape[0] <= HEAD_INT4_MAX_ROWS:
                return refine_top_logits(self._candidate_head(hidden).float(), hidden, self.embed.weight,
                                         GREEDY_CANDIDATES)
            logits = self._tied_head(hidden).float()
            if self._tied_head.packed_kind == "int4" and self.embed.weight.dtype == torch.float32:
                logits = refine_top_logits(logits, hidden, self.embed.weight)
            return logits
        return F.linear(hidden, self.embed.weight).float()

    def use_ops(self, ops) -> None:
        """Pick the kernels once (engine.kernels.select_ops): every Mamba layer's decode state update and prefill
        scan, the fused NVFP4 MoE and the NVFP4 / FP8 projections (weights dequantized in the kernel)."""
        from engine.layers.moe import Experts
        from engine.quant.fp8 import Fp8Tensor
        from engine.quant.nvfp4 import Nvfp4Tensor
        from engine.ops.ssd import ssd_chunk_scan
        for m in self.mamba_layers():
            m.ssm_update = ops.mamba_step
            q = m.spec.chunk_size
            m.scan = ops.ssd_scan if ops.ssd_scan is not None and q >= 16 and q & (q - 1) == 0 else ssd_chunk_scan
        for module in self.modules():
            if isinstance(module, Experts):
                module.use_fused(ops.moe_nvfp4)
            elif isinstance(module, Linear):
                kinds = {type(p) for p in module.compressed or ()}
                module.quant_gemm = (ops.linear_nvfp4 if kinds == {Nvfp4Tensor} else
                                     ops.linear_fp8 if kinds == {Fp8Tensor} else None)

    def pack_cpu(self, kind: str = "onednn") -> int:
        """CPU models: move every projection (and the LM head) to packed GEMMs (``Linear.pack_cpu``):
        ``"onednn"`` keeps the weights' dtype exactly, ``"fp16"`` rounds fp32 weights to fp16. Routed experts
        and compressed weights are left alone. Returns the number of packed layers."""
        if self.device.type != "cpu":
            return 0
        n = sum(m.pack_cpu(kind) for m in list(self.modules()) if isinstance(m, MLP))
        for module in self.modules():
            if isinstance(module, Linear) and module is not self._tied_head:
                n += module.pack_cpu(kind)
        if self.lm_head is None and self._tied_head is None:
            head = Linear(self.config.hidden_size, self.config.vocab_size)
            head.weight = torch.nn.Parameter(self.embed.weight.detach(), requires_grad=False)
            if head.pack_cpu(kind):
                self._tied_head = head
                n += 1
                if head.packed_kind == "int4" and head.packed.repeat_input and self.embed.weight.dtype == torch.float32:
                    from engine.quant.cpu_kernels import Int4Weight, round_q4
                    self._candidate_head = Int4Weight(*round_q4(self.embed.weight.detach()))
        for head in (self.lm_head, self._tied_head):
            if head is not None:  # torch's int4 kernel takes 4x longer for 2 rows than 1 at the head's 49k x 576
                head.int4_max_rows = HEAD_INT4_MAX_ROWS  # (measured): batched decode steps use its bf16 copy
        return n
