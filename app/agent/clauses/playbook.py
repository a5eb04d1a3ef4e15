"""A tenant's playbook: clause kinds of its own, stored in the metadata database (SQLite or Postgres, the
KnowledgeBase's engine), one row per (tenant, kind name), merged over the built-in kinds for that tenant only.

Every read and write takes the tenant: no call can see or change another tenant's kinds. A kind is validated
(``taxonomy.kind_from_dict``) before anything is written, so bad input is refused with a clear message and
what was stored stays as it was.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Iterable, Optional

import sqlalchemy as sa
from sqlmodel import Field, Session, SQLModel, select

from app.agent.clauses.taxonomy import ClauseKind, Taxonomy, TaxonomyError, get_taxonomy, kind_from_dict

MAX_KINDS = 500  # per tenant


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class PlaybookKind(SQLModel, table=True):
    __tablename__ = "lx_playbook_kinds"
    __table_args__ = (sa.UniqueConstraint("tenant", "name", name="uq_playbook_tenant_name"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    tenant: str = Field(index=True, max_length=128)
    name: str = Field(max_length=80)
    kind_json: str  # the validated entry (name, description, wordings, headings, answer, synonyms)
    updated_at: datetime = Field(default_factory=utcnow)


_READY: set[int] = set()  # engines whose table exists (checked once per engine, not per question)


def ensure_table(engine: sa.Engine) -> None:
    if id(engine) not in _READY:
        SQLModel.metadata.create_all(engine, tables=[PlaybookKind.__table__])
        _READY.add(id(engine))


def _kind(row: PlaybookKind) -> ClauseKind:
    return kind_from_dict(json.loads(row.kind_json), f"playbook kind {row.name!r}", source="playbook")


def validate(entries: Iterable[dict]) -> list[ClauseKind]:
    """Every entry validated (all or nothing); duplicate names in one request are an error."""
    kinds, seen = [], set()
    for i, entry in enumerate(entries, 1):
        kind = kind_from_dict(entry, f"kind {i}", source="playbook")
        if kind.name in seen:
            raise TaxonomyError(f"kind {i}: the name {kind.name!r} is given twice")
        seen.add(kind.name)
        kinds.append(kind)
    if not kinds:
        raise TaxonomyError("no clause kind given")
    return kinds


def add_kinds(engine: sa.Engine, tenant: str, entries: Iterable[dict]) -> list[ClauseKind]:
    """Add (or replace, by name) the tenant's kinds; all validated before one transaction writes them."""
    kinds = validate(entries)
    ensure_table(engine)
    with Session(engine) as s:
        rows = {r.name: r for r in s.exec(select(PlaybookKind).where(PlaybookKind.tenant == tenant)).all()}
        new = [k for k in kinds if k.name not in rows]
        if len(rows) + len(new) > MAX_KINDS:
            raise TaxonomyError(f"a playbook holds at most {MAX_KINDS} kinds; this tenant has {len(rows)}")
        for k in kinds:
            row = rows.get(k.name) or PlaybookKind(tenant=tenant, name=k.name, kind_json="{}")
            row.kind_json, row.updated_at = json.dumps(k.to_dict()), utcnow()
            s.add(row)
        s.commit()
    return kinds


def list_kinds(engine: sa.Engine, tenant: str) -> list[ClauseKind]:
    ensure_table(engine)
    with Session(engine) as s:
        rows = s.exec(select(PlaybookKind).where(PlaybookKind.tenant == tenant).order_by(PlaybookKind.name)).all()
    return [_kind(r) for r in rows]


def remove_kind(engine: sa.Engine, tenant: str, name: str) -> bool:
    """True when the tenant had a kind of that name (now removed)."""
    ensure_table(engine)
    name = " ".join((name or "").lower().split())
    with Session(engine) as s:
        row = s.exec(select(PlaybookKind).where(PlaybookKind.tenant == tenant, PlaybookKind.name == name)).first()
        if row is None:
            return False
        s.delete(row)
        s.commit()
    return True


def taxonomy_for(kb, tenant: str) -> Taxonomy:
    """The built-in kinds with the tenant's playbook merged over them (``kb``: a KnowledgeBase or TenantKB);
    the playbook alone where the settings turn the built-in kinds off."""
    base = getattr(kb, "kb", kb)
    engine = getattr(base, "engine", None)
    own = list_kinds(engine, tenant) if engine is not None else []
    if not getattr(getattr(base, "settings", None), "built_in_clause_kinds", True):
        return Taxonomy(own)
    return get_taxonomy(own)
