"""Incremental text of one sequence for streaming: deltas that never split a UTF-8 character or show a
prefix of a stop string that may still complete."""
from __future__ import annotations


class IncrementalText:
    """Incremental text of one sequence: holds back a possible stop-string prefix or a split UTF-8 char."""

    def __init__(self, stops: list[str]):
        self.stops, self.emitted, self.text = stops, 0, ""
        self.hold = max((len(s) for s in stops), default=1) - 1

    def update(self, text: str, finished: bool) -> tuple[str, bool]:
        """-> (delta, hit_stop)."""
        hit = False
        for s in self.stops:
            i = text.find(s, max(0, self.emitted - len(s)))
            if i != -1:
                text, hit, finished = text[:i], True, True
        self.text = text
        end = len(text) if finished else max(self.emitted, len(text) - self.hold)
        if not finished and text[self.emitted:end].endswith("\ufffd"):
            end = self.emitted
        delta, self.emitted = text[self.emitted:end], max(self.emitted, end)
        return delta, hit
