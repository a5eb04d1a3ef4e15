"""Errors with messages meant for the person who uploaded the file."""
from __future__ import annotations


class IngestError(Exception):
    """A file could not be ingested; the message says why in plain words."""


class SqlRejected(Exception):
    """run_sql refused a statement (not a single read-only SELECT over the tenant's own tables)."""
