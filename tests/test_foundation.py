import subprocess
import sys

from app.settings import Settings, packaged_embedding_model, packaged_llm_gguf


def test_packaged_models_are_installed():
    assert (packaged_embedding_model() / "model.safetensors").is_file()
    gguf = packaged_llm_gguf()
    assert gguf.suffix == ".gguf" and gguf.stat().st_size > 50_000_000


def test_settings_env_prefix(monkeypatch, tmp_path):
    monkeypatch.setenv("LEXICON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LEXICON_API_KEYS", '{"k1": "acme"}')
    s = Settings()
    assert s.data_dir == tmp_path
    assert s.api_keys == {"k1": "acme"}
    assert s.resolved_database_url.startswith("sqlite:///") and str(tmp_path) in s.resolved_database_url
    monkeypatch.setenv("LEXICON_DATABASE_URL", "postgresql+psycopg://127.0.0.1:5432/test")
    assert Settings().resolved_database_url.startswith("postgresql")


def test_cli_lists_subcommands():
    out = subprocess.run([sys.executable, "-m", "app.cli", "--help"], capture_output=True, text=True, check=True).stdout
    for cmd in ("serve", "ingest", "ask", "batch", "plan", "bench"):
        assert cmd in out
