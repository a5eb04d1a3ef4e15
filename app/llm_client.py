"""The LLM behind the agent: the embedded engine (default) or any OpenAI-compatible server, both streaming.

``snapshot_key`` asks the model to keep the conversation's first (system) message as a reusable context:
on the embedded engine that is an engine snapshot, so a follow-up on the same dossier pays no prefill again;
an OpenAI-compatible server is sent the whole conversation (vLLM/SGLang reuse it by prefix caching).
"""
from __future__ import annotations

import json
import threading
from typing import Iterator, Optional, Protocol

import httpx


class ChatModel(Protocol):
    name: str
    max_model_len: int
    supports_sql: bool  # strong enough to write SQL (a larger model behind an OpenAI server)

    def stream(self, messages: list[dict], max_tokens: int, temperature: float = 0.0,
               snapshot_key: Optional[str] = None, cancel: Optional[threading.Event] = None) -> Iterator[str]: ...

    def complete(self, messages: list[dict], max_tokens: int, temperature: float = 0.0) -> str: ...

    def count_tokens(self, messages: list[dict]) -> int: ...

    def stats(self) -> dict: ...

    def close(self) -> None: ...


class EmbeddedChatModel:
    supports_sql = False

    def __init__(self, llm):
        self.llm = llm
        self.name = llm.model_name
        self.max_model_len = llm.max_model_len

    def count_tokens(self, messages: list[dict]) -> int:
        return len(self.llm.chat_prompt(messages))

    def _params(self, max_tokens: int, temperature: float):
        from engine.sampling import SamplingParams
        return SamplingParams(max_tokens=max_tokens, temperature=temperature)

    def stream(self, messages, max_tokens, temperature=0.0, snapshot_key=None, cancel=None) -> Iterator[str]:
        full = self.llm.chat_prompt(messages)
        prompt, snapshot = full, None
        if snapshot_key and messages and messages[0]["role"] == "system":
            prefix = self.llm.tokenizer.apply_chat_template(messages[:1], add_generation_prompt=False)
            if full[:len(prefix)] == prefix and len(prefix) < len(full):
                if not self.llm.has_snapshot(snapshot_key):
                    self.llm.create_snapshot(snapshot_key, prefix)
                prompt, snapshot = full[len(prefix):], snapshot_key
        deltas = self.llm.stream(prompt, self._params(max_tokens, temperature), snapshot=snapshot)
        try:
            for delta in deltas:
                if cancel is not None and cancel.is_set():
                    return
                yield delta
        finally:
            deltas.close()  # cancels the engine request if we stopped early

    def complete(self, messages, max_tokens, temperature=0.0) -> str:
        return self.llm.chat(messages, self._params(max_tokens, temperature)).text

    def stats(self) -> dict:
        return self.llm.stats()

    def close(self) -> None:
        self.llm.close()


class OpenAIChatModel:
    """Any OpenAI-compatible server (vLLM, SGLang, NIM); ``base_url`` with or without the trailing /v1."""
    supports_sql = True

    def __init__(self, base_url: str, model: str = "default", api_key: str = "", max_model_len: int = 8192,
                 timeout: float = 300.0, supports_sql: bool = True):
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") else base + "/v1"
        self.name, self.max_model_len, self.supports_sql = model, max_model_len, supports_sql
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def count_tokens(self, messages: list[dict]) -> int:
        return sum(len(m.get("content") or "") for m in messages) // 3 + 8 * len(messages)  # no tokenizer here

    def _body(self, messages, max_tokens, temperature, stream):
        return {"model": self.name, "messages": messages, "max_tokens": max_tokens, "temperature": temperature,
                "stream": stream}

    def stream(self, messages, max_tokens, temperature=0.0, snapshot_key=None, cancel=None) -> Iterator[str]:
        with self.client.stream("POST", "/chat/completions",
                                json=self._body(messages, max_tokens, temperature, True)) as resp:
            if resp.status_code != 200:
                raise RuntimeError(f"LLM server {self.base_url} answered {resp.status_code}: {resp.read()[:300]!r}")
            for line in resp.iter_lines():
                if cancel is not None and cancel.is_set():
                    return  # leaving the with-block closes the connection; the server cancels
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                event = json.loads(data)
                if "error" in event:
                    raise RuntimeError(f"LLM server error: {event['error']}")
                for choice in event.get("choices", []):
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        yield text

    def complete(self, messages, max_tokens, temperature=0.0) -> str:
        resp = self.client.post("/chat/completions", json=self._body(messages, max_tokens, temperature, False))
        if resp.status_code != 200:
            raise RuntimeError(f"LLM server {self.base_url} answered {resp.status_code}: {resp.text[:300]}")
        return resp.json()["choices"][0]["message"]["content"] or ""

    def stats(self) -> dict:
        return {"model": self.name, "remote": self.base_url, "max_model_len": self.max_model_len}

    def close(self) -> None:
        self.client.close()


def build_chat_model(settings):
    if settings.llm_base_url:
        return OpenAIChatModel(settings.llm_base_url, settings.llm_model_name, settings.llm_api_key,
                               settings.engine_max_model_len)
    from engine.llm import LLM
    llm = LLM(settings.resolved_llm_model, max_model_len=settings.engine_max_model_len,
              max_num_seqs=settings.engine_max_num_seqs, memory_gib=settings.engine_memory_cap_gib,
              kv_dtype=settings.engine_kv_dtype, chunk_tokens=settings.engine_chunk_tokens,
              device=settings.engine_device, speculative=settings.engine_speculative,
              dtype=settings.engine_torch_dtype, cpu_gemm=settings.engine_cpu_gemm,
              compile_decode=settings.engine_compile_decode,
              compile_cache_dir=settings.engine_compile_cache_dir or str(settings.data_dir / "compile_cache"))
    return EmbeddedChatModel(llm)
