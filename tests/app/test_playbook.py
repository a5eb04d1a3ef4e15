"""A tenant's playbook (its own clause kinds): the store, ``lexicon playbook`` and ``/api/playbook``, each with
two tenants: a kind one tenant adds is never visible to, nor removable by, the other. Real SQLite, real server.
"""
from __future__ import annotations

import httpx
import pytest
import yaml

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from live_server import LiveServer, free_port  # tests/live_server.py

KIND = {"name": "Non-Disparagement", "description": "A party must not make statements that disparage the other.",
        "wordings": ["shall not make any disparaging statements about", "shall not disparage"],
        "headings": ["non-disparagement"], "answer": "clause"}
ESCROW = {"name": "source code escrow", "description": "Source code deposited with an escrow agent for the licensee.",
          "wordings": ["deposit the source code with the escrow agent"], "headings": ["escrow"]}


@pytest.fixture
def engine(tmp_path):
    from ingest.store.sql import make_engine

    return make_engine(f"sqlite:///{tmp_path / 'meta.db'}")


def names(kinds) -> list[str]:
    return [k.name for k in kinds]


def test_the_store_keeps_each_tenants_kinds_apart(engine):
    from app.agent.clauses import playbook

    playbook.add_kinds(engine, "t1", [KIND])
    playbook.add_kinds(engine, "t2", [ESCROW])
    assert names(playbook.list_kinds(engine, "t1")) == ["non-disparagement"]
    assert names(playbook.list_kinds(engine, "t2")) == ["source code escrow"]
    assert not playbook.remove_kind(engine, "t2", "non-disparagement")  # not t2's to remove
    assert names(playbook.list_kinds(engine, "t1")) == ["non-disparagement"]
    # replace by name: same name, new description
    playbook.add_kinds(engine, "t1", [{**KIND, "description": "No party may speak ill of the other."}])
    (only,) = playbook.list_kinds(engine, "t1")
    assert only.description == "No party may speak ill of the other." and only.source == "playbook"


def test_a_bad_kind_writes_nothing(engine):
    from app.agent.clauses import playbook
    from app.agent.clauses.taxonomy import TaxonomyError

    with pytest.raises(TaxonomyError, match="kind 2 'source code escrow': 'answer' is 'colour'"):
        playbook.add_kinds(engine, "t1", [KIND, {**ESCROW, "answer": "colour"}])
    assert playbook.list_kinds(engine, "t1") == []  # the valid first kind was not written either
    with pytest.raises(TaxonomyError, match="given twice"):
        playbook.add_kinds(engine, "t1", [KIND, KIND])


def test_without_the_built_in_kinds_only_the_playbook_is_read(engine):
    """``built_in_clause_kinds`` off (how ``lexicon eval --unseen-kinds`` asks every question as one of a kind
    nobody wrote): the tenant's own kinds stay, the shipped ones are gone, and the question reads no kind."""
    from types import SimpleNamespace

    from app.agent.clauses import playbook
    from app.settings import Settings

    playbook.add_kinds(engine, "t1", [KIND])
    on = SimpleNamespace(engine=engine, settings=Settings())
    off = SimpleNamespace(engine=engine, settings=Settings(built_in_clause_kinds=False))
    assert {"governing law", "non-disparagement"} <= set(names(playbook.taxonomy_for(on, "t1")))
    assert names(playbook.taxonomy_for(off, "t1")) == ["non-disparagement"]
    assert playbook.taxonomy_for(off, "t2").match("What is the governing law?") is None
    assert playbook.taxonomy_for(on, "t2").match("What is the governing law?").name == "governing law"


