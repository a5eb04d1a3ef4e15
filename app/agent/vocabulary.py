"""The agent's word lists, loaded once from ``app/data/vocabulary.yaml`` (data, not code)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

PATH = Path(__file__).resolve().parents[1] / "data" / "vocabulary.yaml"


@lru_cache(maxsize=1)
def vocabulary() -> dict:
    data = yaml.safe_load(PATH.read_text(encoding="utf-8")) or {}
    if not isinstance(data.get("document_types"), list):
        raise ValueError(f"{PATH}: document_types must be a list of words")
    return data


def document_types() -> tuple[str, ...]:
    return tuple(str(w).lower() for w in vocabulary()["document_types"])
