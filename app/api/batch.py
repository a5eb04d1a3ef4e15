"""Batch analysis jobs over the REST API: every question asked of every (chosen) document."""
from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request

from app.api.deps import tenant
from app.schemas import BatchRequest

router = APIRouter(prefix="/api", tags=["batch"])


@router.post("/batch", status_code=202, summary="Start a batch job (poll /api/batch/{job_id} for rows)")
def start(body: BatchRequest, request: Request, tenant: str = Depends(tenant)) -> dict:
    try:
        return request.app.state.batch_jobs.start(tenant, body.questions, body.doc_ids, body.mode)
    except KeyError as exc:
        raise HTTPException(404, str(exc.args[0])) from exc


@router.get("/batch/{job_id}", summary="A batch job's status and rows so far")
def get(job_id: str, request: Request, tenant: str = Depends(tenant)) -> dict:
    try:
        return request.app.state.batch_jobs.get(tenant, job_id)
    except KeyError as exc:
        raise HTTPException(404, f"no batch job {job_id}") from exc
