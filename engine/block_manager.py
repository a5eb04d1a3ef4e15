"""Paged KV-cache blocks: a free list with reference counts; shared blocks are copied on write.

Admission reserves every block a sequence can ever need (prompt + max_tokens), so a running sequence is
never preempted. Forks of a snapshot share its full blocks; the last, partial block is copied at fork time
(copy-on-write: the fork writes its next token into it).
"""
from __future__ import annotations

import heapq


class OutOfBlocks(RuntimeError):
    pass


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"need num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks, self.block_size = num_blocks, block_size
        self.ref_counts = [0] * num_blocks
        self.free_ids: list[int] = list(range(num_blocks))  # a min-heap: the lowest free ids go first, so a
        # sequence's blocks tend to be consecutive (attention reads a view) and a CPU pool touches few pages

    @property
    def num_free(self) -> int:
        return len(self.free_ids)

    @property
    def num_used(self) -> int:
        return self.num_blocks - len(self.free_ids)

    def blocks_for(self, n_tokens: int) -> int:
        return -(-n_tokens // self.block_size)

    def allocate(self, n: int) -> list[int]:
        if n > len(self.free_ids):
            raise OutOfBlocks(f"need {n} KV blocks, {len(self.free_ids)} free of {self.num_blocks}")
        ids = [heapq.heappop(self.free_ids) for _ in range(n)]
        for b in ids:
            self.ref_counts[b] = 1
        return ids

    def share(self, ids: list[int]) -> list[int]:
        """Another owner of these blocks (a snapshot, or a fork of one)."""
        for b in ids:
            if self.ref_counts[b] <= 0:
                raise ValueError(f"block {b} is not allocated")
            self.ref_counts[b] += 1
        return list(ids)

    def free(self, ids: list[int]) -> None:
        for b in ids:
            if self.ref_counts[b] <= 0:
                raise ValueError(f"double free of block {b}")
            self.ref_counts[b] -= 1
            if self.ref_counts[b] == 0:
                heapq.heappush(self.free_ids, b)

    def fork_table(self, shared: list[int], n_shared_tokens: int, n_total_tokens: int) -> tuple[list[int], list[tuple[int, int]]]:
        """Block table for a sequence whose first n_shared_tokens live in `shared` blocks.

        Returns (table, copies) where copies are (src, dst) block pairs the KV cache must copy now.
        """
        n_full = n_shared_tokens // self.block_size
        partial = n_shared_tokens % self.block_size != 0
        need = self.blocks_for(n_total_tokens) - n_full
        if need > self.num_free:
            raise OutOfBlocks(f"need {need} KV blocks, {self.num_free} free of {self.num_blocks}")
        table = self.share(shared[:n_full])
        new = self.allocate(need)
        copies = [(shared[n_full], new[0])] if partial else []
        return table + new, copies
