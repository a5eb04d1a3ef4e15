"""Named context snapshots: a prefilled document set kept as KV blocks + one Mamba state slot.

A fork shares the snapshot's full KV blocks (ref-counted, copy-on-write for the partial last block) and
gets a copy of its Mamba state, so a second question on the same dossier pays no prefill again.
Snapshots are evicted least-recently-used when admission needs their blocks or slot; a snapshot with
requests still waiting to fork it is pinned.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from engine.block_manager import BlockManager
from engine.state_pool import StatePool


@dataclass
class SnapshotInfo:
    name: str
    n_tokens: int


@dataclass
class Snapshot:
    name: str
    token_ids: list[int]
    block_table: list[int]
    state_slot: int
    last_used: float = field(default_factory=time.monotonic)
    pins: int = 0  # waiting requests that will fork it


class SnapshotStore:
    def __init__(self, blocks: BlockManager, states: StatePool):
        self.blocks, self.states = blocks, states
        self.snapshots: dict[str, Snapshot] = {}
        self.evictions = 0

    def __contains__(self, name: str) -> bool:
        return name in self.snapshots

    def __len__(self) -> int:
        return len(self.snapshots)

    def get(self, name: str) -> Snapshot:
        try:
            snap = self.snapshots[name]
        except KeyError:
            raise KeyError(f"no snapshot named {name!r} (it may have been evicted under memory pressure)") from None
        snap.last_used = time.monotonic()
        return snap

    def put(self, name: str, token_ids: list[int], block_table: list[int], state_slot: int) -> SnapshotInfo:
        """Take ownership of a prefilled sequence's blocks and slot (replaces a snapshot of the same name)."""
        if name in self.snapshots:
            self.drop(name)
        n_needed = self.blocks.blocks_for(len(token_ids))
        self.blocks.free(block_table[n_needed:])  # blocks reserved beyond the prefill
        self.snapshots[name] = Snapshot(name, list(token_ids), block_table[:n_needed], state_slot)
        return SnapshotInfo(name, len(token_ids))

    def drop(self, name: str) -> bool:
        snap = self.snapshots.pop(name, None)
        if snap is None:
            return False
        self.blocks.free(snap.block_table)
        if snap.state_slot:
            self.states.free(snap.state_slot)
        return True

    def evict_for(self, n_blocks: int, n_slots: int) -> bool:
        """Drop LRU unpinned snapshots until n_blocks blocks and n_slots slots are free; True if they are."""
        def enough() -> bool:
            return self.blocks.num_free >= n_blocks and self.states.num_free >= n_slots
        while not enough():
            victims = [s for s in self.snapshots.values() if s.pins == 0]
            if not victims:
                return False
            self.drop(min(victims, key=lambda s: s.last_used).name)
            self.evictions += 1
        return True

    def info(self) -> list[SnapshotInfo]:
        return [SnapshotInfo(s.name, len(s.token_ids)) for s in self.snapshots.values()]


# ---- ownership --------------------------------------------------------------------------------------
# Snapshots hold document text, so each belongs to an owner (the app's tenant). The store keys them by one
# string that carries the owner unambiguously (length-prefixed, so no owner name can imitate another's);
# every caller that serves more than one owner resolves names only through these helpers.

def owned_name(owner: str, name: str) -> str:
    """The store key of ``name`` inside ``owner``'s namespace."""
    if not owner:
        raise ValueError("a snapshot owner must not be empty")
    return f"~{len(owner)}:{owner}/{name}"


def split_owned(key: str) -> tuple[str, str] | None:
    """``(owner, name)`` of a store key made by :func:`owned_name`; None for an unowned key."""
    if not key.startswith("~"):
        return None
    head, sep, rest = key[1:].partition(":")
    if not sep or not head.isdigit() or len(rest) <= int(head) or rest[int(head)] != "/":
        return None
    n = int(head)
    return rest[:n], rest[n + 1:]


def names_of(owner: str, keys) -> list[str]:
    """The names (without the namespace) of ``owner``'s snapshots among store keys."""
    out = []
    for key in keys:
        parts = split_owned(key)
        if parts is not None and parts[0] == owner:
            out.append(parts[1])
    return sorted(out)


def owner_view(stats: dict, owner: str | None) -> dict:
    """Engine stats as one owner may see them: engine-wide figures stay, snapshot names and counts are the
    owner's own (none at all without an owner)."""
    keys = stats.get("snapshot_names") or []
    out = {k: v for k, v in stats.items() if k not in ("snapshot_names", "snapshots", "snapshot_evictions")}
    if owner:
        mine = names_of(owner, keys)
        out["snapshots"], out["snapshot_names"] = len(mine), mine
    return out
