"""Speculative decoding by prompt lookup: drafts are copied from earlier text that matches the last n-gram.

RAG answers quote their context, so the tokens after an earlier occurrence of the current n-gram are
good guesses. The model verifies all drafts in one forward; the longest prefix that equals its own greedy
choices is kept plus one token from the model, so the output is exactly plain greedy decoding.
"""
from __future__ import annotations

from dataclasses import dataclass


class PromptLookup:
    def __init__(self, k: int = 4, max_ngram: int = 3, min_ngram: int = 1):
        if k < 1 or not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"bad prompt-lookup settings k={k}, ngram {min_ngram}..{max_ngram}")
        self.k, self.max_ngram, self.min_ngram = k, max_ngram, min_ngram

    def propose(self, tokens: list[int], k: int | None = None) -> list[int]:
        k = self.k if k is None else k
        if k <= 0:
            return []
        n_tok = len(tokens)
        for n in range(min(self.max_ngram, n_tok - 1), self.min_ngram - 1, -1):
            tail = tokens[n_tok - n:]
            first = tail[0]
            for i in range(n_tok - n - 1, -1, -1):  # most recent earlier occurrence first
                if tokens[i] == first and tokens[i:i + n] == tail:
                    draft = tokens[i + n:i + n + k]
                    if draft:
                        return draft
        return []


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
