"""The LLM facade on the real packaged SmolLM2-135M (slow: loads the GGUF once per module)."""
from __future__ import annotations

import threading

import pytest

from engine.sampling import SamplingParams

pytestmark = pytest.mark.slow

PROMPTS = ["The capital of France is", "def add(a, b):", "Three primary colours are"]
GREEDY = SamplingParams(max_tokens=8)


def assert_same_or_parted_at_a_tie(llm, prompt: str, a: list[int], b: list[int], tie: float = 0.1) -> bool:
    """Greedy outputs equal, or equal up to a token where the model's two candidates are a near tie (int4 GEMMs
    round by row count: a batch of 3 and a lone row can flip a tie, e.g. 26.0710 vs 26.0703 on this prompt).
    -> whether they are equal."""
    import torch

    from engine.forward_context import DenseContext

    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if k is None:
        assert a == b
        return True
    ids = llm.tokenizer.encode(prompt) + a[:k]
    m = llm.engine.model
    with torch.inference_mode():
        h = m(torch.tensor(ids), torch.arange(len(ids)), DenseContext.for_model(m).next_step([len(ids)]))[-1:]
        logits = m.compute_logits(h)[0]
    assert abs(float(logits[a[k]] - logits[b[k]])) < tie, (k, a, b)
    return False


def test_batched_outputs_equal_single_request_outputs(smollm2_llm):
    batched = smollm2_llm.generate(PROMPTS, GREEDY)
    single = [smollm2_llm.generate([p], GREEDY)[0] for p in PROMPTS]
    same = [assert_same_or_parted_at_a_tie(smollm2_llm, p, x.token_ids, y.token_ids)
            for p, x, y in zip(PROMPTS, batched, single)]
    assert sum(same) >= 2
    assert [x.text for x, ok in zip(batched, same) if ok] == [y.text for y, ok in zip(single, same) if ok]
    assert batched[0].text.strip().startswith("Paris") and batched[0].finish_reason == "length"
    assert batched[0].prompt_tokens == len(smollm2_llm.tokenizer.encode(PROMPTS[0]))


def test_concurrent_callers_share_decode_steps(smollm2_llm):
    results: dict[int, list[int]] = {}
    start = threading.Barrier(len(PROMPTS))

    def call(i: int) -> None:
        start.wait()
        results[i] = smollm2_llm.generate([PROMPTS[i]], GREEDY)[0].token_ids

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(PROMPTS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    batched = smollm2_llm.generate(PROMPTS, GREEDY)
    for i, (p, o) in enumerate(zip(PROMPTS, batched)):  # batches of 1-3 rows: equal but for near ties
        assert_same_or_parted_at_a_tie(smollm2_llm, p, results[i], o.token_ids)
    assert smollm2_llm.stats()["peak_batch"] >= 2


def test_streaming_concatenation_equals_generate_and_closing_cancels(smollm2_llm):
    params = SamplingParams(max_tokens=12)
    assert "".join(smollm2_llm.stream(PROMPTS[1], params)) == smollm2_llm.generate([PROMPTS[1]], params)[0].text
    stream = smollm2_llm.stream(PROMPTS[2], SamplingParams(max_tokens=200))
    next(stream)
    stream.close()
    stats = smollm2_llm.stats()
    assert stats["running"] == 0 and stats["kv_blocks_used"] == 0


def test_sampling_seed_stop_strings_and_chat(smollm2_llm):
    hot = SamplingParams(max_tokens=10, temperature=0.9, top_p=0.9, top_k=40, seed=7)
    a, b = smollm2_llm.generate([PROMPTS[2], PROMPTS[2]], hot)
    assert a.token_ids == b.token_ids  # same seed, same draw, even in one batch
    full = smollm2_llm.generate([PROMPTS[0]], GREEDY)[0].text
    stop = full.strip()[2:4]
    cut = smollm2_llm.generate([PROMPTS[0]], SamplingParams(max_tokens=8, stop=[stop]))[0]
    assert cut.finish_reason == "stop" and stop not in cut.text and full.startswith(cut.text)
    reply = smollm2_llm.chat([{"role": "user", "content": "Say hello."}], SamplingParams(max_tokens=6))
    assert reply.text and reply.finish_reason in ("stop", "length")


def test_snapshot_fork_equals_fresh_prefill_on_the_real_model(smollm2_llm):
    tok = smollm2_llm.tokenizer
    doc = tok.encode("Contract 17: the supplier shall deliver 400 units by March 3. The penalty is 2% per week.")
    question = tok.encode(" Question: how many units? Answer:")
    info = smollm2_llm.create_snapshot("contract-17", doc)
    assert info.n_tokens == len(doc) and smollm2_llm.has_snapshot("contract-17")
    fork_out = "".join(smollm2_llm.stream(question, GREEDY, snapshot="contract-17"))
    fresh = smollm2_llm.generate([doc + question], GREEDY)[0].text
    assert fork_out == fresh
    assert smollm2_llm.drop_snapshot("contract-17") and not smollm2_llm.has_snapshot("contract-17")
    assert smollm2_llm.stats()["kv_blocks_used"] == 0


def test_closing_fresh_stream_iterators_cancels_them(smollm2_llm):
    """#14: closing an iterator before its first next() cancels the request (63 of 63 ran to max_tokens)."""
    import gc

    before = dict(smollm2_llm.stats()["finished"])
    streams = [smollm2_llm.stream(PROMPTS[i % 3], SamplingParams(max_tokens=200)) for i in range(20)]
    for s in streams:
        s.close()
    dropped = smollm2_llm.stream(PROMPTS[0], SamplingParams(max_tokens=200))
    del dropped  # never iterated, never closed: garbage collection cancels it
    gc.collect()
    after = smollm2_llm.stats()
    assert after["finished"].get("cancelled", 0) - before.get("cancelled", 0) == 21
    assert after["finished"].get("length", 0) == before.get("length", 0)  # none ran to max_tokens
    assert after["running"] == 0 and after["waiting"] == 0 and after["kv_blocks_used"] == 0
    assert list(streams[0]) == []
