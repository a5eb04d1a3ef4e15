"""One request's token stream and its cache resources (KV block table, Mamba state slot)."""
from __future__ import annotations

import itertools
from enum import Enum
from typing import Optional

from engine.sampling import SamplingParams, random_seed

_ids = itertools.count()


class SequenceStatus(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


class Sequence:
    def __init__(self, prompt_ids: list[int], params: Optional[SamplingParams] = None,
                 snapshot: Optional[str] = None, request_id: Optional[str] = None):
        if not prompt_ids and snapshot is None:
            raise ValueError("a request needs at least one prompt token")
        self.seq_id = next(_ids)
        self.request_id = request_id or f"req-{self.seq_id}"
        self.params = params or SamplingParams()
        self.snapshot = snapshot  # name of the snapshot whose tokens precede prompt_ids
        self.prefix_len = 0  # tokens that came from the snapshot (set at admission)
        self.token_ids: list[int] = list(prompt_ids)  # prefix + prompt + output, set at admission
        self.prompt_len = len(prompt_ids)  # of the request's own prompt (without the snapshot prefix)
        self.num_prompt_tokens = len(prompt_ids)  # prefix + prompt after admission
        self.num_cached = 0  # tokens whose KV / Mamba state is in the caches
        self.block_table: list[int] = []
        self.state_slot = 0  # 0 = the null slot (no state)
        self.status = SequenceStatus.WAITING
        self.finish_reason: Optional[str] = None
        # the seed of this request's draws (engine/sampling.py: counter-based, the counter is the position)
        self.sampling_seed = self.params.seed if self.params.seed is not None else random_seed()
        self.draft: list[int] = []  # speculative tokens proposed for the next step
        self.ngram_index = None  # spec_decode.NgramIndex of token_ids, built on the first prompt lookup

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def output_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    @property
    def num_output(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def max_len(self) -> int:
        """Tokens this sequence may ever hold: what admission reserves."""
        return self.num_prompt_tokens + self.params.max_tokens

    @property
    def is_prefilling(self) -> bool:
        return self.num_prompt_tokens - self.num_cached > 0

    @property
    def pending(self) -> int:
        """Tokens not yet in the cache (the prompt remainder, or 1 for a decode)."""
        return len(self.token_ids) - self.num_cached

    @property
    def is_finished(self) -> bool:
        return self.status == SequenceStatus.FINISHED
