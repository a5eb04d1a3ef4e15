import pytest


@pytest.fixture(scope="session")
def smollm2():
    """The packaged SmolLM2-135M-Instruct GGUF dequantized to fp32, projections packed for oneDNN's GEMM on CPU
    (the exact path; the engine's default for quantized GGUF files, int4, is tested in tests/engine/test_quant_int4.py)."""
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf(), cpu_gemm="onednn")


@pytest.fixture(scope="session")
def smollm2_plain():
    """The same model on plain ``F.linear`` (what transformers runs), for comparisons against transformers."""
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf(), cpu_gemm="plain")


@pytest.fixture
def one_thread():
    """Token-by-token loops of small matmuls: on a loaded 2-core box a second OpenMP thread mostly waits
    for the first (and is many times slower when descheduled), so run them on one."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
