"""BI with a model behind an OpenAI-compatible server: the model writes the SQL, which runs only if it is
read-only and touches only the tenant's tables; anything else falls back to the deterministic planner.

A larger SQL-writing model (vLLM/NIM) does not run on this machine, so a tiny OpenAI-compatible HTTP server
replies with the SQL each test sets; everything else (HTTP client, agent, SQL guard, SQLite) is real.
"""
from __future__ import annotations

import pytest
from fastapi import FastAPI

from ingest.samples import SAMPLE_FACTS

from app_test_helpers import TENANT  # tests/app/app_test_helpers.py
from live_server import LiveServer, free_port  # tests/live_server.py

INCOME = SAMPLE_FACTS["annual_report"]["income_statement"]


@pytest.fixture(scope="module")
def sql_server():
    reply = {"text": ""}
    app = FastAPI()

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        reply["last_messages"] = body["messages"]
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": reply["text"]},
                             "finish_reason": "stop"}]}

    server = LiveServer(app, free_port()).start()
    yield server.url, reply
    server.stop()


@pytest.fixture(scope="module")
def remote_service(sample_service, module_settings, sql_server):
    from app.service import LexiconService

    settings = module_settings.model_copy(update={"llm_base_url": sql_server[0],
                                                  "checkpoint_url": str(module_settings.data_dir / "remote.db")})
    service = LexiconService(settings, kb=sample_service.kb)
    yield service
    service._close_checkpointer()
    service._model.close()


def income_table(service):
    return next(t for t in service.kb.list_tables(TENANT) if t.title.startswith("Consolidated"))


def test_model_written_sql_runs_and_is_returned(remote_service, sql_server):
    table = income_table(remote_service)
    sql = f"SELECT item, y2022 FROM {table.sql_name} WHERE item = 'Revenue'"
    sql_server[1]["text"] = f"```sql\n{sql}\n```"
    a = remote_service.ask(TENANT, "What was revenue in 2022?", mode="bi")
    assert a.route == "bi" and a.sql == sql and a.rows == [["Revenue", INCOME["Revenue"][2022]]]
    assert table.sql_name in sql_server[1]["last_messages"][0]["content"]  # the model was shown the schema


@pytest.mark.parametrize("bad", ["DELETE FROM {t}", "DROP TABLE {t}", "SELECT * FROM sqlite_master",
                                 "SELECT 1; DELETE FROM {t}", "this is not SQL"])
def test_unsafe_or_broken_model_sql_falls_back_to_the_planner(remote_service, sql_server, bad):
    table = income_table(remote_service)
    sql_server[1]["text"] = bad.format(t=table.sql_name)
    a = remote_service.ask(TENANT, "What was revenue in 2024?", mode="bi")
    assert a.route == "bi" and a.sql != sql_server[1]["text"]
    assert a.rows == [["Revenue", INCOME["Revenue"][2024]]]
    assert remote_service.kb.run_sql(TENANT, f"SELECT COUNT(*) FROM {table.sql_name}").rows == [[6]]  # intact
