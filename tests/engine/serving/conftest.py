"""Fixtures: a tiny random hybrid model (Mamba2 + attention + MLP + MoE, no weight file) and the real SmolLM2."""
from __future__ import annotations

import pytest
import torch
from hybrid_fixtures import random_hybrid, tiny_hybrid_config


@pytest.fixture(scope="module")
def tiny_hybrid():
    # Tiny matmuls are dominated by OpenMP thread hand-off on a loaded 2-core box: run them on one thread.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield random_hybrid(tiny_hybrid_config())
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def smollm2_llm():
    from app.settings import packaged_llm_gguf
    from engine.llm import LLM

    llm = LLM(packaged_llm_gguf(), max_model_len=1024, max_num_seqs=4, memory_gib=2.0, kv_dtype="float32",
              chunk_tokens=64)
    yield llm
    llm.close()
