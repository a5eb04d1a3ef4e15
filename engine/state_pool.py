"""Mamba state slots: one fixed slot per running sequence (and per snapshot); slot 0 is the null slot.

The pool owns the tensors when given shapes: per Mamba layer a conv state [slots, conv_dim, k-1] (model
dtype) and an SSM state [slots, heads, head_dim, d_state] (fp32). A slot is zeroed when allocated, so a new
sequence starts from the empty state.
"""
from __future__ import annotations

from typing import Optional

import torch


class OutOfSlots(RuntimeError):
    pass


class StatePool:
    def __init__(self, num_slots: int, layer_shapes: Optional[list[tuple[tuple, tuple]]] = None,
                 conv_dtype: torch.dtype = torch.float32, device: str = "cpu"):
        if num_slots < 1:
            raise ValueError(f"need at least one usable state slot, got {num_slots}")
        self.num_slots = num_slots  # usable slots, 1..num_slots
        self.free_ids = list(range(num_slots, 0, -1))
        self.conv: list[torch.Tensor] = []
        self.ssm: list[torch.Tensor] = []
        for conv_shape, ssm_shape in layer_shapes or []:
            self.conv.append(torch.zeros((num_slots + 1, *conv_shape), dtype=conv_dtype, device=device))
            self.ssm.append(torch.zeros((num_slots + 1, *ssm_shape), dtype=torch.float32, device=device))

    @property
    def num_free(self) -> int:
        return len(self.free_ids)

    @property
    def num_used(self) -> int:
        return self.num_slots - len(self.free_ids)

    def allocate(self) -> int:
        if not self.free_ids:
            raise OutOfSlots(f"all {self.num_slots} Mamba state slots are in use")
        slot = self.free_ids.pop()
        for c, s in zip(self.conv, self.ssm):
            c[slot].zero_()
            s[slot].zero_()
        return slot

    def free(self, slot: int) -> None:
        if slot <= 0 or slot > self.num_slots or slot in self.free_ids:
            raise ValueError(f"bad free of state slot {slot}")
        self.free_ids.append(slot)

    def copy(self, src: int, dst: int) -> None:
        for c, s in zip(self.conv, self.ssm):
            c[dst].copy_(c[src])
            s[dst].copy_(s[src])
