"""Batch analysis jobs over the REST API: every question asked of every (chosen) document.

Jobs are persisted (``app.batch_store``) and resumed when the server starts; a question that fails is
recorded on its row and the job goes on. ``GET /api/batch/{id}/xlsx`` is the formatted workbook.
"""
from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from starlette.concurrency import run_in_threadpool

from app.api.deps import tenant
from app.schemas import BatchRequest
from app.service import NotFound

router = APIRouter(prefix="/api", tags=["batch"])
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@router.post("/batch", status_code=202, summary="Start a batch job (poll /api/batch/{job_id} for progress and rows)",
             responses={429: {"description": "too many batch jobs open; see Retry-After"}})
async def start(body: BatchRequest, request: Request, tenant: str = Depends(tenant)) -> dict:
    try:
        questions = body.question_list()
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    try:
        return await run_in_threadpool(request.app.state.batch_jobs.start, tenant, questions, body.doc_ids,
                                       body.mode, body.key)
    except NotFound as exc:
        raise HTTPException(404, str(exc.args[0])) from exc


@router.get("/batch", summary="This tenant's batch jobs, newest first (progress, no rows)")
def jobs(request: Request, tenant: str = Depends(tenant)) -> list[dict]:
    return request.app.state.batch_jobs.list(tenant)


@router.get("/batch/{job_id}", summary="A batch job's status, progress and rows so far")
def get(job_id: str, request: Request, rows: bool = True, tenant: str = Depends(tenant)) -> dict:
    try:
        return request.app.state.batch_jobs.get(tenant, job_id, rows=rows)
    except NotFound as exc:
        raise HTTPException(404, f"no batch job {job_id}") from exc


@router.get("/batch/{job_id}/xlsx", summary="A batch job as a formatted workbook (results + summary sheets)",
            response_class=Response, responses={200: {"content": {XLSX: {}}}})
def xlsx(job_id: str, request: Request, tenant: str = Depends(tenant)) -> Response:
    try:
        data = request.app.state.batch_jobs.xlsx(tenant, job_id)
    except NotFound as exc:
        raise HTTPException(404, f"no batch job {job_id}") from exc
    return Response(data, media_type=XLSX, headers={"Content-Disposition": f'attachment; filename="batch-{job_id}.xlsx"'})
