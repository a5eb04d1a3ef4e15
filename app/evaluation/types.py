"""What an adapter yields: a dataset of documents and questions with gold evidence and answers."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


@dataclass
class Evidence:
    """A gold span: its text, and where known the page (1-based, as our passages count pages)."""
    text: str
    page: Optional[int] = None


@dataclass
class EvalItem:
    id: str
    question: str
    doc: str  # filename of the document the question is about (as ingested)
    evidence: list[Evidence] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # gold answer strings (may be empty: evidence only)
    scoring: str = "text"  # clause | numeric | tatqa | text
    scoped: bool = False  # ask restricted to the question's document (doc_ids), e.g. TAT-QA, CUAD --no-names
    category: str = ""  # breakdown key (CUAD category, FinanceBench question type, TAT-QA answer type)
    meta: dict = field(default_factory=dict)  # scale, answer_from, answer value, source text path ...


@dataclass
class Dataset:
    kind: str  # cuad | financebench | tatqa | jsonl
    name: str
    root: Path
    documents: list[Path]  # files to ingest
    items: list[EvalItem]
    source_texts: dict[str, Path] = field(default_factory=dict)  # doc filename -> a plain-text rendering
