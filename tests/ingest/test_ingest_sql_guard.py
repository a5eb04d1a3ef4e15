"""run_sql's guard: one read-only SELECT over allowed tables only, enforced by SQLite itself."""
from __future__ import annotations

import pytest

from ingest.errors import SqlRejected
from ingest.sql_guard import run_readonly, validate_sql
from ingest.store.sql import make_engine


@pytest.fixture
def engine(tmp_path):
    e = make_engine(f"sqlite:///{tmp_path / 'g.db'}")
    with e.begin() as conn:
        conn.exec_driver_sql("create table t_mine (item text, y2024 real)")
        conn.exec_driver_sql("insert into t_mine values ('Revenue', 10.5), ('Cost', -4)")
        conn.exec_driver_sql("create table t_other (secret text)")
        conn.exec_driver_sql("insert into t_other values ('tenant B data')")
    yield e
    e.dispose()


def test_selects_and_ctes_over_allowed_tables_run(engine):
    r = run_readonly(engine, "SELECT item, y2024 FROM t_mine ORDER BY y2024 DESC;", {"t_mine"})
    assert r.columns == ["item", "y2024"] and r.rows == [["Revenue", 10.5], ["Cost", -4.0]]
    r = run_readonly(engine, "with x as (select sum(y2024) s from t_mine) select s from x", {"t_mine"})
    assert r.rows == [[6.5]]
    r = run_readonly(engine, "select 'drop table; delete' as s from t_mine limit 1", {"t_mine"})
    assert r.rows == [["drop table; delete"]]  # keywords inside string literals are data


@pytest.mark.parametrize("sql, reason", [
    ("select * from t_other", "table t_other"),
    ("select * from t_mine join t_other on 1=1", "table t_other"),
    ("with a as (select * from t_other) select * from a", "table t_other"),
    ("select (select secret from t_other) from t_mine", "table t_other"),
    ("select * from lx_documents", "table lx_documents"),
    ("select * from sqlite_master", "SQLITE_MASTER"),
    ("delete from t_mine", "only SELECT"),
    ("PRAGMA table_info(t_mine)", "only SELECT"),
    ("ATTACH DATABASE '/tmp/x.db' AS x", "only SELECT"),
    ("select 1; drop table t_mine", "one SQL statement"),
    ("with x as (select 1) insert into t_mine values ('a', 1)", "INSERT"),
    ("select * into t_copy from t_mine", "INTO"),
    ("select load_extension('evil')", "LOAD_EXTENSION"),
    ("", "empty"),
])
def test_everything_else_is_rejected(engine, sql, reason):
    with pytest.raises(SqlRejected, match=reason):
        run_readonly(engine, sql, {"t_mine"})
    with engine.connect() as conn:  # and nothing changed
        assert conn.exec_driver_sql("select count(*) from t_mine").scalar() == 2


def test_comments_cannot_hide_a_second_statement():
    with pytest.raises(SqlRejected):
        validate_sql("select 1 /* ; */ ; delete from t_mine")
    assert validate_sql("select 1 -- trailing comment") == "select 1"


def test_runaway_query_is_stopped(engine, monkeypatch):
    import ingest.sql_guard

    monkeypatch.setattr(ingest.sql_guard, "TIMEOUT_S", 0.5)
    endless = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    with pytest.raises(SqlRejected, match="longer than"):
        run_readonly(engine, endless, {"t_mine"})
    assert run_readonly(engine, "select count(*) from t_mine", {"t_mine"}).rows == [[2]]  # connection still fine


def test_recursive_cte_runs_but_cannot_shadow_a_real_table(engine):
    series = "with recursive n(i) as (select 1 union all select i + 1 from n where i < 3) select i from n"
    assert run_readonly(engine, series, {"t_mine"}).rows == [[1], [2], [3]]
    sneaky = ("with recursive t_other(secret) as (select secret from t_other union all "
              "select secret from t_other where 0) select * from t_other")
    with pytest.raises(SqlRejected, match="t_other"):  # SQLite's "circular reference" or our denial
        run_readonly(engine, sneaky, {"t_mine"})
    with pytest.raises(SqlRejected, match="table t_other"):
        run_readonly(engine, "with x as (select 1) select secret from t_other, x", {"t_mine"})
