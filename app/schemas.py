"""Pydantic types the agent returns and the REST API / UI consume (see docs/contracts.md, section "app")."""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

Mode = Literal["auto", "rag", "long", "bi"]


class Citation(BaseModel):
    doc_id: str
    filename: str
    page: Optional[int] = None
    section: Optional[str] = None
    quote: str = Field(description="text that occurs verbatim in the cited passage")


class AgentAnswer(BaseModel):
    answer: str
    citations: list[Citation] = Field(default_factory=list)
    route: str = Field(description="rag | long | bi: which path produced the answer")
    sql: Optional[str] = None
    columns: Optional[list[str]] = None
    rows: Optional[list[list[Any]]] = None
    chart: Optional[dict] = Field(default=None, description="a plotly figure dict")
    supported: bool = Field(description="False when the documents did not support an answer")
    thread_id: Optional[str] = None


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=4000)
    mode: Mode = "auto"
    thread_id: Optional[str] = Field(default=None, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    stream: bool = Field(default=False, description="answer as server-sent events (token events, then final)")
    doc_ids: Optional[list[str]] = Field(default=None, description="restrict the answer to these documents")


class BatchRequest(BaseModel):
    questions: list[str] = Field(min_length=1, max_length=200)
    doc_ids: Optional[list[str]] = Field(default=None, description="default: every document of the tenant")
    mode: Mode = "rag"
