"""Documents: upload + ingest as an async job with status, list, delete."""
from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.api.deps import get_service, tenant
from app.api.upload_body import OPENAPI_BODY, read_file_part
from app.service import NotFound
from app.uploads import NameLimits, UploadRefused

router = APIRouter(prefix="/api", tags=["documents"])


class DocumentOut(BaseModel):
    id: str
    filename: str
    status: str
    error: str | None = None
    pages: int = 0
    chunks: int = 0
    tables: int = 0
    version: int = 0
    kind: str = ""
    updated_at: str | None = None


class JobOut(BaseModel):
    job_id: str
    tenant: str
    status: str
    total: int
    done: int
    failed: int
    documents: list[dict]
    created_at: str | None = None
    finished_at: str | None = None
    replaces: dict | None = None  # on upload: the existing document of the same name this upload replaces
    notice: str | None = None  # e.g. "x.pdf replaces the earlier version 1 of this document (...)"


class Deleted(BaseModel):
    deleted: bool
    doc_id: str


@router.post("/documents", status_code=202, response_model=JobOut, openapi_extra=OPENAPI_BODY,
             summary="Upload a document; it is ingested by a background job (poll /api/jobs/{job_id}). The file "
                     "name is kept as given (any script, NFC); a file with the name of an existing document "
                     "replaces it as a new version (see `notice`).",
             responses={400: {"description": "empty file, reserved or over-long name, malformed body"},
                        413: {"description": "file over the size limit"},
                        415: {"description": "not a supported type (by its magic bytes)"},
                        422: {"description": "no file part"}, 401: {"description": "bad API key"}})
async def upload(request: Request, tenant: str = Depends(tenant), service=Depends(get_service)):
    limit = service.settings.max_file_mb * 2**20
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + 64 * 1024 + NameLimits().max_header_bytes:
        raise HTTPException(413, f"upload over the {service.settings.max_file_mb} MB limit")
    try:
        filename, data = await read_file_part(request, limit)
        return await run_in_threadpool(service.upload, tenant, filename, data)  # off the loop
    except UploadRefused as exc:  # name, empty, size, type: before anything is stored
        raise HTTPException(exc.status, str(exc)) from exc


@router.get("/jobs/{job_id}", response_model=JobOut, summary="Status of an ingestion job")
def job(job_id: str, tenant: str = Depends(tenant), service=Depends(get_service)):
    try:
        return service.job(tenant, job_id)
    except NotFound as exc:
        raise HTTPException(404, f"no job {job_id}") from exc


@router.get("/jobs", response_model=list[JobOut], summary="This tenant's ingestion jobs, newest first")
def jobs(tenant: str = Depends(tenant), service=Depends(get_service)):
    return service.jobs(tenant)


@router.get("/documents", response_model=list[DocumentOut], summary="This tenant's documents")
def documents(tenant: str = Depends(tenant), service=Depends(get_service)):
    return service.documents(tenant)


class VersionOut(BaseModel):
    version: int
    content_hash: str
    pages: int = 0
    chunks: int = 0
    created_at: str | None = None


@router.get("/documents/{doc_id}/versions", response_model=list[VersionOut],
            summary="A document's version history (uploading a file under an existing name adds a version)")
def versions(doc_id: str, tenant: str = Depends(tenant), service=Depends(get_service)):
    try:
        return service.document_versions(tenant, doc_id)
    except NotFound as exc:
        raise HTTPException(404, f"no document {doc_id}") from exc


@router.delete("/documents/{doc_id}", response_model=Deleted,
               summary="Delete a document: its chunks, vectors, tables, versions, kept original file and the "
                       "tenant's engine snapshots")
def delete(doc_id: str, tenant: str = Depends(tenant), service=Depends(get_service)):
    if not service.delete_document(tenant, doc_id):
        raise HTTPException(404, f"no document {doc_id}")
    return {"deleted": True, "doc_id": doc_id}
