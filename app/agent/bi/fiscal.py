"""A quarterly filing's columns by its fiscal calendar: which fiscal year and quarter each column is, as the
company names them ("Six Months Ended July 29, 2023" closes Q2 of fiscal 2024).

The calendar and the columns it re-reads are a document fact, read once at ingest from the table catalogue
(``ingest.facts.calendar``) and stored with the document (``DocumentFacts.columns``); here they are set on the
planner's table views.
"""
from __future__ import annotations

from typing import Optional

from app.agent.bi.periods import Period
from app.agent.bi.table import TableView
from ingest.facts import calendar as fiscal_calendar


def catalogue_columns(views: list[TableView]) -> dict[str, dict[str, tuple[int, Optional[int]]]]:
    """The column periods the fiscal calendar of one document's ``views`` reads, from their catalogue entries
    (what ingest stores; for callers without the stored facts)."""
    tables = {v.info.sql_name: [{"name": c.name, "sql_type": c.sql_type, "period_end": getattr(c, "period_end", ""),
                                 "period_months": getattr(c, "period_months", 0)} for c in v.info.columns]
              for v in views if v.shape == "wide"}
    return fiscal_calendar.column_periods(tables, fiscal_calendar.calendar(tables))


def apply(views: list[TableView], columns: Optional[dict] = None) -> None:
    """Set the periods of one document's columns to those its fiscal calendar reads (in place; the same every
    time). ``columns``: the document's stored ``DocumentFacts.columns``; read from the views' catalogue entries
    when not given."""
    columns = catalogue_columns(views) if columns is None else columns
    for v in views:
        if v.shape != "wide":
            continue
        for c in v.cols:
            year, quarter = (columns.get(v.info.sql_name) or {}).get(c.key, (None, None))
            if year is not None:
                c.period = Period(int(year), int(quarter) if quarter else None)


def apply_stored(views: list[TableView], kbt=None) -> None:
    """``apply`` to each document's views with the column periods stored with it (``kbt.facts``, one read for
    all of them); from the catalogue entries where there is no tenant-bound knowledge base."""
    by_doc: dict[str, list[TableView]] = {}
    for v in views:
        by_doc.setdefault(v.info.doc_id, []).append(v)
    facts = kbt.facts(list(by_doc)) if kbt is not None and by_doc else {}
    for doc_id, doc_views in by_doc.items():
        apply(doc_views, facts[doc_id].columns if doc_id in facts else None)
