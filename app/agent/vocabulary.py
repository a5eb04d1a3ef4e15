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


def plurals(word: str) -> tuple[str, ...]:
    """``word`` and its plural ("country", "countries"; "business", "businesses"; "lease", "leases")."""
    w = word.lower()
    if w.endswith("y") and w[-2:-1] not in "aeiou":
        return w, w[:-1] + "ies"
    return (w, w + "es") if w.endswith(("s", "x", "ch", "sh")) else (w, w + "s")


def row_kinds() -> dict[str, str]:
    """Every spelling of a row kind (singular and plural) -> the kind."""
    return {v: str(w).lower() for w in vocabulary().get("row_kinds") or () for v in plurals(str(w))}


def contract_words() -> frozenset[str]:
    """The words (singular and plural) by which a question speaks of a contract."""
    return frozenset(v for w in vocabulary().get("contract_words") or () for v in plurals(str(w)))
