"""A document the question names that the tenant does not have: "What law governs the Falcon term sheet?"
when no document in scope says "Falcon" is answered "no document ... mentions Falcon", never from another
document that happens to state a governing law.

The naming phrase is "the <Capitalised words> <document type>" (document types are data:
``app/data/vocabulary.yaml``); a name counts as present when a document in scope carries it in its file name
or any word of it in its text (the text vocabulary stored with the document's facts at ingest).
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


def missing_named_documents(kbt, question: str, doc_ids=None) -> list[str]:
    """Names of documents the question names that no document in scope carries: not one word of the name
    in any document's file name or text (the stored text vocabulary, one query a word)."""
    names = named_names(question)
    if not names:
        return []
    docs = [d for d in kbt.list_documents() if d.status == "ingested" and (not doc_ids or d.id in doc_ids)]
    if not docs:
        return []
    ids = [d.id for d in docs]
    kbt.facts(ids)  # stored on first read for documents ingested before facts existed
    files = " ".join(d.filename.lower() for d in docs)
    missing = []
    for name in names:
        words = [w.lower().strip(".,'") for w in name.split()]
        found = kbt.docs_with_words(words, ids)
        if not any(found.get(w) for w in words) and not any(w in files for w in words):
            missing.append(name)
    return missing
