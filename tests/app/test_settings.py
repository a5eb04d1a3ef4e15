"""The one settings object reads LEXICON_ variables and refuses values the engine cannot take."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.settings import Settings


def test_engine_cpu_gemm_comes_from_the_environment(monkeypatch):
    assert Settings().engine_cpu_gemm == "auto"
    monkeypatch.setenv("LEXICON_ENGINE_CPU_GEMM", "onednn")
    assert Settings().engine_cpu_gemm == "onednn"
    monkeypatch.setenv("LEXICON_ENGINE_CPU_GEMM", "int3")
    with pytest.raises(ValidationError, match="engine_cpu_gemm"):
        Settings()


def test_the_engine_loads_with_the_gemm_the_settings_name(monkeypatch):
    """The packaged GGUF with ``onednn`` keeps no 4-bit weight; with ``auto`` its projections are int4."""
    from engine.loader import resolve_cpu_gemm

    path = Settings().resolved_llm_model
    assert resolve_cpu_gemm(path, "cpu", Settings(engine_cpu_gemm="onednn").engine_cpu_gemm) == "onednn"
    assert resolve_cpu_gemm(path, "cpu", Settings().engine_cpu_gemm) == "int4"
