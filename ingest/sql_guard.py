"""Read-only SQL over one tenant's catalogue tables.

Two layers: a lexical check (one statement, starts with SELECT or WITH, no DDL/DML/PRAGMA/ATTACH or
server-side functions that reach outside the query) and an enforcement layer in the database itself:
on SQLite an authorizer callback that allows only reads of the tenant's tables; on Postgres a READ ONLY
transaction with a statement timeout, and EXPLAIN's plan checked for any relation outside the tenant's
tables.
"""
from __future__ import annotations

import json
import re
import sqlite3
import time

import sqlalchemy as sa

from ingest.errors import SqlRejected
from ingest.types import SqlResult

MAX_ROWS = 1000
TIMEOUT_S = 10.0
STRING = re.compile(r"'(?:[^']|'')*'")
COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
FORBIDDEN = re.compile(
    r"\b(insert|update|delete|drop|create|alter|truncate|attach|detach|pragma|vacuum|reindex|grant|revoke|copy"
    r"|exec|execute|call|merge|upsert|into|set|lock|analyze|listen|notify|load_extension|readfile|writefile"
    r"|pg_\w+|lo_\w+|dblink\w*|query_to_\w+|table_to_\w+|schema_to_\w+|database_to_\w+|cursor_to_\w+"
    r"|set_config|current_setting|nextval|setval|txid_\w+|sqlite_\w+|information_schema)\b",
    re.I,
)


def validate_sql(sql: str) -> str:
    """The statement without a trailing semicolon, or SqlRejected saying why."""
    if not sql or not sql.strip():
        raise SqlRejected("empty SQL")
    stmt = COMMENT.sub(" ", sql).strip()
    while stmt.endswith(";"):
        stmt = stmt[:-1].rstrip()
    masked = STRING.sub("''", stmt)
    if ";" in masked:
        raise SqlRejected("only one SQL statement is allowed")
    first = re.match(r"\s*\(?\s*(\w+)", masked)
    if not first or first.group(1).lower() not in ("select", "with"):
        raise SqlRejected("only SELECT (or WITH ... SELECT) statements are allowed")
    bad = FORBIDDEN.search(masked)
    if bad:
        raise SqlRejected(f"{bad.group(1).upper()} is not allowed in a read-only query")
    return stmt


def run_readonly(engine: sa.Engine, sql: str, allowed_tables: set[str], max_rows: int = MAX_ROWS) -> SqlResult:
    stmt = validate_sql(sql)
    allowed = {t.lower() for t in allowed_tables}
    if engine.dialect.name == "sqlite":
        return _run_sqlite(engine, stmt, allowed, max_rows)
    return _run_postgres(engine, stmt, allowed, max_rows)


def _fetch(result, max_rows: int) -> SqlResult:
    columns = list(result.keys())
    rows = result.fetchmany(max_rows + 1)
    return SqlResult(columns, [list(r) for r in rows[:max_rows]], truncated=len(rows) > max_rows)


CTE_NAME = re.compile(r"(?:\bwith\s+(?:recursive\s+)?|,\s*)([A-Za-z_]\w*)\s*(?:\([^()]*\))?\s+as\s*\(", re.I)


def _run_sqlite(engine: sa.Engine, stmt: str, allowed: set[str], max_rows: int) -> SqlResult:
    denied: list[str] = []
    with engine.connect() as conn:
        real = {r[0].lower() for r in conn.exec_driver_sql("select name from sqlite_master where type in ('table', 'view')")}
    # SQLite reports reads of recursive CTEs under the CTE's name; a CTE may not shadow a real table
    ctes = {m.group(1).lower() for m in CTE_NAME.finditer(STRING.sub("''", stmt))} - real
    allowed = allowed | ctes

    def authorizer(action, arg1, arg2, _db, _trigger):
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE, sqlite3.SQLITE_TRANSACTION):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            if (arg1 or "").lower() in allowed:
                return sqlite3.SQLITE_OK
            denied.append(f"table {arg1}")
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            if (arg2 or "").lower() in {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}:
                denied.append(f"function {arg2}")
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        denied.append(f"operation {action}")
        return sqlite3.SQLITE_DENY

    deadline = time.monotonic() + TIMEOUT_S

    def over_time() -> int:  # non-zero aborts the statement (a runaway recursive CTE, say)
        return int(time.monotonic() > deadline)

    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        raw.set_authorizer(authorizer)
        raw.set_progress_handler(over_time, 10_000)
        try:
            return _fetch(conn.exec_driver_sql(stmt), max_rows)
        except sa.exc.DBAPIError as exc:
            if time.monotonic() > deadline:
                raise SqlRejected(f"the query ran longer than {TIMEOUT_S:.0f} s and was stopped") from None
            if denied and denied[0].startswith("table"):
                raise SqlRejected(f"not allowed: {denied[0]} is not one of this tenant's tables") from None
            if denied:
                raise SqlRejected(f"not allowed in a read-only query: {denied[0]}") from None
            raise SqlRejected(f"the query failed: {exc.orig}") from None
        finally:
            raw.set_authorizer(None)
            raw.set_progress_handler(None, 0)
            conn.rollback()


def _relations(plan) -> set[str]:
    found = set()
    if isinstance(plan, dict):
        for key, value in plan.items():
            if key == "Relation Name":
                found.add(str(value).lower())
            else:
                found |= _relations(value)
    elif isinstance(plan, list):
        for item in plan:
            found |= _relations(item)
    return found


def _run_postgres(engine: sa.Engine, stmt: str, allowed: set[str], max_rows: int) -> SqlResult:
    import psycopg

    # the raw cursor without parameters, so a '%' in LIKE patterns is not taken for a placeholder
    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        try:
            with raw.cursor() as cur:
                cur.execute("SET TRANSACTION READ ONLY")
                cur.execute(f"SET LOCAL statement_timeout = {int(TIMEOUT_S * 1000)}")
                cur.execute(f"EXPLAIN (FORMAT JSON) {stmt}")
                plan = cur.fetchone()[0]
                if isinstance(plan, str):
                    plan = json.loads(plan)
                outside = _relations(plan) - allowed
                if outside:
                    raise SqlRejected(f"not allowed: table {sorted(outside)[0]} is not one of this tenant's tables")
                cur.execute(stmt)
                columns = [d.name for d in cur.description or []]
                rows = cur.fetchmany(max_rows + 1)
                return SqlResult(columns, [list(r) for r in rows[:max_rows]], truncated=len(rows) > max_rows)
        except psycopg.Error as exc:
            raise SqlRejected(f"the query failed: {exc}") from None
        finally:
            raw.rollback()
