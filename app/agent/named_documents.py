"""A document the question names that the tenant does not have: "What law governs the Falcon term sheet?"
when no document in scope says "Falcon" is answered "no document ... mentions Falcon", never from another
document that happens to state a governing law.

The naming phrase is "the <Capitalised words> <document type>" (document types are data:
``app/data/vocabulary.yaml``); a name counts as present when a document in scope carries it in its file name
or its text (a search restricted to the documents in scope, the hits' text checked for the word).
"""
from __future__ import annotations

import re

from app.agent.vocabulary import document_types

NAME_WORD = r"[A-Z][\w&'.-]*"


def _naming_pattern() -> re.Pattern:
    types = "|".join(sorted((re.escape(t) for t in document_types()), key=len, reverse=True))
    return re.compile(rf"\bthe\s+((?:{NAME_WORD}\s+){{1,4}})(?:(?:[a-z]+\s+){{0,2}})(?i:{types})\b")


def named_names(question: str) -> list[str]:
    """The capitalised names of "the <Name> <document type>" phrases (document-type words themselves out)."""
    types = set(document_types())
    out = []
    for m in _naming_pattern().finditer(question):
        words = [w.strip(".,'") for w in m.group(1).split()]
        words = [w for w in words if w.lower() not in types and len(w) > 1]
        if words:
            out.append(" ".join(words))
    return out


def _present(kbt, name: str, doc_ids, filenames: list[str]) -> bool:
    low = name.lower()
    if any(low in f.lower() or low.replace(" ", "") in f.lower().replace("_", "").replace(" ", "")
           for f in filenames):
        return True
    for p in kbt.search(name, k=8, doc_ids=doc_ids):
        if re.search(rf"\b{re.escape(low)}\b", p.text.lower()) or low in (p.filename or "").lower():
            return True
    return False


def missing_named_documents(kbt, question: str, doc_ids=None) -> list[str]:
    """Names of documents the question names that no document in scope carries."""
    names = named_names(question)
    if not names:
        return []
    docs = [d for d in kbt.list_documents() if d.status == "ingested" and (not doc_ids or d.id in doc_ids)]
    if not docs:
        return []
    files = [d.filename for d in docs]
    ids = [d.id for d in docs]
    return [n for n in names if not _present(kbt, n, ids, files)]
