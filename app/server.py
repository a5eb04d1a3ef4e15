"""The one FastAPI app: REST API, the engine's OpenAI-compatible /v1 routes and the Gradio UI at /ui."""
from __future__ import annotations

import importlib.util
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Optional

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.api import ask, batch, documents, ops
from app.api.deps import tenant
from app.batch import BatchJobs


class _LazyLLM:
    """Stands in for the engine ``LLM`` in the /v1 router until the first request loads the weights."""

    def __init__(self, service):
        self._service = service

    def __getattr__(self, name):
        return getattr(self._service.llm, name)


def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    message = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
                        for e in errors)
    return JSONResponse({"detail": f"invalid request: {message}", "errors": jsonable(errors)}, status_code=422)


def jsonable(errors):
    from fastapi.encoders import jsonable_encoder
    return jsonable_encoder(errors, custom_encoder={Exception: str, bytes: lambda b: b.decode("utf-8", "replace")})


def create_app(settings, service=None) -> FastAPI:
    from app.service import LexiconService

    own = service is None
    service = service or LexiconService(settings)

    @asynccontextmanager
    async def lifespan(_app):
        service.resume_ingest_jobs()  # ingest jobs a crash or kill left open
        yield
        if own:
            service.close()

    app = FastAPI(title="lexicon-rag", version="0.1.0", lifespan=lifespan,
                  description="Long-context RAG for legal and financial documents. Every /api and /v1 route needs "
                              "an API key (X-API-Key or Authorization: Bearer); the key decides the tenant.")
    app.state.service = service
    app.state.metrics = ops.Metrics()
    app.state.batch_jobs = BatchJobs(service)
    app.middleware("http")(app.state.metrics.middleware)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.include_router(ops.router)
    app.include_router(documents.router)
    app.include_router(ask.router)
    app.include_router(batch.router)
    if not settings.llm_base_url:
        from engine.api.openai_server import openai_router
        app.include_router(openai_router(_LazyLLM(service)), tags=["engine"], dependencies=[Depends(tenant)])
    if importlib.util.find_spec("ui") and importlib.util.find_spec("ui.web"):
        import gradio as gr
        from ui.web import build_ui
        app = gr.mount_gradio_app(app, build_ui(service), path="/ui")
    return app


def serve(settings, samples: bool = False, host: Optional[str] = None, port: Optional[int] = None) -> None:
    import uvicorn

    from app.service import LexiconService

    service = LexiconService(settings)
    if samples:
        from ingest.samples import write_sample_corpus
        paths = write_sample_corpus(Path(settings.data_dir) / "samples")
        job = service.ingest_paths("demo", paths)
        print(f"sample corpus: {job['done']} files for tenant 'demo' ({job['failed']} failed)")
    app = create_app(settings, service)
    host, port = host or settings.host, port or settings.port
    key = next(iter(settings.api_keys), None)
    print(f"lexicon on http://{host}:{port}/ui  (REST docs: http://{host}:{port}/docs"
          + (f"; API key for tenant {settings.api_keys[key]!r}: {key})" if key else ")"))
    try:
        uvicorn.run(app, host=host, port=port, log_level="info")
    finally:
        service.close()
