"""The REST API over real HTTP (uvicorn on a free 127.0.0.1 port): auth, validation, limits, tenants,
upload -> job -> documents, streamed answers, threads, batch jobs, the engine's /v1 routes, ops routes."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from ingest.samples import SAMPLE_FACTS, write_msa_pdf

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from live_server import LiveServer, free_port  # tests/live_server.py

pytestmark = pytest.mark.slow
A, B = {"X-API-Key": "key-acme"}, {"Authorization": "Bearer key-globex"}
MSA = SAMPLE_FACTS["msa"]["filename"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from app.server import create_app

    settings = small_settings(tmp_path_factory.mktemp("api-data"), max_file_mb=1,
                              api_keys={"key-acme": "acme", "key-globex": "globex"})
    server = LiveServer(create_app(settings), free_port()).start()
    server.settings = settings
    yield server
    server.stop()


@pytest.fixture(scope="module")
def base_url(live):
    return live.url


@pytest.fixture(scope="module")
def client(base_url):
    with httpx.Client(base_url=base_url, timeout=300) as c:
        yield c


@pytest.fixture(scope="module")
def acme_doc(client, tmp_path_factory) -> dict:
    """The sample MSA uploaded by tenant acme and ingested by the background job."""
    pdf = write_msa_pdf(tmp_path_factory.mktemp("upload") / MSA)
    r = client.post("/api/documents", headers=A, files={"file": (MSA, pdf.read_bytes(), "application/pdf")})
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    for _ in range(600):
        job = client.get(f"/api/jobs/{job_id}", headers=A).json()
        if job["status"] == "done":
            break
        time.sleep(0.1)
    assert job["status"] == "done" and job["documents"][0]["status"] == "ingested", job
    return {"job_id": job_id, "doc_id": job["documents"][0]["doc_id"]}


@pytest.mark.parametrize("method,path", [("get", "/api/documents"), ("get", "/api/jobs"), ("post", "/api/ask"),
                                         ("get", "/api/threads"), ("delete", "/api/documents/x"),
                                         ("post", "/api/batch"), ("get", "/v1/models")])
def test_wrong_or_missing_key_is_401(client, method, path):
    for headers in ({}, {"X-API-Key": "nope"}, {"Authorization": "Bearer nope"}):
        r = client.request(method, path, headers=headers, json={"question": "x"})
        assert r.status_code == 401, (path, headers, r.text)


def test_malformed_requests_get_422_with_a_clear_message(client):
    r = client.post("/api/ask", headers=A, json={"question": "", "mode": "auto"})
    assert r.status_code == 422 and "question" in r.json()["detail"]
    r = client.post("/api/ask", headers=A, json={"question": "hi", "mode": "telepathy"})
    assert r.status_code == 422 and "mode" in r.json()["detail"]
    r = client.post("/api/ask", headers=A, json={"question": "   "})
    assert r.status_code == 422 and "empty" in r.json()["detail"]
    r = client.post("/api/documents", headers=A)  # no file part
    assert r.status_code == 422 and "file" in r.json()["detail"]


def test_oversized_upload_is_413(client):
    r = client.post("/api/documents", headers=A, files={"file": ("big.txt", b"x" * (1024 * 1024 + 10), "text/plain")})
    assert r.status_code == 413 and "1 MB" in r.json()["detail"]


def test_upload_job_and_documents_are_per_tenant(client, acme_doc):
    docs = client.get("/api/documents", headers=A).json()
    assert [(d["filename"], d["pages"]) for d in docs] == [(MSA, SAMPLE_FACTS["msa"]["pages"])]
    assert client.get("/api/documents", headers=B).json() == []
    assert client.get(f"/api/jobs/{acme_doc['job_id']}", headers=B).status_code == 404
    assert acme_doc["job_id"] in [j["job_id"] for j in client.get("/api/jobs", headers=A).json()]
    assert client.get("/api/jobs", headers=B).json() == []
    assert client.delete(f"/api/documents/{acme_doc['doc_id']}", headers=B).status_code == 404
    r = client.post("/api/ask", headers=B, json={"question": "What is the liability cap?", "mode": "rag"})
    assert r.status_code == 200 and r.json()["supported"] is False and r.json()["citations"] == []


def test_ask_streams_tokens_then_a_cited_final_answer(client, acme_doc):
    events = []
    with client.stream("POST", "/api/ask", headers=A, json={"question": "How many days of notice are needed to "
                       "terminate the agreement?", "mode": "rag", "stream": True, "thread_id": "t-1"}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    assert [e["type"] for e in events[:2]] == ["token", "token"] and events[-1]["type"] == "final"
    final = events[-1]["answer"]
    assert final["thread_id"] == "t-1" and final["supported"]
    assert any("sixty (60) days" in c["quote"] and c["doc_id"] == acme_doc["doc_id"] for c in final["citations"])


def test_threads_are_per_tenant(client, acme_doc):
    r = client.post("/api/ask", headers=A, json={"question": "Which law governs this agreement?", "mode": "rag",
                                                 "thread_id": "t-2"})
    assert r.status_code == 200 and r.json()["thread_id"] == "t-2"
    history = client.get("/api/threads/t-2", headers=A).json()
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert "t-2" in client.get("/api/threads", headers=A).json()
    assert client.get("/api/threads/t-2", headers=B).status_code == 404
    assert "t-2" not in client.get("/api/threads", headers=B).json()


def test_batch_job_over_the_api(client, acme_doc):
    r = client.post("/api/batch", headers=A, json={"questions": ["Which law governs this agreement?"]})
    assert r.status_code == 202
    job_id = r.json()["id"]
    assert client.get(f"/api/batch/{job_id}", headers=B).status_code == 404
    for _ in range(600):
        job = client.get(f"/api/batch/{job_id}", headers=A).json()
        if job["status"] not in ("pending", "running"):
            break
        time.sleep(0.2)
    assert job["status"] == "done" and job["total"] == 1 and len(job["rows"]) == 1, job
    assert job["done"] == 1 and job["progress"] == 1.0 and job["rows"][0]["route"] == "rag"
    assert job["rows"][0]["document"] == MSA and any("New York" in c["quote"] for c in job["rows"][0]["citations"])


def test_engine_v1_routes_stream_through_the_openai_client(base_url):
    from app.llm_client import OpenAIChatModel

    model = OpenAIChatModel(base_url, api_key="key-globex")
    messages = [{"role": "user", "content": "Say hello."}]
    try:
        streamed = "".join(model.stream(messages, max_tokens=8))
        assert streamed and streamed == model.complete(messages, max_tokens=8)  # greedy: same text
    finally:
        model.close()


def test_health_and_metrics(client, live):
    assert client.get("/health").json()["status"] == "ok"
    for headers in ({}, {"X-API-Key": "nope"}):  # request counts per route are not for anyone who asks
        r = client.get("/metrics", headers=headers)
        assert r.status_code == 401 and "LEXICON_METRICS_ACCESS" in r.json()["detail"], r.text
    text = client.get("/metrics", headers=B).text  # any tenant's key
    assert 'lexicon_http_requests_total{method="POST",route="/api/ask",status="200"}' in text
    assert 'lexicon_engine{stat="kv_blocks_total"}' in text
    spec = client.get("/openapi.json").json()
    assert {"/api/ask", "/api/documents", "/api/jobs/{job_id}", "/v1/chat/completions"} <= set(spec["paths"])


def test_metrics_can_be_opened_to_this_host_only(client, live):
    """LEXICON_METRICS_ACCESS=localhost: a scraper on the loopback interface needs no key (this client is one)."""
    live.settings.metrics_access = "localhost"
    try:
        assert client.get("/metrics").status_code == 200
    finally:
        live.settings.metrics_access = "key"
    assert client.get("/metrics").status_code == 401
