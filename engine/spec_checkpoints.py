"""Per-position Mamba state checkpoints for speculative verification (prompt lookup on a hybrid model).

A verify step feeds a sequence's last token plus its k drafts (T = k + 1 positions) through every Mamba layer
in one call of the multi-token state update (``engine.kernels.mamba_step``), which leaves the final state in
the pool and writes the state after each position into this buffer. When the model accepts only m of the k
drafts, the state after position m is copied back into the sequence's slot (and the conv state is cut from the
saved conv inputs): one state copy for a rejection, none when every draft is accepted. The clone path this
replaces copied every drafted sequence's whole state before each verify step and re-fed the accepted tokens.

Memory: per Mamba layer ``rows x T`` SSM states (fp32) and ``rows x conv_dim x (d_conv - 1 + T)`` conv inputs;
``nbytes_for`` gives it to the pool sizing.
"""
from __future__ import annotations

from typing import Optional

import torch

from engine.state_pool import StatePool


class MambaCheckpoints:
    def __init__(self, states: StatePool, max_rows: int, max_positions: int):
        self.states, self.max_rows, self.max_positions = states, max_rows, max_positions
        self.ssm = [torch.empty(max_rows, max_positions, *s.shape[1:], dtype=torch.float32, device=s.device)
                    for s in states.ssm]
        self.conv = [torch.empty(max_rows, c.shape[1], c.shape[2] + max_positions, dtype=c.dtype, device=c.device)
                     for c in states.conv]
        self.rows: dict[int, int] = {}  # span index in this step -> checkpoint row
        self.slot_rows: dict[int, tuple[int, int]] = {}  # state slot -> (row, positions fed)

    @staticmethod
    def nbytes_for(state_shapes, max_rows: int, max_positions: int, conv_bytes: int) -> int:
        total = 0
        for (conv_dim, width), ssm_shape in state_shapes:
            ssm = 1
            for d in ssm_shape:
                ssm *= d
            total += max_rows * (max_positions * ssm * 4 + conv_dim * (width + max_positions) * conv_bytes)
        return total

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.ssm + self.conv)

    def begin(self, verify: dict[int, tuple[int, int]]) -> "MambaCheckpoints":
        """``verify``: span index -> (state slot, positions fed) of this step's verify spans."""
        if len(verify) > self.max_rows:
            raise ValueError(f"{len(verify)} verify spans exceed the {self.max_rows} checkpoint rows")
        self.rows, self.slot_rows = {}, {}
        for row, span in enumerate(sorted(verify)):
            slot, T = verify[span]
            if T > self.max_positions:
                raise ValueError(f"a verify span of {T} positions exceeds the checkpoint's {self.max_positions}")
            self.rows[span] = row
            self.slot_rows[slot] = (row, T)
        return self

    def row(self, span: int) -> Optional[int]:
        return self.rows.get(span)

    def save_conv_inputs(self, mamba_idx: int, row: int, conv_state: torch.Tensor, xbc: torch.Tensor) -> None:
        """conv_state [conv_dim, d_conv - 1] before the step and xbc [T, conv_dim], the positions' conv inputs."""
        width, T = conv_state.shape[-1], xbc.shape[0]
        buf = self.conv[mamba_idx][row]
        buf[:, :width].copy_(conv_state)
        buf[:, width:width + T].copy_(xbc.t())

    def ssm_rows(self, mamba_idx: int, row: int, T: int) -> torch.Tensor:
        """Where the multi-token update writes the state after each of the T positions: [1, T, H, P, N]."""
        return self.ssm[mamba_idx][row:row + 1, :T]

    def restore(self, slot: int, accepted: int) -> None:
        """Put the state after position ``accepted`` (the last token kept: the fed token + ``accepted`` drafts)
        into ``slot``; a no-op when every fed position was kept."""
        row, T = self.slot_rows[slot]
        if accepted + 1 >= T:
            return
        for ssm_pool, conv_pool, ssm_ck, conv_ck in zip(self.states.ssm, self.states.conv, self.ssm, self.conv):
            width = conv_pool.shape[-1]
            ssm_pool[slot].copy_(ssm_ck[row, accepted])
            conv_pool[slot].copy_(conv_ck[row, :, accepted + 1:accepted + 1 + width])
