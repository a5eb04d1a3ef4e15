import pytest


@pytest.fixture(scope="session")
def smollm2():
    """The packaged SmolLM2-135M-Instruct GGUF as the engine loads it by default (fp32 activations,
    fbgemm fp16-packed projection weights on CPU)."""
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf())


@pytest.fixture(scope="session")
def smollm2_exact():
    """The same model with exact fp32 weights, for comparisons against transformers."""
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf(), cpu_fp16_weights=False)
