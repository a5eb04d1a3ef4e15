"""A batch checklist that names clause kinds (``kind: governing law`` in ``app/data/contract_review.yaml``).

An entry may give a kind with or without a question: without one, the question asks what the agreement says
about the kind; with one whose words do not already name that kind, the kind's name leads the question
("payment terms: within how many days ..."), so the agent reads the kind the checklist meant. Kinds are checked
against the tenant's taxonomy (the built-in kinds and its playbook): a kind added as data is usable here
without code, and an unknown name is refused with the names known.
"""
from __future__ import annotations

from app.agent.clauses.taxonomy import Taxonomy


def kind_question(kind: str) -> str:
    return f"What does the agreement say about {kind}?"


def with_kinds(questions: list[dict], taxonomy: Taxonomy) -> list[dict]:
    """``questions`` (``{id, question, mode, kind?}``) with each named kind checked and stated in its question."""
    out = []
    for q in questions:
        name = q.get("kind")
        if not name:
            out.append(q)
            continue
        kind = taxonomy.get(name)
        if kind is None:
            known = ", ".join(sorted(k.name for k in taxonomy))
            raise ValueError(f"question {q.get('id')!r}: unknown clause kind {name!r} (known: {known}; a tenant "
                             "adds its own with `lexicon playbook add`)")
        text = q.get("question") or kind_question(kind.name)
        if taxonomy.match(text) is not kind:
            text = f"{kind.name}: {text}"
        out.append({**q, "kind": kind.name, "question": text})
    return out
