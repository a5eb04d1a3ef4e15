"""Loop guard for generated text: a small model reading a long dossier tends to repeat one sentence over and
over. ``guarded(deltas)`` passes text through and stops (closing the engine stream, which cancels the
request) as soon as the text starts repeating: a word n-gram seen ``max_repeats`` times, or a sentence
written again. ``dedupe_sentences`` removes repeated sentences from a finished text.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Iterator

NGRAM = 8
MAX_REPEATS = 3
WORD = re.compile(r"\w+")
SENT_END = re.compile(r"(?<=[.!?])\s+")


def _norm(sentence: str) -> str:
    return " ".join(WORD.findall(sentence.lower()))


class RepetitionDetector:
    def __init__(self, ngram: int = NGRAM, max_repeats: int = MAX_REPEATS):
        self.ngram, self.max_repeats = ngram, max_repeats
        self.text = ""
        self.looping = False

    def feed(self, delta: str) -> bool:
        """Add text; True once the text repeats itself."""
        self.text += delta
        words = WORD.findall(self.text.lower())
        if len(words) >= self.ngram:
            grams = Counter(tuple(words[i:i + self.ngram]) for i in range(len(words) - self.ngram + 1))
            if grams.most_common(1)[0][1] >= self.max_repeats:
                self.looping = True
        sentences = [_norm(s) for s in SENT_END.split(self.text)[:-1]]  # complete sentences only
        sentences = [s for s in sentences if len(s.split()) >= 4]
        if len(sentences) != len(set(sentences)):
            self.looping = True
        return self.looping


def guarded(deltas: Iterable[str], detector: RepetitionDetector | None = None) -> Iterator[str]:
    """Yield deltas until the text loops; then close the source (cancelling generation)."""
    det = detector or RepetitionDetector()
    it = iter(deltas)
    try:
        for delta in it:
            if det.feed(delta):
                return
            yield delta
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def dedupe_sentences(text: str) -> str:
    """The text with each sentence kept once (first occurrence), and a trailing partial loop dropped."""
    seen, out = set(), []
    for s in SENT_END.split(text.strip()):
        key = _norm(s)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(s.strip())
    return " ".join(out)
