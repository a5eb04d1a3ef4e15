"""Ask (JSON or streamed as server-sent events) and conversation threads."""
from __future__ import annotations

import json

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from app.api.deps import get_service, tenant
from app.schemas import AgentAnswer, AskRequest
from app.service import NotFound

router = APIRouter(prefix="/api", tags=["agent"])
_END = object()


@router.post("/ask", response_model=AgentAnswer,
             summary="Ask the agent; with stream=true, text/event-stream of token events then the final answer",
             responses={200: {"content": {"text/event-stream": {}}}})
async def ask(body: AskRequest, tenant: str = Depends(tenant), service=Depends(get_service)):
    try:
        service.validate_question(body.question, body.mode)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    events = service.ask_stream(tenant, body.question, body.mode, body.thread_id, body.doc_ids)
    if not body.stream:
        final = None
        try:
            for event in await run_in_threadpool(list, events):
                if event["type"] == "error":
                    raise HTTPException(500, event["message"])
                if event["type"] == "final":
                    final = event["answer"]
        finally:
            events.close()
        return final

    async def sse():
        try:
            while True:
                event = await run_in_threadpool(next, events, _END)
                if event is _END:
                    return
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        finally:  # client gone or done: closing the iterator cancels the engine request
            await run_in_threadpool(events.close)

    return StreamingResponse(sse(), media_type="text/event-stream")


@router.get("/threads", response_model=list[str], summary="This tenant's conversation thread ids")
def threads(tenant: str = Depends(tenant), service=Depends(get_service)):
    return service.threads(tenant)


@router.get("/threads/{thread_id}", summary="A thread's messages (assistant turns carry the full answer)")
def thread(thread_id: str, tenant: str = Depends(tenant), service=Depends(get_service)) -> list[dict]:
    try:
        return service.thread_history(tenant, thread_id)
    except NotFound as exc:
        raise HTTPException(404, f"no thread {thread_id}") from exc
