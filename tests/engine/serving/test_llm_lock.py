"""The LLM facade's loop lets callers in between steps: a request submitted while the engine is busy is
admitted at the next step boundary, not after the loop happens to lose the lock race (it kept 7 of 8
concurrent submitters out for 5 steps before)."""
from __future__ import annotations

import threading
import time

import torch

from engine.llm import LLM
from engine.sampling import SamplingParams


def test_callers_enter_at_the_next_step_boundary(tiny_hybrid):
    llm = LLM(None, max_model_len=256, max_num_seqs=4, memory_gib=0.05, kv_dtype="float32", chunk_tokens=32,
              loaded=tiny_hybrid)
    steps = 0
    real_step = llm.engine.step

    def heavy_step():  # a step that holds the engine lock for a while, like a real prefill chunk
        nonlocal steps
        x = torch.randn(256, 256)
        for _ in range(30):
            x = torch.tanh(x @ x)
        steps += 1
        return real_step()

    llm.engine.step = heavy_step
    try:
        busy = llm.submit(list(range(1, 40)), SamplingParams(max_tokens=200, ignore_eos=True))
        time.sleep(0.1)
        waits = []

        def submit_one(i: int) -> None:
            before = steps
            llm.submit([1 + i, 2, 3], SamplingParams(max_tokens=2, ignore_eos=True))
            waits.append(steps - before)

        threads = [threading.Thread(target=submit_one, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert max(waits) <= 2, waits
        busy.result()
    finally:
        llm.close()