def test_the_cli_adds_lists_and_removes_per_tenant(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from app.cli import cli

    monkeypatch.setenv("LEXICON_DATA_DIR", str(tmp_path / "data"))
    run = CliRunner().invoke
    r = run(cli, ["playbook", "add", "--tenant", "t1", "--name", "Non-Disparagement", "--description",
                  KIND["description"], "--wording", KIND["wordings"][0], "--wording", KIND["wordings"][1],
                  "--heading", "non-disparagement"])
    assert r.exit_code == 0, r.output
    kinds = tmp_path / "kinds.yaml"
    kinds.write_text(yaml.safe_dump([ESCROW]))
    assert run(cli, ["playbook", "add", "--tenant", "t2", "--file", str(kinds)]).exit_code == 0
    out1 = run(cli, ["playbook", "list", "--tenant", "t1"]).output
    out2 = run(cli, ["playbook", "list", "--tenant", "t2"]).output
    assert "non-disparagement [clause]" in out1 and "escrow" not in out1
    assert "source code escrow" in out2 and "disparage" not in out2
    r = run(cli, ["playbook", "add", "--tenant", "t2", "--name", "escrow release", "--description", "When it is "
                  "released.", "--wording", "released from escrow", "--states", "releas! +8 escrow",
                  "--cue", "releas!"])
    assert r.exit_code == 0, r.output
    broken = run(cli, ["playbook", "add", "--tenant", "t2", "--name", "escrow fee", "--description", "The fee.",
                       "--wording", "escrow fee", "--states", "(fee +3 escrow"])
    assert broken.exit_code == 2 and "unbalanced" in broken.output, broken.output
    bad = run(cli, ["playbook", "add", "--tenant", "t1", "--name", "x kind", "--description", "Does x.",
                    "--wording", "x", "--answer", "colour"])
    assert bad.exit_code == 2 and "'answer' is 'colour'; expected one of" in bad.output
    missing = run(cli, ["playbook", "add", "--tenant", "t1", "--name", "y kind", "--wording", "y"])
    assert missing.exit_code == 2 and "'description' is missing" in missing.output
    assert run(cli, ["playbook", "remove", "non-disparagement", "--tenant", "t2"]).exit_code == 2  # not t2's
    assert run(cli, ["playbook", "remove", "non-disparagement", "--tenant", "t1"]).exit_code == 0
    assert "has no clause kinds of its own" in run(cli, ["playbook", "list", "--tenant", "t1"]).output


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from app.server import create_app

    settings = small_settings(tmp_path_factory.mktemp("playbook-api"), api_keys={"key-1": "t1", "key-2": "t2"})
    server = LiveServer(create_app(settings), free_port()).start()
    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c
    server.stop()


T1, T2 = {"X-API-Key": "key-1"}, {"X-API-Key": "key-2"}


def test_rest_playbook_is_per_tenant_and_validates(client):
    r = client.post("/api/playbook", headers=T1, json=KIND)
    assert r.status_code == 201 and r.json()["name"] == "non-disparagement", r.text
    assert [k["name"] for k in client.get("/api/playbook", headers=T1).json()["kinds"]] == ["non-disparagement"]
    assert client.get("/api/playbook", headers=T2).json()["kinds"] == []
    assert "disparag" not in client.get("/api/playbook", headers=T2).text
    shipped = client.get("/api/playbook", headers=T2, params={"built_in": "true"}).json()["built_in"]
    assert len(shipped) == 20 and "governing law" in [k["name"] for k in shipped]
    assert client.delete("/api/playbook/non-disparagement", headers=T2).status_code == 404
    assert len(client.get("/api/playbook", headers=T1).json()["kinds"]) == 1  # still t1's
    bad = client.post("/api/playbook", headers=T1, json={**ESCROW, "answer": "colour"})
    assert bad.status_code == 422 and "answer" in bad.text
    empty = client.post("/api/playbook", headers=T1, json={**ESCROW, "name": "the clause"})
    assert empty.status_code == 422 and "no content word" in empty.json()["detail"]
    assert client.post("/api/playbook", headers={"X-API-Key": "nope"}, json=KIND).status_code == 401
    # a kind's phrases that state its value elsewhere in a contract are kept and read back
    dated = {"name": "closing date", "description": "The date on which the transaction closes.",
             "wordings": ["the closing shall take place on"], "answer": "date", "stated_by": ["shall close on"]}
    assert client.post("/api/playbook", headers=T1, json=dated).json()["stated_by"] == ["shall close on"]
    assert client.delete("/api/playbook/closing date", headers=T1).status_code == 200
    # how a clause states itself, in terms and connectors: kept, read back, and a malformed one refused by name
    stated = {**ESCROW, "states": ["deposit! +12 source code"], "not_this": ["no +6 deposit!"], "cues": ["escrow!"]}
    back = client.post("/api/playbook", headers=T1, json=stated).json()
    assert back["states"] == ["deposit! +12 source code"] and back["not_this"] == ["no +6 deposit!"], back
    assert back["cues"] == ["escrow!"], back
    broken = client.post("/api/playbook", headers=T1, json={**ESCROW, "states": ["deposit! +12"]})
    assert broken.status_code == 422 and "states" in broken.json()["detail"], broken.text
    assert client.delete(f"/api/playbook/{ESCROW['name']}", headers=T1).status_code == 200
    assert client.delete("/api/playbook/Non-Disparagement", headers=T1).status_code == 200
    assert client.get("/api/playbook", headers=T1).json()["kinds"] == []
