"""Incremental detokenization decodes only the new tokens (plus a one-step window) and its deltas add up to
exactly one full decode, on the real SmolLM2 tokenizer: unicode (accents, CJK, emoji split over byte tokens),
numbers, whitespace runs, random token ids (invalid UTF-8 pieces) and several tokens per step (speculative
decoding). A stop string still cuts the text and never leaks a prefix."""
from __future__ import annotations

import random

import pytest

from engine.detokenizer import IncrementalDecoder, IncrementalText

TEXTS = [
    "The liability cap is $1,250,000.00 (one million two hundred fifty thousand dollars).",
    "Café déjà vu — naïve façade; Straße; Ελληνικά; русский текст.",
    "合同第十七条：供应商应于三月三日前交付400件。违约金为每周2%。",
    "Emoji 😀👍🏽 and flags 🇫🇷🇩🇪, math ∑∫√∞ ≤ ≥, arrows ⇒ ←.",
    "  leading spaces,\n\n\ttabs\tand   runs of   spaces\r\n",
    "日本語のテキストと한국어 텍스트, mixed with English.",
]


@pytest.fixture(scope="module")
def tokenizer():
    from app.settings import packaged_llm_gguf
    from engine.tokenizer import Tokenizer

    return Tokenizer.from_gguf(packaged_llm_gguf())


class CountingTokenizer:
    """The real tokenizer, counting how many token ids each step decodes."""

    def __init__(self, tok):
        self.tok, self.decoded = tok, 0

    def decode(self, ids, skip_special_tokens=True):
        self.decoded += len(ids)
        return self.tok.decode(ids, skip_special_tokens=skip_special_tokens)


def stream(tok, ids: list[int], chunks: list[int]) -> list[str]:
    dec, out, n = IncrementalDecoder(tok), [], 0
    for size in chunks:
        n = min(len(ids), n + size)
        out.append(dec.step(ids[:n], finished=n == len(ids)))
    return out


@pytest.mark.parametrize("text", TEXTS)
def test_deltas_add_up_to_the_full_decode(tokenizer, text):
    ids = tokenizer.encode(text)
    full = tokenizer.decode(ids)
    assert "".join(stream(tokenizer, ids, [1] * len(ids))) == full
    rng = random.Random(len(text))
    chunks = [rng.randint(1, 5) for _ in range(len(ids))]  # drafts accepted several at a time
    assert "".join(stream(tokenizer, ids, chunks)) == full
    deltas = stream(tokenizer, ids, [1] * len(ids))
    assert all("\ufffd" not in d for d in deltas)  # never half a character


def test_random_token_ids_incl_invalid_utf8_pieces(tokenizer):
    rng = random.Random(7)
    for trial in range(20):
        ids = [rng.randrange(tokenizer.vocab_size) for _ in range(60)]
        assert "".join(stream(tokenizer, ids, [1] * 60)) == tokenizer.decode(ids), trial


def test_only_the_new_tokens_are_decoded(tokenizer):
    ids = tokenizer.encode(" ".join(TEXTS) * 8)
    counting = CountingTokenizer(tokenizer)
    "".join(stream(counting, ids, [1] * len(ids)))
    assert len(ids) > 500
    assert counting.decoded < 8 * len(ids)  # a full decode per step would be ~len(ids)^2 / 2


def test_stop_strings_cut_and_never_leak_a_prefix(tokenizer):
    ids = tokenizer.encode("Answer: 42. END of the answer")
    text = IncrementalText(["END"], tokenizer)
    shown, hit_at = "", None
    for n in range(1, len(ids) + 1):
        delta, hit = text.update_ids(ids[:n], n == len(ids))
        shown += delta
        assert "E" not in shown.replace("Answer", "")
        if hit:
            hit_at = n
            break
    assert hit_at is not None and shown == "Answer: 42. " and text.text == shown
