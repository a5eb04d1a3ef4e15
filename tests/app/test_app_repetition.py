"""The loop guard: generation stops (and the source is closed, cancelling it) once the text repeats."""
from __future__ import annotations

from app.agent.repetition import RepetitionDetector, dedupe_sentences, guarded


def test_a_looping_stream_is_stopped_and_closed():
    closed = []

    def looping():
        try:
            yield "The agreement runs for three years. "
            for _ in range(50):
                yield "The supplier must deliver the goods on time. "
        finally:
            closed.append(True)

    text = "".join(guarded(looping()))
    assert text.count("deliver the goods") == 1
    assert closed == [True]


def test_text_without_repeats_passes_whole():
    parts = ["Fees are due within thirty days. ", "Either party may terminate on notice. ", "The law of Delaware applies."]
    assert "".join(guarded(iter(parts))) == "".join(parts)


def test_ngram_repeats_inside_one_sentence_are_caught():
    det = RepetitionDetector(ngram=4, max_repeats=3)
    assert det.feed("pay the fee and " * 2) is False
    assert det.feed("pay the fee and ") is True


def test_dedupe_keeps_first_occurrences():
    assert dedupe_sentences("A term of two years applies. Fees are fixed. A term of two years applies.") == \
        "A term of two years applies. Fees are fixed."
