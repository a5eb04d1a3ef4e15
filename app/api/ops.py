"""/health and Prometheus /metrics (request counts and latencies per route, engine gauges)."""
from __future__ import annotations

import time
from typing import Optional

from fastapi import APIRouter, Depends, HTTPException, Request, Response, Security
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from app.api.deps import api_key_header, bearer

router = APIRouter(tags=["ops"])
ENGINE_GAUGES = ("running", "waiting", "kv_blocks_used", "kv_blocks_total", "mamba_slots_used", "mamba_slots_total",
                 "snapshots", "tokens_per_s", "generated_tokens", "compiled_decode_ready")


class Metrics:
    """One registry per app, so several apps in one process (tests) never collide."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter("lexicon_http_requests", "HTTP requests", ["method", "route", "status"],
                                registry=self.registry)
        self.latency = Histogram("lexicon_http_request_seconds", "HTTP request latency", ["route"],
                                 registry=self.registry)
        self.engine = Gauge("lexicon_engine", "engine scheduler and memory numbers", ["stat"], registry=self.registry)

    async def middleware(self, request: Request, call_next):
        start = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", None) or ("/ui" if request.url.path.startswith("/ui")
                                                                      else "unmatched")
        self.requests.labels(request.method, route, str(response.status_code)).inc()
        self.latency.labels(route).observe(time.perf_counter() - start)
        return response


@router.get("/health", summary="Liveness, what is loaded and how full the request queues are")
async def health(request: Request) -> dict:
    """Answered on the event loop without a lock, a thread or I/O, so it stays fast under any load."""
    service = request.app.state.service
    gates = getattr(request.app.state, "gates", {})
    return {"status": "ok", "model_loaded": service._model is not None,
            "llm": service.settings.llm_base_url or "embedded",
            "queues": {name: gate.stats() for name, gate in gates.items()},
            "ingest_waiting": service.ingest_waiting() if hasattr(service, "ingest_waiting") else 0}


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def metrics_caller(request: Request, key: Optional[str] = Security(api_key_header),
                   token: Optional[HTTPAuthorizationCredentials] = Security(bearer)) -> None:
    """/metrics counts every tenant's requests per route: it needs an API key (any tenant's), unless
    ``settings.metrics_access`` is "localhost" and the caller is on the loopback interface."""
    service = request.app.state.service
    if getattr(service.settings, "metrics_access", "key") == "localhost" and request.client \
            and request.client.host in LOOPBACK:
        return
    if not service.tenant_for_key(key or (token.credentials if token else None)):
        raise HTTPException(401, "/metrics needs an API key (X-API-Key or Authorization: Bearer), or "
                                 "LEXICON_METRICS_ACCESS=localhost for scrapers on this host",
                            headers={"WWW-Authenticate": "Bearer"})


@router.get("/metrics", summary="Prometheus metrics (needs an API key; see LEXICON_METRICS_ACCESS)",
            response_class=Response, dependencies=[Depends(metrics_caller)])
def metrics(request: Request) -> Response:
    m: Metrics = request.app.state.metrics
    stats = request.app.state.service.engine_stats()
    for key in ENGINE_GAUGES:
        if isinstance(stats.get(key), (int, float)):
            m.engine.labels(key).set(stats[key])
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
