"""Speculative decoding by prompt lookup: drafts are copied from earlier text that matches the last n-gram.

RAG answers quote their context, so the tokens after an earlier occurrence of the current n-gram are
good guesses. The model verifies all drafts in one forward; the longest prefix that equals its own greedy
choices is kept plus one token from the model, so the output is exactly plain greedy decoding.

Each sequence keeps an ``NgramIndex`` (n-gram -> the positions right after its latest occurrences), updated
as tokens arrive, so proposing is a few dict lookups instead of a scan of the whole context. A draft grows
token by token while the longest matching n-gram's recent occurrences agree on what comes next; where they
disagree (a clause number, an amount) it stops, so verification rows, which cost real GEMM work on a CPU,
are not spent on guesses the text itself shows to be unreliable.
"""
from __future__ import annotations

from dataclasses import dataclass


class NgramIndex:
    """n-grams (min_n..max_n) of one token sequence -> positions following their last ``keep`` occurrences.
    Only the last ``window`` tokens of a long prompt are indexed (bounded memory and build time)."""

    def __init__(self, min_n: int, max_n: int, keep: int = 4, window: int = 16384):
        self.min_n, self.max_n, self.keep, self.window = min_n, max_n, keep, window
        self.tables: dict[int, dict[tuple[int, ...], list[int]]] = {n: {} for n in range(min_n, max_n + 1)}
        self.upto = 0  # positions < upto have been added as continuations

    def update(self, tokens: list[int]) -> None:
        """Index every position p < len(tokens) that has a preceding n-gram (its continuation is known)."""
        start = max(self.upto, len(tokens) - self.window, 1)
        for p in range(start, len(tokens)):
            for n, table in self.tables.items():
                if p >= n:
                    positions = table.setdefault(tuple(tokens[p - n:p]), [])
                    positions.append(p)
                    if len(positions) > self.keep:
                        del positions[0]
        self.upto = max(self.upto, len(tokens))

    def next_token(self, tokens: list[int], tail: list[int]) -> int | None:
        """The token the longest indexed n-gram ending ``tail`` is followed by, if its occurrences agree."""
        for n in range(min(self.max_n, len(tail)), self.min_n - 1, -1):
            positions = self.tables[n].get(tuple(tail[-n:]))
            if positions:
                following = {tokens[p] for p in positions}
                return following.pop() if len(following) == 1 else None
        return None


class PromptLookup:
    def __init__(self, k: int = 4, max_ngram: int = 3, min_ngram: int = 1):
        if k < 1 or not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"bad prompt-lookup settings k={k}, ngram {min_ngram}..{max_ngram}")
        self.k, self.max_ngram, self.min_ngram = k, max_ngram, min_ngram

    def new_index(self) -> NgramIndex:
        return NgramIndex(self.min_ngram, self.max_ngram)

    def propose(self, tokens: list[int], k: int | None = None, index: NgramIndex | None = None) -> list[int]:
        """Up to k draft tokens after ``tokens``; pass the sequence's own ``index`` to keep it across steps."""
        k = self.k if k is None else k
        if k <= 0 or len(tokens) < 2:
            return []
        index = index or self.new_index()
        index.update(tokens)
        draft: list[int] = []
        tail = tokens[-self.max_ngram:]
        while len(draft) < k:
            nxt = index.next_token(tokens, tail)
            if nxt is None:
                break
            draft.append(nxt)
            tail = (tail + [nxt])[-self.max_ngram:]
        return draft


@dataclass
class SpecStats:
    verify_steps: int = 0
    drafted: int = 0
    accepted_drafts: int = 0
    emitted: int = 0

    def accept(self, draft: list[int], greedy: list[int]) -> list[int]:
        """greedy[i] is the model's choice after draft[:i]; -> the tokens to append (>= 1)."""
        m = 0
        while m < len(draft) and draft[m] == greedy[m]:
            m += 1
        self.verify_steps += 1
        self.drafted += len(draft)
        self.accepted_drafts += m
        self.emitted += m + 1
        return greedy[:m + 1]

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens emitted per verify step (accepted drafts + the model's own token); 1.0 = no gain."""
        return self.emitted / self.verify_steps if self.verify_steps else 0.0
