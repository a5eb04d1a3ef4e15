"""/health and Prometheus /metrics (request counts and latencies per route, engine gauges)."""
from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(request: Request) -> Response:
    m: Metrics = request.app.state.metrics
    stats = request.app.state.service.engine_stats()
    for key in ENGINE_GAUGES:
        if isinstance(stats.get(key), (int, float)):
            m.engine.labels(key).set(stats[key])
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
