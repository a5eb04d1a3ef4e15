"""Runs one scheduled batch through the model: pack tokens, run the forward on the paged context, sample.

A step packs the new tokens of every sequence into one ``[T]`` batch, so the linear layers, norms and MLPs
see all running sequences at once. Logits are computed only for the rows that sample: the last token of
a sequence whose prompt is complete (and, with speculative decoding, the rows of its draft tokens).

Decode steps (every sequence one token) run on persistent device buffers (engine/static_decode.py), replayed
from CUDA graphs on CUDA (engine/cuda_graphs.py); prefill, mixed and verify steps run eagerly. Either way
the step issues no host sync until its end: inputs go up with non-blocking copies, sampling runs on the device
(engine/sampling.py) and the sampled ids come back in one copy.
"""
from __future__ import annotations

import logging
import time
from functools import lru_cache
from typing import Optional

import torch

from engine.compiled_decode import CompiledDecode, unsupported as compiled_unsupported
from engine.cuda_graphs import DecodeGraphs
from engine.forward_context import SeqSpan
from engine.kernels.cpu_decode_attention import bf16_decode, plan_decode
from engine.models.hybrid import HybridLM
from engine.paged_context import KVPool, PagedContext, kv_torch_dtype
from engine.sampling import SamplingBatch, sample_tokens, to_device
from engine.scheduler import ScheduledBatch
from engine.spec_checkpoints import MambaCheckpoints
from engine.state_pool import StatePool
from engine.static_decode import StaticDecodeContext

log = logging.getLogger(__name__)
DECODE_GRAPHS = ("auto", "off", "static", "capture")
COMPILE_DECODE = ("off", "background", "wait")


@lru_cache(maxsize=None)
def _log_once(message: str) -> None:
    log.warning(message)


