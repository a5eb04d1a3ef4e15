"""Grounding check for generated answers: a small model sometimes states a figure its sources do not say
(for example "30 days" when the cited clause says sixty (60) days). Every figure in a generated answer must
occur in the quoted source text; otherwise the answer is replaced by the quote itself, so what the user
reads is always in the documents."""
from __future__ import annotations

import re

FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
MARKERS = re.compile(r"<<<\s*DOCUMENT\b[^\n]*|DOCUMENT\s*>>>|</?document[^>]*>", re.IGNORECASE)


def _norm(figure: str) -> str:
    f = figure.replace(",", "").rstrip(".")
    return f[:-2] if f.endswith(".0") else f


def clean_answer(text: str) -> str:
    """Drop prompt fence markers the model may echo back."""
    return re.sub(r"[ \t]{2,}", " ", MARKERS.sub("", text)).strip()


def ungrounded_figures(answer: str, quotes: list[str]) -> list[str]:
    """Figures of the answer that none of the quotes contain."""
    known = {_norm(f) for q in quotes for f in FIGURE.findall(q)}
    return [f for f in FIGURE.findall(answer) if _norm(f) not in known]


def extractive_answer(citations: list[dict]) -> str:
    top = citations[0]
    page = f", p. {top['page']}" if top.get("page") not in (None, "") else ""
    return f"According to {top['filename']}{page}: \u201c{top['quote']}\u201d"


def grounded(answer: str, citations: list[dict]) -> tuple[str, bool]:
    """(answer to show, whether the generated text was kept)."""
    answer = clean_answer(answer)
    if not citations:
        return answer, True
    if not answer or ungrounded_figures(answer, [c["quote"] for c in citations]):
        return extractive_answer(citations), False
    return answer, True
