"""Incremental text of one sequence for streaming.

``IncrementalDecoder`` decodes only the tokens added since the last step plus a short window of already
emitted ones (the previous step's tokens): text(window + new) minus text(window) is the delta. The window
gives byte-level BPE the context it needs at merge / multi-byte boundaries, and a delta that ends in a split
UTF-8 character (U+FFFD) waits for the next token. Per step the cost is the new tokens plus the window, not
the whole output (re-decoding everything every step was quadratic in the output length). The concatenated
deltas equal one full decode (tests/engine/serving/test_detokenizer.py, real SmolLM2 tokenizer).

``IncrementalText`` adds stop strings on top: deltas never show a prefix of a stop string that may still
complete, and the text is cut where one appears.
"""
from __future__ import annotations

from typing import Optional


class IncrementalDecoder:
    def __init__(self, tokenizer, skip_special_tokens: bool = True):
        self.tokenizer, self.skip = tokenizer, skip_special_tokens
        self.prefix = 0  # first token of the decode window
        self.read = 0  # tokens already turned into emitted text

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip) if ids else ""

    def step(self, ids: list[int], finished: bool = False) -> str:
        """``ids``: all output tokens so far (only the tail past ``prefix`` is decoded) -> the new text."""
        if self.tokenizer is None or len(ids) <= self.read:
            return ""
        window = ids[self.prefix:]
        before = self._decode(window[:self.read - self.prefix])
        now = self._decode(window)
        if len(now) <= len(before) or (now.endswith("\ufffd") and not finished):
            return ""  # nothing printable yet (a split multi-byte character, or a token with no text)
        self.prefix, self.read = self.read, len(ids)
        return now[len(before):]


class IncrementalText:
    """Incremental text of one sequence: holds back a possible stop-string prefix or a split UTF-8 char."""

    def __init__(self, stops: list[str], tokenizer=None):
        self.stops, self.emitted, self.text = stops, 0, ""
        self.hold = max((len(s) for s in stops), default=1) - 1
        self.decoder: Optional[IncrementalDecoder] = IncrementalDecoder(tokenizer) if tokenizer else None
        self.stopped = False

    def update_ids(self, ids: list[int], finished: bool) -> tuple[str, bool]:
        """All output ids so far -> (delta, hit_stop); decodes only the new tokens."""
        if self.stopped:
            return "", False
        piece = self.decoder.step(ids, finished) if self.decoder else ""
        return self._advance(self.text + piece, finished)

    def update(self, text: str, finished: bool) -> tuple[str, bool]:
        """The whole text so far -> (delta, hit_stop)."""
        return self._advance(text, finished)

    def _advance(self, text: str, finished: bool) -> tuple[str, bool]:
        hit = False
        for s in self.stops:
            i = text.find(s, max(0, self.emitted - len(s)))
            if i != -1:
                text, hit, finished = text[:i], True, True
        self.text, self.stopped = text, self.stopped or hit
        end = len(text) if finished else max(self.emitted, len(text) - self.hold)
        if not finished and text[self.emitted:end].endswith("\ufffd"):
            end = self.emitted
        delta, self.emitted = text[self.emitted:end], max(self.emitted, end)
        return delta, hit
