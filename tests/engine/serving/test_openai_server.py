"""The OpenAI-compatible routes over real HTTP (uvicorn on a free 127.0.0.1 port) with the real SmolLM2."""
from __future__ import annotations

import json
import time

import httpx
import pytest
from fastapi import FastAPI

from engine.api.openai_server import openai_router
from engine.sampling import SamplingParams
from live_server import LiveServer, free_port  # tests/live_server.py

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base_url(smollm2_llm):
    app = FastAPI()
    app.include_router(openai_router(smollm2_llm))
    server = LiveServer(app, free_port()).start(timeout=20)
    yield server.url
    server.stop()


def test_models_and_completions(base_url, smollm2_llm):
    models = httpx.get(f"{base_url}/v1/models").json()
    assert models["data"][0]["id"] == smollm2_llm.model_name
    r = httpx.post(f"{base_url}/v1/completions", json={"prompt": "The capital of France is", "max_tokens": 6},
                   timeout=60)
    body = r.json()
    expect = smollm2_llm.generate(["The capital of France is"], SamplingParams(max_tokens=6))[0]
    assert r.status_code == 200 and body["choices"][0]["text"] == expect.text
    assert body["usage"]["completion_tokens"] == 6 and body["choices"][0]["finish_reason"] == "length"
    bad = httpx.post(f"{base_url}/v1/completions", json={"prompt": "x", "max_tokens": 10_000}, timeout=30)
    assert bad.status_code == 400 and "max_model_len" in bad.json()["detail"]


def test_chat_streaming_matches_non_streaming(base_url):
    req = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8}
    whole = httpx.post(f"{base_url}/v1/chat/completions", json=req, timeout=60).json()
    text, finish = "", None
    with httpx.stream("POST", f"{base_url}/v1/chat/completions", json={**req, "stream": True}, timeout=60) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [ln for ln in r.iter_lines() if ln.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    for ln in lines[:-1]:
        choice = json.loads(ln[6:])["choices"][0]
        text += choice["delta"].get("content", "")
        finish = choice["finish_reason"] or finish
    assert text == whole["choices"][0]["message"]["content"] and text
    assert finish == whole["choices"][0]["finish_reason"]


def test_client_disconnect_cancels_the_request(base_url, smollm2_llm):
    req = {"prompt": "Write a long story about a lighthouse keeper.", "max_tokens": 400, "stream": True,
           "ignore_eos": True}
    cancelled = smollm2_llm.stats()["finished"].get("cancelled", 0)
    with httpx.stream("POST", f"{base_url}/v1/completions", json=req, timeout=60) as r:
        for ln in r.iter_lines():
            if ln.startswith("data: "):
                break  # got the first token; leaving the block drops the connection
    deadline = time.time() + 15  # 400 tokens would take far longer than this on this CPU
    while time.time() < deadline and smollm2_llm.stats()["running"]:
        time.sleep(0.1)
    stats = smollm2_llm.stats()
    assert stats["running"] == 0 and stats["kv_blocks_used"] == 0
    assert stats["finished"].get("cancelled", 0) == cancelled + 1, stats
