"""Pydantic types the agent returns and the REST API / UI consume (see docs/contracts.md, section "app")."""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, Field

Mode = Literal["auto", "rag", "long", "bi"]
MAX_QUESTION_CHARS = 4000  # one limit for /api/ask, batch questions, the CLI and the web UI


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
    related: list[Citation] = Field(default_factory=list, description="when not supported: the nearest passages, "
                                    "shown as related text, not as supporting citations")
    verdict: Optional[dict] = Field(default=None, description="the verifier's verdict: score, threshold, reasons, "
                                    "features, and the candidates it weighed (best first)")
    thread_id: Optional[str] = None


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    mode: Mode = "auto"
    thread_id: Optional[str] = Field(default=None, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    stream: bool = Field(default=False, description="answer as server-sent events (token events, then final)")
    doc_ids: Optional[list[str]] = Field(default=None, description="restrict the answer to these documents")


class BatchQuestion(BaseModel):
    id: Optional[str] = Field(default=None, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    mode: Optional[Mode] = None


class BatchRequest(BaseModel):
    questions: list[Union[BatchQuestion, str]] = Field(min_length=1, max_length=500,
                                                      description="texts, or {id, question, mode}")
    doc_ids: Optional[list[str]] = Field(default=None, description="default: every document of the tenant")
    mode: Mode = "rag"
    key: str = Field(default="", max_length=128, description="a name for the job: the same key again reruns "
                     "that job (rows whose document changed are recomputed, the others kept)")

    def question_list(self) -> list[dict]:
        """``[{id, question, mode}]``; a text longer than the /api/ask limit is refused like there."""
        out, seen = [], set()
        for i, q in enumerate(self.questions, 1):
            text = q if isinstance(q, str) else q.question
            if len(text) > MAX_QUESTION_CHARS:
                raise ValueError(f"question {i} is {len(text):,} characters long; the limit is "
                                 f"{MAX_QUESTION_CHARS:,}")
            q = BatchQuestion(question=q) if isinstance(q, str) else q
            if not q.question.strip():
                raise ValueError(f"question {i} is empty")
            qid = q.id or f"q{i}"
            if qid in seen:
                raise ValueError(f"duplicate question id {qid!r}")
            seen.add(qid)
            out.append({"id": qid, "question": q.question.strip(), "mode": q.mode or self.mode})
        return out
