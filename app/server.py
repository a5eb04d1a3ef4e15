"""The one FastAPI app: REST API, the engine's OpenAI-compatible /v1 routes and the Gradio UI at /ui."""
from __future__ import annotations

import importlib.util
import re
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Optional

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from starlette.concurrency import run_in_threadpool

from app.api import ask, batch, documents, ops, playbook
from app.api.backpressure import Backpressure, default_rules, gates_from_settings
from app.api.deps import tenant
from app.batch_jobs import BatchJobs
from app.service import Busy, LexiconService


class _LazyLLM:
    """Stands in for the engine ``LLM`` in the /v1 router until the first request loads the weights."""

    def __init__(self, service):
        self._service = service

    def __getattr__(self, name):
        return getattr(self._service.llm, name)

    @property
    def model_name(self) -> str:
        """A model id clients can send back: ``SmolLM2-135M-Instruct`` style names become a lower-case slug."""
        return model_slug(self._service.llm.model_name)


def model_slug(name: str) -> str:
    """``"Smollm2 135M 8k Lc100K Mix1 Ep2"`` -> ``"smollm2-135m-8k-lc100k-mix1-ep2"``; paths keep their stem."""
    name = Path(str(name)).stem if "/" in str(name) or str(name).endswith(".gguf") else str(name)
    return re.sub(r"[^a-z0-9._]+", "-", name.lower()).strip("-.") or "model"


class _ModelFirst:
    """ASGI middleware: a /v1 request waits (off the event loop) for the weights before the router sees it."""

    def __init__(self, app, service):
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith("/v1/") and self.service._model is None:
            await run_in_threadpool(self.service.chat_model)
        await self.app(scope, receive, send)


def _busy(request: Request, exc: Busy) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after)})


MAX_ERRORS, MAX_ECHO = 10, 200  # a 422 names what is wrong; it never echoes a 100 KB input back


def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    message = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
                        for e in errors[:MAX_ERRORS])
    if len(errors) > MAX_ERRORS:
        message += f"; and {len(errors) - MAX_ERRORS} more"
    return JSONResponse({"detail": f"invalid request: {_clip(message)}", "errors": short_errors(errors)},
                        status_code=422)


def _clip(value, limit: int = MAX_ECHO):
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}… ({len(value):,} characters)"
    return value


def short_errors(errors) -> list[dict]:
    """Pydantic's error list without the request body: ``input`` only when it is short, no ``ctx`` objects."""
    out = []
    for e in errors[:MAX_ERRORS]:
        item = {"type": e.get("type"), "loc": [str(p) for p in e.get("loc", ())], "msg": _clip(str(e.get("msg")))}
        value = e.get("input")
        if isinstance(value, (str, bytes)) and len(value) <= MAX_ECHO or isinstance(value, (int, float, bool)):
            item["input"] = _clip(value)
        elif value is not None:
            item["input_size"] = len(value) if hasattr(value, "__len__") else None
        out.append(item)
    return out


def create_app(settings, service=None) -> FastAPI:
    own = service is None
    service = service or LexiconService(settings)

    @asynccontextmanager
    async def lifespan(_app):
        service.resume_ingest_jobs()  # ingest jobs a crash or kill left open
        app.state.batch_jobs.resume()  # batch jobs a crash or restart left unfinished
        yield
        app.state.batch_jobs.close()
        if own:
            service.close()

    app = FastAPI(title="lexicon-rag", version="0.1.0", lifespan=lifespan,
                  description="Long-context RAG for legal and financial documents. Every /api and /v1 route needs "
                              "an API key (X-API-Key or Authorization: Bearer); the key decides the tenant.")
    app.state.service = service
    app.state.metrics = ops.Metrics()
    app.state.batch_jobs = BatchJobs(service)
    app.state.gates = gates_from_settings(settings)
    if not settings.llm_base_url:  # /v1 calls the engine from the event loop: load it off the loop first
        app.add_middleware(_ModelFirst, service=service)
    app.add_middleware(Backpressure, rules=default_rules(app.state.gates))
    app.middleware("http")(app.state.metrics.middleware)  # outermost: counts the 429s too
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Busy, _busy)
    app.include_router(ops.router)
    app.include_router(documents.router)
    app.include_router(ask.router)
    app.include_router(batch.router)
    app.include_router(playbook.router)
    if not settings.llm_base_url:
        from engine.api.openai_server import openai_router
        app.include_router(openai_router(_LazyLLM(service), owner=lambda r: r.state.tenant),  # snapshots per tenant
                           tags=["engine"], dependencies=[Depends(tenant)])
    if importlib.util.find_spec("ui") and importlib.util.find_spec("ui.web"):
        import gradio as gr
        from ui.web import build_ui
        # no run history: Gradio would keep every call's inputs (the API key, questions) and outputs in the
        # browser, where the next person using it (another tenant) finds them
        app = gr.mount_gradio_app(app, build_ui(service), path="/ui", run_history=False)
    return app


def serve(settings, samples: bool = False, host: Optional[str] = None, port: Optional[int] = None) -> None:
    import uvicorn

    from app.remote import remove_server_file, write_server_file

    service = LexiconService(settings)
    host, port = host or settings.host, port or settings.port
    write_server_file(settings, host, port)  # `lexicon ingest/ask/batch` on this data dir go through this server
    if samples:  # into the first key's tenant, as "[sample] <file>": never a user's document (app/samples.py)
        from app.samples import load_samples
        job = load_samples(service)
        changed = sum(d["status"] == "ingested" for d in job["documents"])
        print(f"sample corpus: {job['done']} files for tenant {job['tenant']!r} (key {job['key']}; {changed} new "
              f"or changed, {job['failed']} failed)")
    app = create_app(settings, service)
    key = next(iter(settings.api_keys), None)
    print(f"lexicon on http://{host}:{port}/ui  (REST docs: http://{host}:{port}/docs"
          + (f"; API key for tenant {settings.api_keys[key]!r}: {key})" if key else ")"))
    try:
        uvicorn.run(app, host=host, port=port, log_level="info")
    finally:
        remove_server_file(settings)
        service.close()
