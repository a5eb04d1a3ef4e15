"""What the BI planner embeds for each catalogued table, embedded once at ingest and stored on its catalogue
row (``lx_tables.vector_texts`` / ``lx_tables.vectors``): the table's description (title, section, statement,
row names, column headers) and the name of every row ("Cash flows from investing activities: Purchases of
property, plant and equipment"). A question then reads vectors instead of running the embedder over every
table of the filings in scope (on a 10-K, 200 tables: 10-20 s on two cores).

A table catalogued before the vectors existed gets them on its first read (``stored_vectors``), once, or when
its file is ingested again unchanged.
"""
from __future__ import annotations

import json
import logging

import numpy as np
import sqlalchemy as sa
from sqlmodel import Session, col, select

from ingest.models import TableEntry
from ingest.tables.catalogue import table_info
from ingest.text_glue import unglue
from ingest.types import TableInfo

log = logging.getLogger(__name__)

DESCRIPTION_CHARS = 1500
DESCRIPTION_ROWS = 40


def row_text(label: str, parent: str = "") -> str:
    """A row's name as the planner matches it: its section, then its label (glued words split)."""
    label = unglue(label)
    return f"{parent}: {label}" if parent else label


def describe(info: TableInfo, row_texts: list[str]) -> str:
    """The table as one text: title, section, statement, the first rows' names, the value columns' headers."""
    parts = [info.title or "", info.section or "", info.statement or "", "; ".join(row_texts[:DESCRIPTION_ROWS]),
             ", ".join(c.label or c.name for c in info.columns if c.sql_type.upper() != "TEXT")]
    return " | ".join(p for p in parts if p)[:DESCRIPTION_CHARS]


def table_texts(info: TableInfo) -> list[str]:
    """[description, row names...] of a catalogued table (distinct, in order)."""
    rows = [row_text(r.label, r.parent) for r in info.rows if r.label]
    return list(dict.fromkeys([describe(info, rows), *rows]))


def pack(vecs: np.ndarray) -> bytes:
    return np.asarray(vecs, dtype=np.float16).tobytes()


def unpack(blob: bytes, n: int) -> np.ndarray:
    arr = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    return arr.reshape(n, -1) if n else arr.reshape(0, 0)


def embed_entries(engine, embedder, entries: list[tuple[TableEntry, str]]) -> dict[str, tuple[list[str], np.ndarray]]:
    """Embed ``entries`` ((catalogue row, file name)) in one encoder call and store them on their rows."""
    if not entries:
        return {}
    texts = {e.sql_name: table_texts(table_info(e, filename)) for e, filename in entries}
    flat = list(dict.fromkeys(t for ts in texts.values() for t in ts))
    vecs = embedder.encode(flat) if flat else np.zeros((0, 1), np.float32)
    at = {t: i for i, t in enumerate(flat)}
    out = {name: (ts, vecs[[at[t] for t in ts]] if ts else vecs[:0]) for name, ts in texts.items()}
    with Session(engine) as s:
        for name, (ts, v) in out.items():
            s.exec(sa.update(TableEntry).where(TableEntry.sql_name == name)
                   .values(vector_texts=json.dumps(ts), vectors=pack(v)))
        s.commit()
    return out


def stored_vectors(engine, embedder, tenant: str, sql_names: list[str]) -> dict[str, np.ndarray]:
    """text -> vector for the tenant's tables ``sql_names``: stored ones read, missing ones embedded and stored."""
    from ingest.models import Document

    out: dict[str, np.ndarray] = {}
    missing: list[tuple[TableEntry, str]] = []
    with Session(engine) as s:
        rows = s.exec(select(TableEntry, Document.filename)
                      .where(TableEntry.tenant == tenant, col(TableEntry.sql_name).in_(list(sql_names)),
                             Document.id == TableEntry.doc_id)).all()
    for entry, filename in rows:
        if entry.vectors is None or entry.vector_texts is None:
            missing.append((entry, filename))
            continue
        ts = json.loads(entry.vector_texts)
        out.update(zip(ts, unpack(entry.vectors, len(ts))))
    if missing:
        for ts, v in embed_entries(engine, embedder, missing).values():
            out.update(zip(ts, v))
    return out


def embed_document_tables(engine, embedder, tenant: str, doc_id: str, filename: str, only_missing: bool) -> int:
    """Embed a document's catalogued tables (``only_missing``: those without stored vectors); -> tables embedded."""
    with Session(engine) as s:
        q = select(TableEntry).where(TableEntry.tenant == tenant, TableEntry.doc_id == doc_id)
        if only_missing:
            q = q.where(col(TableEntry.vectors).is_(None))
        entries = s.exec(q).all()
    return len(embed_entries(engine, embedder, [(e, filename) for e in entries]))


def add_vector_columns(engine: sa.Engine) -> None:
    """Catalogues created before the stored vectors existed get the (nullable) columns."""
    cols = {c["name"] for c in sa.inspect(engine).get_columns("lx_tables")}
    blob = sa.LargeBinary().compile(dialect=engine.dialect)
    with engine.begin() as conn:
        if "vector_texts" not in cols:
            conn.exec_driver_sql("ALTER TABLE lx_tables ADD COLUMN vector_texts TEXT")
        if "vectors" not in cols:
            conn.exec_driver_sql(f"ALTER TABLE lx_tables ADD COLUMN vectors {blob}")
