import pytest


@pytest.fixture(scope="session")
def smollm2():
    """The packaged SmolLM2-135M-Instruct GGUF loaded once (fp32, CPU)."""
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    return load_model(packaged_llm_gguf())
