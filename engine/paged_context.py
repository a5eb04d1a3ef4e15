"""The serving engine's ForwardContext: a paged KV pool for the attention layers + the Mamba state pool.

KV lives in per-attention-layer tensors ``[num_blocks, block_size, n_kv, head_dim]`` (bf16, fp8 e4m3 or
fp32); a sequence's block table maps its positions to pool slots. The per-step index tensors (where each
new token is written, which slots each sequence reads) are built once per step and shared by every layer.
A decode step attends all sequences in one padded SDPA call with the GQA group folded into the query rows,
so no KV head is repeated. Mamba layers read and write their sequence's slot of the ``StatePool``.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from engine.forward_context import SeqSpan, causal_attention
from engine.state_pool import StatePool

KV_DTYPES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
             "float32": torch.float32, "fp32": torch.float32, "fp8": torch.float8_e4m3fn,
             "fp8_e4m3": torch.float8_e4m3fn, "float8_e4m3fn": torch.float8_e4m3fn}


def kv_torch_dtype(name: str) -> torch.dtype:
    try:
        return KV_DTYPES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown kv_dtype {name!r}; known: {', '.join(KV_DTYPES)}") from None


LONG_CONTEXT = 2048  # past this many keys, prefill attention runs block by block (bounded memory)
KEY_BLOCK = 1024


def blockwise_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, past_len: int,
                        sliding_window: Optional[int] = None, key_block: int = KEY_BLOCK,
                        read=lambda x: x) -> torch.Tensor:
    """Causal attention of q [L, H, hd] (positions past_len..) over k/v [S, KV, hd] with an online softmax
    over key blocks: peak memory is O(L x key_block), not O(L x S), so a long context's prefill
    activations stay bounded by the chunk size. GQA: each kv head's query group is folded into rows."""
    L, H, hd = q.shape
    S, KV = k.shape[0], k.shape[1]
    g = H // KV
    qh = q.view(L, KV, g, hd).permute(1, 2, 0, 3).reshape(KV, g * L, hd).float()
    qpos = (past_len + torch.arange(L, device=q.device)).repeat(g)
    m = torch.full((KV, g * L), float("-inf"), device=q.device)
    denom = torch.zeros(KV, g * L, device=q.device)
    acc = torch.zeros(KV, g * L, hd, device=q.device)
    lo = 0 if sliding_window is None else max(0, past_len - sliding_window + 1)
    for s0 in range(lo - lo % key_block, S, key_block):
        kb = read(k[s0:s0 + key_block]).float().transpose(0, 1)  # [KV, b, hd]
        vb = read(v[s0:s0 + key_block]).float().transpose(0, 1)
        scores = torch.bmm(qh, kb.transpose(1, 2)).mul_(scale)  # [KV, gL, b]
        kpos = s0 + torch.arange(kb.shape[1], device=q.device)
        if s0 + kb.shape[1] - 1 > past_len or sliding_window is not None:
            allowed = kpos[None, :] <= qpos[:, None]
            if sliding_window is not None:
                allowed &= kpos[None, :] > qpos[:, None] - sliding_window
            scores.masked_fill_(~allowed, float("-inf"))
        m_new = torch.maximum(m, scores.amax(-1))
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(scores - m_safe[..., None])
        corr = torch.exp(m - m_safe)
        denom = denom * corr + p.sum(-1)
        acc = acc * corr[..., None] + torch.bmm(p, vb)
        m = m_new
    out = acc / denom.clamp_min(1e-30)[..., None]
    return out.view(KV, g, L, hd).permute(2, 0, 1, 3).reshape(L, H, hd).to(q.dtype)


class KVPool:
    def __init__(self, n_layers: int, num_blocks: int, block_size: int, n_kv: int, head_dim: int,
                 dtype: torch.dtype, device="cpu"):
        self.block_size, self.dtype = block_size, dtype
        shape = (num_blocks, block_size, n_kv, head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]

    def copy_blocks(self, pairs: list[tuple[int, int]]) -> None:
        for src, dst in pairs:
            for k, v in zip(self.k, self.v):
                k[dst].copy_(k[src])
                v[dst].copy_(v[src])