class ModelRunner:
    def __init__(self, model: HybridLM, num_kv_blocks: int, block_size: int, num_state_slots: int,
                 kv_dtype: str = "bfloat16", kernels: str = "auto", max_num_seqs: int = 8,
                 max_model_len: int = 8192, decode_graphs: str = "auto", spec_tokens: int = 0,
                 compile_decode: str = "off", spec_rows: Optional[int] = None):
        """``decode_graphs``: "auto" (CUDA graphs on CUDA with the Triton kernels, else the eager paged step),
        "capture" (graphs; CUDA only), "static" (the graphs' static-buffer step, run eagerly: any device),
        "off" (eager). ``compile_decode``: a CPU dense model's one-sequence decode steps through one compiled
        graph (engine/compiled_decode.py): "background" compiles on a thread while steps run eagerly, "wait"
        compiles here, "off" never."""
        from engine.kernels import select_ops
        if compile_decode not in COMPILE_DECODE:
            raise ValueError(f"unknown compile_decode {compile_decode!r}: {' | '.join(COMPILE_DECODE)}")
        if decode_graphs not in DECODE_GRAPHS:
            raise ValueError(f"unknown decode_graphs {decode_graphs!r}: {' | '.join(DECODE_GRAPHS)}")
        self.model = model
        self.ops = select_ops(model.device, kernels)  # once per device: the model and the context keep it
        model.use_ops(self.ops)
        cfg = model.config
        attn = [b.attention for b in cfg.blocks if b.kind == "attention"]
        if len({(a.num_kv_heads, a.head_dim) for a in attn}) > 1:
            raise ValueError("attention layers with different KV shapes are not supported by the paged pool")
        n_kv, hd = (attn[0].num_kv_heads, attn[0].head_dim) if attn else (1, 1)
        # one block more than the block manager hands out: the scratch block padded decode rows write into
        self.kv = KVPool(len(attn), num_kv_blocks + 1, block_size, n_kv, hd, kv_torch_dtype(kv_dtype), model.device)
        self.states = StatePool(num_state_slots, model.mamba_state_shapes(), model.dtype, str(model.device))
        self.ctx = PagedContext(self.kv, self.states, self.ops)
        self.ctx.decode_bf16 = bf16_decode(model)  # bf16 decode attention where q/k/v are bf16-rounded anyway
        self.has_mamba = bool(cfg.layer_indices("mamba"))
        # checkpoint rows: the sequences that may speculate in one step (``spec_rows``; default all of them)
        rows = max_num_seqs if spec_rows is None else spec_rows
        self.checkpoints = (MambaCheckpoints(self.states, rows, spec_tokens + 1)
                            if spec_tokens and self.has_mamba and rows else None)
        self.graphs: Optional[DecodeGraphs] = None
        self.last_logits: Optional[torch.Tensor] = None
        cuda = model.device.type == "cuda"
        if decode_graphs == "capture" and not cuda:
            raise ValueError("decode_graphs='capture' needs a CUDA device")
        windowed = any(a.sliding_window is not None for a in attn)
        auto = decode_graphs == "auto" and cuda and not windowed and self.ops.name == "triton"  # sync-free ops
        if decode_graphs in ("static", "capture") or auto:
            if windowed:
                raise ValueError("the static decode step does not take sliding-window attention")
            sctx = StaticDecodeContext(self.kv, self.states, self.ops, max_num_seqs, max_model_len,
                                       scratch_block=num_kv_blocks)
            self.graphs = DecodeGraphs(model, sctx, max_num_seqs, capture=cuda and decode_graphs != "static")
        self.compiled: Optional[CompiledDecode] = None
        self.compiled_off: Optional[str] = None  # compile_decode asked for but not attempted: why
        if compile_decode != "off" and self.graphs is None:
            self.compiled_off = compiled_unsupported(model, self.kv)
            if self.compiled_off is None:
                self.compiled = CompiledDecode(model, self.kv, num_kv_blocks * block_size, self.ctx.decode_bf16)
                self.compiled.start(background=compile_decode == "background")
            else:
                _log_once(f"compiled decode steps not attempted: {self.compiled_off}; decode steps run eagerly")

    @staticmethod
    def _is_decode(batch: ScheduledBatch) -> bool:
        return all(n == 1 and not s.draft and s.pending == 1 for s, n in zip(batch.seqs, batch.num_tokens))

    @torch.inference_mode()
    def run(self, batch: ScheduledBatch) -> tuple[list[Optional[list[int]]], list]:
        """-> (sampled tokens per sequence or None, per-sequence logits rows used for drafts).

        For a sequence with draft tokens the returned list is the greedy token after each fed position
        that verification needs (len(draft) + 1 tokens); the caller accepts the matching prefix.
        """
        self.kv.copy_blocks(batch.kv_copies)
        dev = self.model.device
        # a decode step the compiled graphs cover: ("one", its slots) or ("batch", its group), timed for their trial
        path = self._compiled_path(batch) if self.compiled is not None and self.compiled.ready else None
        use = path is not None and self.compiled.use(path[0])
        t0 = time.perf_counter()
        if self.graphs is not None and self._is_decode(batch) and self.graphs.fits(len(batch.seqs)):
            logits = self.graphs.run(batch.seqs)
            rows: list = [[i] for i in range(len(batch.seqs))]
        elif use and path[0] == "one":
            seq = batch.seqs[0]
            hidden = self.compiled(torch.tensor([seq.token_ids[seq.num_cached]]), *path[1])
            logits, rows = self.model.compute_logits(hidden, greedy=seq.params.greedy), [[0]]
        elif use:
            logits, rows = self._compiled_batch(batch.seqs, *path[1]), [[i] for i in range(len(batch.seqs))]
        else:
            logits, rows = self._eager(batch, dev)
        if path is not None:
            self.compiled.timed(path[0], use, time.perf_counter() - t0)
        self.last_logits = logits  # the step's logits rows (tests compare the decode paths on them)
        out: list[Optional[list[int]]] = [None] * len(batch.seqs)
        if logits is None:
            return out, rows
        params, seeds, counters, owners = [], [], [], []
        for i, (seq, rs) in enumerate(zip(batch.seqs, rows)):
            for j in range(len(rs or ())):
                params.append(seq.params)
                seeds.append(seq.sampling_seed)
                counters.append(len(seq.token_ids) + j)  # the position of the token this row draws
                owners.append(i)
        toks = sample_tokens(logits, SamplingBatch.prepare(params, seeds, counters, logits.shape[-1], dev))
        for i, t in zip(owners, self._to_host(toks)):
            out[i] = (out[i] or []) + [t]
        return out, rows

    def _compiled_path(self, batch: ScheduledBatch):
        """("one", slots) or ("batch", group) for a decode step the compiled graphs cover, else None."""
        if not self._is_decode(batch):
            return None
        if len(batch.seqs) == 1:
            slots = self._one_run(batch.seqs[0])
            return None if slots is None else ("one", slots)
        group = self._one_group(batch.seqs)
        return None if group is None else ("batch", group)

    def _eager(self, batch: ScheduledBatch, dev) -> tuple[Optional[torch.Tensor], list]:
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
        self.ctx.checkpoints = self._verify_checkpoints(batch, spans) if self.checkpoints is not None else None
        want = [r for rs in rows if rs is not None for r in rs]
        host = torch.tensor([ids, pos], dtype=torch.long)
        if want:  # appended as a third row, padded: one upload for the step's inputs
            host = torch.cat([host, torch.tensor([want + [0] * (len(ids) - len(want))], dtype=torch.long)])
        up = to_device(host, dev)
        hidden = self.model(up[0], up[1], self.ctx)
        if not want:
            return None, rows
        greedy = all(s.params.greedy for s in batch.seqs)  # (a draft's rows are several: the exact head)
        return self.model.compute_logits(hidden.index_select(0, up[2, :len(want)]), greedy=greedy), rows

    def _one_run(self, seq) -> Optional[tuple[int, int]]:
        """(first pool slot of the sequence's past, its new token's slot) where its past and new token lie in
        one run of slots (what the compiled step reads), else None."""
        start = self.ctx.run_start(seq.block_table, seq.num_cached + 1)
        return None if start is None else (start, start + seq.num_cached)

    def _compiled_batch(self, seqs, order: list[int], base: int, stride: int) -> torch.Tensor:
        """Logits rows in ``seqs``' order of one compiled step over the group (its rows in pool order)."""
        members = [seqs[i] for i in order]
        ids = torch.tensor([s.token_ids[s.num_cached] for s in members])
        hidden = self.compiled.batch(ids, base, stride, [s.num_cached for s in members])
        back = torch.argsort(torch.tensor(order))  # the inverse permutation: row i is seqs[i]
        return self.model.compute_logits(hidden.index_select(0, back), greedy=all(s.params.greedy for s in seqs))

    def _one_group(self, seqs) -> Optional[tuple[list[int], int, int]]:
        """(the sequences in pool order, the first one's first past slot, the slots between members' pasts) where
        the eager decode plan (``plan_decode``: one run of slots each, equal spacing, inside the pool, padding
        within ``MAX_PAD``) makes them all one group, else None."""
        reads = []
        for s in seqs:
            start = self.ctx.run_start(s.block_table, s.num_cached + 1)
            if start is None:
                return None
            reads.append(slice(start, start + s.num_cached + 1))
        n = len(seqs)
        plan = plan_decode(list(range(n)), [1] * n, [s.num_cached for s in seqs], reads, self.kv.k[0].shape[1])
        if len(plan.groups) != 1 or plan.gathers or plan.rest or plan.groups[0].stride <= 0:
            return None
        g = plan.groups[0]  # one query row per sequence: its rows are the sequences in pool order
        order = list(range(n))[g.q_rows] if isinstance(g.q_rows, slice) else g.q_rows.tolist()
        return order, g.start, g.stride

    def _verify_checkpoints(self, batch: ScheduledBatch, spans: list[SeqSpan]):
        """Which spans verify drafts (decode + drafts) and where their per-position Mamba states go."""
        verify = {i: (s.state_slot, spans[i].length) for i, s in enumerate(batch.seqs)
                  if s.draft and not s.is_prefilling and spans[i].length == 1 + len(s.draft)}
        return self.checkpoints.begin(verify) if verify else None

    @staticmethod
    def _to_host(t: torch.Tensor) -> list[int]:
        """The step's one device -> host transfer (pinned, non-blocking, then one wait on CUDA)."""
        if t.device.type != "cuda":
            return t.tolist()
        buf = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        buf.copy_(t, non_blocking=True)
        torch.cuda.current_stream().synchronize()
        return buf.tolist()
