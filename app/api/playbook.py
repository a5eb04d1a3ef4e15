"""A tenant's playbook over REST: its own clause kinds, merged over the built-in ones for its questions only.

``GET /api/playbook`` lists the tenant's kinds (``?built_in=true`` adds the shipped ones), ``POST`` adds or
replaces one kind (by name), ``DELETE /api/playbook/{name}`` removes one. The tenant comes from the API key,
as on every route; a kind is validated before anything is stored (422 with the field and the reason).
"""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.agent.clauses import playbook as store
from app.agent.clauses.taxonomy import TaxonomyError, built_in
from app.api.deps import tenant

router = APIRouter(prefix="/api", tags=["playbook"])


class PlaybookKindIn(BaseModel):
    name: str = Field(min_length=1, max_length=80, description="the kind's name, as a question names it")
    description: str = Field(min_length=1, max_length=600,
                             description="one or two sentences: what the clause does")
    wordings: list[str] = Field(min_length=1, max_length=40, description="example phrases as contracts word it")
    headings: list[str] = Field(default_factory=list, max_length=40, description="section-heading words")
    answer: Literal["jurisdiction", "duration", "amount", "parties", "date", "clause"] = "clause"
    synonyms: list[str] = Field(default_factory=list, max_length=40, description="how a user may name it")
    stated_by: list[str] = Field(default_factory=list, max_length=40,
                                 description="phrases by which a contract states the value in other sentences too "
                                             "(\"shall commence\"): an answer such a sentence contradicts is "
                                             "not supported")
    states: list[str] = Field(default_factory=list, max_length=40,
                              description="how a clause states itself, in terms and connectors "
                                          "(\"assign! +12 without +5 consent!\"): an answer's quote must match one")
    not_this: list[str] = Field(default_factory=list, max_length=40,
                                description="what says a sentence is not this clause (same syntax)")
    cues: list[str] = Field(default_factory=list, max_length=60,
                            description="short phrases its sentences use (same syntax): which sentence is quoted first")


def _engine(request: Request):
    return request.app.state.service.kb.engine


@router.get("/playbook", summary="This tenant's clause kinds (and the built-in ones with built_in=true)")
def list_kinds(request: Request, built_in_kinds: bool = Query(False, alias="built_in"),
               tenant: str = Depends(tenant)) -> dict:
    kinds = [k.to_dict() for k in store.list_kinds(_engine(request), tenant)]
    out = {"tenant": tenant, "kinds": kinds}
    if built_in_kinds:
        out["built_in"] = [k.to_dict() for k in built_in()]
    return out


@router.post("/playbook", status_code=201, summary="Add (or replace by name) one clause kind of this tenant")
async def add_kind(body: PlaybookKindIn, request: Request, tenant: str = Depends(tenant)) -> dict:
    entry: dict = body.model_dump()
    try:
        kinds = await run_in_threadpool(store.add_kinds, _engine(request), tenant, [entry])
    except TaxonomyError as exc:
        raise HTTPException(422, str(exc)) from exc
    return kinds[0].to_dict()


@router.delete("/playbook/{name}", summary="Remove one clause kind of this tenant")
def remove_kind(name: str, request: Request, tenant: str = Depends(tenant)) -> dict:
    if not store.remove_kind(_engine(request), tenant, name):
        raise HTTPException(404, f"this tenant's playbook has no clause kind {name!r}")
    return {"removed": " ".join(name.lower().split())}