class PagedContext:
    def __init__(self, kv: KVPool, states: StatePool):
        self.kv, self.states = kv, states
        self.spans: list[SeqSpan] = []

    def prepare(self, spans: list[SeqSpan], block_tables: list[list[int]], slots: list[int]) -> "PagedContext":
        bs, dev = self.kv.block_size, self.kv.k[0].device if self.kv.k else "cpu"
        self.spans, self.slots = spans, slots
        self._decode = all(s.length == 1 for s in spans)
        self.slot_tensor = torch.tensor(slots, dtype=torch.long, device=dev)
        write, self.read = [], []
        for s, table in zip(spans, block_tables):
            n = s.past_len + s.length
            t = torch.tensor(table[: -(-n // bs)], dtype=torch.long)
            idx = (t[:, None] * bs + torch.arange(bs)).flatten()[:n]
            self.read.append(idx)
            write.append(idx[s.past_len:])
        if not self.kv.k:
            return self
        self.write_idx = torch.cat(write).to(dev)
        contiguous = [bool((r[1:] - r[:-1] == 1).all()) for r in self.read]
        if self._decode and all(contiguous):  # every past is a view of the pool: attend in place, no gather
            self.read_views = [slice(int(r[0]), int(r[0]) + len(r)) for r in self.read]
            return self
        self.read_views = None
        if self._decode:  # one padded gather for all sequences
            lens = [s.past_len + 1 for s in spans]
            S = max(lens)
            pad = torch.zeros(len(spans), S, dtype=torch.long)
            for i, idx in enumerate(self.read):
                pad[i, : len(idx)] = idx
            self.read_pad = pad.to(dev)
            self.mask = (torch.arange(S)[None, :] < torch.tensor(lens)[:, None]).to(dev)[:, None, None, :]
        else:  # a sequence whose blocks are consecutive in the pool reads a view: no copy of its past
            self.read = [slice(int(r[0]), int(r[0]) + len(r)) if c else r.to(dev)
                         for r, c in zip(self.read, contiguous)]
        return self

    @property
    def is_decode(self) -> bool:
        return self._decode

    def attend(self, attn_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
               sliding_window: Optional[int] = None) -> torch.Tensor:
        kc, vc = self.kv.k[attn_idx], self.kv.v[attn_idx]
        n_kv, hd = kc.shape[2], kc.shape[3]
        store = kc.dtype
        if store == torch.float8_e4m3fn:  # CPU index ops lack fp8: move the bytes as uint8
            kc, vc = kc.view(torch.uint8), vc.view(torch.uint8)
            k, v = k.to(store).view(torch.uint8), v.to(store).view(torch.uint8)
        k_flat, v_flat = kc.view(-1, n_kv, hd), vc.view(-1, n_kv, hd)
        k_flat.index_copy_(0, self.write_idx, k.to(kc.dtype))
        v_flat.index_copy_(0, self.write_idx, v.to(vc.dtype))

        def read(flat: torch.Tensor, idx) -> torch.Tensor:
            x = flat[idx]  # a slice is a view, an index tensor a gather
            return (x.view(store) if store == torch.float8_e4m3fn else x).to(q.dtype)

        if self._decode and sliding_window is None and self.read_views is not None:
            B, H = q.shape[0], q.shape[1]
            qq = q.view(B, n_kv, H // n_kv, hd)
            outs = []
            for i, sl in enumerate(self.read_views):
                kk, vv = read(k_flat, sl).transpose(0, 1), read(v_flat, sl).transpose(0, 1)  # [kv, S, hd]
                w = torch.matmul(qq[i], kk.transpose(1, 2)).mul_(scale).softmax(-1)
                outs.append(torch.matmul(w, vv))
            return torch.stack(outs).reshape(B, H, hd)
        if self._decode and sliding_window is None:
            B, H = q.shape[0], q.shape[1]
            g = H // n_kv
            kk = read(k_flat, self.read_pad).transpose(1, 2)  # [B, kv, S, hd]
            vv = read(v_flat, self.read_pad).transpose(1, 2)
            qq = q.view(B, n_kv, g, hd)  # the query heads of one kv group become g query rows
            out = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=self.mask, scale=scale)
            return out.reshape(B, H, hd)
        outs = []
        for s, idx in zip(self.spans, self.read):
            sl = slice(s.start, s.start + s.length)
            if s.past_len + s.length > LONG_CONTEXT:
                kk, vv = (k_flat[idx], v_flat[idx])
                conv = (lambda x: x.view(store)) if store == torch.float8_e4m3fn else (lambda x: x)
                outs.append(blockwise_attention(q[sl], kk, vv, scale, s.past_len, sliding_window, read=conv))
                continue
            outs.append(causal_attention(q[sl], read(k_flat, idx), read(v_flat, idx), scale, s.past_len, sliding_window))
        return torch.cat(outs)

    def mamba_state(self, mamba_idx: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        slot = self.slots[seq]
        return self.states.conv[mamba_idx][slot], self.states.ssm[mamba_idx][slot]

    def set_mamba_state(self, mamba_idx: int, seq: int, conv: torch.Tensor, ssm: torch.Tensor) -> None:
        slot = self.slots[seq]
        self.states.conv[mamba_idx][slot].copy_(conv)
        self.states.ssm[mamba_idx][slot].copy_(ssm)

    def mamba_state_batch(self, mamba_idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (self.states.conv[mamba_idx].index_select(0, self.slot_tensor),
                self.states.ssm[mamba_idx].index_select(0, self.slot_tensor))

    def set_mamba_state_batch(self, mamba_idx: int, conv: torch.Tensor, ssm: torch.Tensor) -> None:
        self.states.conv[mamba_idx].index_copy_(0, self.slot_tensor, conv.to(self.states.conv[mamba_idx].dtype))
        self.states.ssm[mamba_idx].index_copy_(0, self.slot_tensor, ssm.float())
