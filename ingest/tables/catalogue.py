"""Catalogue rows (``lx_tables``) -> ``TableInfo`` for the BI planner (docs/contracts.md "Table catalogue").

Older rows without ``meta_json`` (or older column dicts) read with the defaults.
"""
from __future__ import annotations

import json

import sqlalchemy as sa

from ingest.types import ColumnInfo, RowInfo, TableInfo

COLUMN_FIELDS = ("role", "period", "period_end", "period_months", "fiscal_year", "fiscal_quarter", "scale", "currency")


def column_info(c: dict) -> ColumnInfo:
    extra = {k: c[k] for k in COLUMN_FIELDS if k in c and c[k] is not None}
    return ColumnInfo(c["name"], c["sql_type"], c.get("unit", ""), c.get("label", ""), **extra)


def table_info(entry, filename: str) -> TableInfo:
    meta = json.loads(getattr(entry, "meta_json", None) or "{}")
    bbox = meta.get("bbox")
    return TableInfo(
        entry.sql_name, entry.doc_id, filename, entry.page, entry.title,
        [column_info(c) for c in json.loads(entry.columns_json)], entry.n_rows, entry.unit,
        section=meta.get("section", ""), statement=meta.get("statement", ""), scale=meta.get("scale", ""),
        currency=meta.get("currency", ""), bbox=tuple(bbox) if bbox else None,
        label_column=meta.get("label_column", ""),
        rows=[RowInfo(r["row_num"], r.get("label", ""), r.get("parent", ""), bool(r.get("is_total")),
                      r.get("unit", ""), r.get("scale", "")) for r in meta.get("rows", [])],
        periods=list(meta.get("periods", [])),
    )


def add_meta_column(engine: sa.Engine) -> None:
    """Catalogues created before ``lx_tables.meta_json`` existed get the (nullable) column."""
    cols = {c["name"] for c in sa.inspect(engine).get_columns("lx_tables")}
    if "meta_json" not in cols:
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE lx_tables ADD COLUMN meta_json TEXT")
