"""OpenAI-compatible routes over an ``LLM``: /v1/chat/completions (SSE streaming), /v1/completions, /v1/models.

Extensions (as in vLLM): ``top_k``, ``ignore_eos`` and ``snapshot`` (the name of a context snapshot the prompt continues). A client that
disconnects cancels its request: its blocks and state slot are freed at once.

Snapshots are owned: with ``owner`` (request -> the caller's tenant, as the app passes it), a ``snapshot`` name
is resolved only inside the caller's namespace (``engine.snapshot.owned_name``), and an unknown name and
another owner's name get the same 404. Without ``owner`` the router must not serve more than one party.
"""
from __future__ import annotations

import asyncio
import json
import queue
import time
import uuid
from typing import Callable, Optional, Union

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from engine.llm import LLM
from engine.llm_engine import RequestOutput
from engine.sampling import SamplingParams
from engine.scheduler import QueueFull, RequestTooLarge
from engine.snapshot import owned_name


class _Common(BaseModel):
    model: Optional[str] = None
    max_tokens: Optional[int] = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int = Field(default=0, ge=0)
    seed: Optional[int] = None
    stop: Union[str, list[str], None] = None
    stream: bool = False
    n: int = Field(default=1, ge=1, le=1)
    snapshot: Optional[str] = None
    ignore_eos: bool = False

    def params(self, default_max: int) -> SamplingParams:
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return SamplingParams(max_tokens=self.max_tokens or default_max, temperature=self.temperature,
                              top_p=self.top_p, top_k=self.top_k, seed=self.seed, stop=stop,
                              ignore_eos=self.ignore_eos)


class ChatRequest(_Common):
    messages: list[dict]


class CompletionRequest(_Common):
    prompt: Union[str, list[int]]


def _usage(out: RequestOutput) -> dict:
    n = len(out.token_ids)
    return {"prompt_tokens": out.prompt_tokens, "completion_tokens": n, "total_tokens": out.prompt_tokens + n}


def openai_router(llm: LLM, owner: Optional[Callable[[Request], Optional[str]]] = None) -> APIRouter:
    router = APIRouter()

    def snapshot_key(name: Optional[str], request: Request) -> Optional[str]:
        """The store key of the caller's snapshot ``name``; 404 (the same for unknown and foreign names)."""
        if name is None:
            return None
        tenant = owner(request) if owner is not None else None
        if owner is not None and not tenant:
            key = None
        else:
            key = owned_name(tenant, name) if tenant else name
        if key is None or not llm.has_snapshot(key):
            raise HTTPException(404, f"no snapshot named {name!r} (it may have been evicted under memory pressure)")
        return key

    def submit(prompt, body: _Common, request: Request):
        key = snapshot_key(body.snapshot, request)
        try:
            return llm.submit(prompt, body.params(min(256, llm.max_model_len // 2)), snapshot=key)
        except QueueFull as exc:
            raise HTTPException(503, str(exc)) from exc
        except KeyError as exc:  # evicted since the check: the same answer as a name never seen
            raise HTTPException(404, f"no snapshot named {body.snapshot!r} (it may have been evicted under "
                                     "memory pressure)") from exc
        except (RequestTooLarge, ValueError) as exc:
            raise HTTPException(400, str(exc)) from exc

    async def next_event(handle, request: Request):
        """The next delta or the final RequestOutput; cancels the request if the client went away."""
        while True:
            try:
                return await run_in_threadpool(handle.events.get, True, 0.05)
            except queue.Empty:
                if await request.is_disconnected():
                    await run_in_threadpool(llm._cancel, handle)

    async def wait(handle, request: Request) -> RequestOutput:
        while True:
            item = await next_event(handle, request)
            if isinstance(item, BaseException):
                raise HTTPException(500, str(item))
            if isinstance(item, RequestOutput):
                handle.output = item
                return item

    def sse(handle, request: Request, chunk) -> StreamingResponse:
        async def events():
            try:
                while True:
                    item = await next_event(handle, request)
                    if isinstance(item, BaseException):
                        yield f"data: {json.dumps({'error': str(item)})}\n\n"
                        return
                    if isinstance(item, RequestOutput):
                        handle.output = item
                        yield f"data: {json.dumps(chunk('', item.finish_reason, item))}\n\n"
                        yield "data: [DONE]\n\n"
                        return
                    yield f"data: {json.dumps(chunk(item, None, None))}\n\n"
            finally:  # client gone (task cancelled) or done: never leave the request running
                if handle.output is None:
                    await asyncio.shield(run_in_threadpool(llm._cancel, handle))
        return StreamingResponse(events(), media_type="text/event-stream")

    @router.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": llm.model_name, "object": "model", "owned_by": "lexicon",
                                            "max_model_len": llm.max_model_len}]}

    @router.post("/v1/chat/completions")
    async def chat(body: ChatRequest, request: Request):
        try:
            ids = await run_in_threadpool(llm.chat_prompt, body.messages)
        except Exception as exc:  # a bad message list fails in the chat template
            raise HTTPException(400, f"cannot render messages: {exc}") from exc
        handle = await run_in_threadpool(submit, ids, body, request)  # waits for the engine lock: off the loop
        rid, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())
        if body.stream:
            def chunk(delta, finish, out):
                c = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": llm.model_name,
                     "choices": [{"index": 0, "delta": {"content": delta} if delta else {},
                                  "finish_reason": finish}]}
                if out is not None:
                    c["usage"] = _usage(out)
                return c
            return sse(handle, request, chunk)
        out = await wait(handle, request)
        return {"id": rid, "object": "chat.completion", "created": created, "model": llm.model_name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                             "finish_reason": out.finish_reason}], "usage": _usage(out)}

    @router.post("/v1/completions")
    async def completions(body: CompletionRequest, request: Request):
        handle = await run_in_threadpool(submit, body.prompt, body, request)
        rid, created = f"cmpl-{uuid.uuid4().hex[:12]}", int(time.time())
        if body.stream:
            def chunk(delta, finish, out):
                c = {"id": rid, "object": "text_completion", "created": created, "model": llm.model_name,
                     "choices": [{"index": 0, "text": delta, "finish_reason": finish, "logprobs": None}]}
                if out is not None:
                    c["usage"] = _usage(out)
                return c
            return sse(handle, request, chunk)
        out = await wait(handle, request)
        return {"id": rid, "object": "text_completion", "created": created, "model": llm.model_name,
                "choices": [{"index": 0, "text": out.text, "finish_reason": out.finish_reason, "logprobs": None}],
                "usage": _usage(out)}

    return router
