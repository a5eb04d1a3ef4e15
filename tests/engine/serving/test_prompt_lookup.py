"""Prompt-lookup drafting without a model: the per-sequence n-gram index, drafts that follow the text and stop
where its earlier occurrences disagree, and bounded indexing of long prompts."""
import random

from engine.spec_decode import NgramIndex, PromptLookup


def test_a_repeated_phrase_is_drafted_until_the_text_disagrees():
    # "the party A pays" / "the party B pays": after "party" the letter differs, after "pays" it is "EUR"
    the, party, pays, eur, on, day = 10, 11, 12, 13, 14, 15
    text = [the, party, 1, pays, 7, eur, on, day, 3, the, party, 2, pays, 8, eur, on, day, 4]
    lookup = PromptLookup(k=4)
    assert lookup.propose(text + [the]) == [party]  # then "party" has been followed by 1 and by 2: stop
    assert lookup.propose(text + [the, party, 5, pays, 7]) == [eur, on, day]  # then 3 vs 4: stop
    assert lookup.propose(text + [the, party, 5]) == []  # "5" was never seen: nothing to copy
    assert lookup.propose([1, 2, 3, 4]) == []  # nothing repeats


def test_a_single_earlier_occurrence_is_copied_up_to_k():
    lookup = PromptLookup(k=3)
    text = [5, 6, 7, 8, 9, 1, 2, 5, 6]
    assert lookup.propose(text) == [7, 8, 9]
    assert lookup.propose(text, k=1) == [7]
    assert lookup.propose(text, k=0) == []


def test_the_incremental_index_equals_a_fresh_one():
    rng = random.Random(0)
    tokens = [rng.randrange(6) for _ in range(300)]
    lookup, index = PromptLookup(k=5), NgramIndex(1, 3)
    for end in range(2, len(tokens)):
        kept = lookup.propose(tokens[:end], index=index)
        assert kept == lookup.propose(tokens[:end]), end  # a throwaway index built from scratch


def test_long_prompts_index_only_a_window_with_bounded_positions():
    tokens = [i % 50 for i in range(100_000)]
    index = NgramIndex(1, 3, keep=4, window=1000)
    index.update(tokens)
    assert sum(len(p) for p in index.tables[1].values()) <= 1000
    assert all(len(p) <= 4 and min(p) >= 99_000 for p in index.tables[3].values())
    assert PromptLookup(k=4).propose(tokens, index=index) == [0, 1, 2, 3]
