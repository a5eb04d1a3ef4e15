"""Runs one scheduled batch through the model: pack tokens, run the forward on the paged context, sample.

A step packs the new tokens of every sequence into one ``[T]`` batch, so the linear layers, norms and MLPs
see all running sequences at once. Logits are computed only for the rows that sample: the last token of
a sequence whose prompt is complete (and, with speculative decoding, the rows of its draft tokens).
"""
from __future__ import annotations

from typing import Optional

import torch

from engine.forward_context import SeqSpan
from engine.models.hybrid import HybridLM
from engine.paged_context import KVPool, PagedContext, kv_torch_dtype
from engine.sampling import sample
from engine.scheduler import ScheduledBatch
from engine.state_pool import StatePool


class ModelRunner:
    def __init__(self, model: HybridLM, num_kv_blocks: int, block_size: int, num_state_slots: int,
                 kv_dtype: str = "bfloat16", kernels: str = "auto"):
        from engine.kernels import select_ops
        self.model = model
        self.ops = select_ops(model.device, kernels)  # once per device: the model and the context keep it
        model.use_ops(self.ops)
        cfg = model.config
        attn = [b.attention for b in cfg.blocks if b.kind == "attention"]
        if len({(a.num_kv_heads, a.head_dim) for a in attn}) > 1:
            raise ValueError("attention layers with different KV shapes are not supported by the paged pool")
        n_kv, hd = (attn[0].num_kv_heads, attn[0].head_dim) if attn else (1, 1)
        self.kv = KVPool(len(attn), num_kv_blocks, block_size, n_kv, hd, kv_torch_dtype(kv_dtype), model.device)
        self.states = StatePool(num_state_slots, model.mamba_state_shapes(), model.dtype, str(model.device))
        self.ctx = PagedContext(self.kv, self.states, self.ops)
        self.has_mamba = bool(cfg.layer_indices("mamba"))

    @torch.inference_mode()
    def run(self, batch: ScheduledBatch) -> tuple[list[Optional[list[int]]], list]:
        """-> (sampled tokens per sequence or None, per-sequence logits rows used for drafts).

        For a sequence with draft tokens the returned list is the greedy token after each fed position
        that verification needs (len(draft) + 1 tokens); the caller accepts the matching prefix.
        """
        self.kv.copy_blocks(batch.kv_copies)
        ids, pos, spans, rows, start = [], [], [], [], 0
        for seq, n in zip(batch.seqs, batch.num_tokens):
            toks = (seq.token_ids + seq.draft)[seq.num_cached: seq.num_cached + n]
            ids.extend(toks)
            pos.extend(range(seq.num_cached, seq.num_cached + n))
            spans.append(SeqSpan(start, n, seq.num_cached))
            completes = seq.num_cached + n == len(seq.token_ids) + len(seq.draft)
            rows.append(list(range(start + n - 1 - len(seq.draft), start + n)) if completes else None)
            start += n
        self.ctx.prepare(spans, [s.block_table for s in batch.seqs], [s.state_slot for s in batch.seqs])
        hidden = self.model(torch.tensor(ids, dtype=torch.long), torch.tensor(pos, dtype=torch.long), self.ctx)
        want = [r for rs in rows if rs is not None for r in rs]
        out: list[Optional[list[int]]] = [None] * len(batch.seqs)
        if not want:
            return out, rows
        logits = self.model.compute_logits(hidden[torch.tensor(want, dtype=torch.long)])
        row_params, row_gens, owners = [], [], []
        for i, (seq, rs) in enumerate(zip(batch.seqs, rows)):
            if rs is None:
                continue
            for _ in rs:
                row_params.append(seq.params)
                row_gens.append(seq.generator_for(logits.device))
                owners.append(i)
        toks = sample(logits, row_params, row_gens)
        for i, t in zip(owners, toks):
            out[i] = (out[i] or []) + [t]
        return out, rows
