"""Words a PDF printed without their space ("Purchases ofproperty") are split by the packaged embedder's
vocabulary, and a row label read that way is found by its name and cited from the page as printed. Real
vocabulary file, real ingest (HTML), real SQLite, the real BI node."""
from __future__ import annotations

import pytest

from app_test_helpers import ask_bi, bi_env  # tests/app/app_test_helpers.py
from glued_report import REPORT  # tests/glued_report.py

TENANT = "glued-words"



def test_glued_function_words_are_split_and_real_words_kept():
    from ingest.text_glue import english_words, unglue

    assert len(english_words()) > 15000
    assert unglue("Purchases ofproperty, plant and equipment") == "Purchases of property, plant and equipment"
    assert unglue("Cash Flowsfrom Investing") == "Cash Flows from Investing"
    assert unglue("component ofthe calculation offree cash flow") == "component of the calculation of free cash flow"
    words = "income information inventories interest therefore forward often other insurance offset"
    assert unglue(words) == words  # words of their own are never cut ("in come")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from bi_env(tmp_path_factory, TENANT, "TALLIS_2019_10K.html", REPORT, 1)


def test_a_row_printed_with_a_glued_word_is_found_by_its_name_and_cited_as_printed(env):
    out = ask_bi(env, TENANT, "What was the capital expenditure in 2019?")
    assert out["route"] == "bi" and out["supported"] is True, out
    assert "812" in out["answer"] and "Purchases of property, plant and equipment" in out["answer"]
    assert "Purchases ofproperty" in out["citations"][0]["quote"]  # the page's line, verbatim
    # the amount of capital expenditure is its magnitude; the statement prints it as an outflow, (812)
    first = out["answer"].splitlines()[0]
    assert "-812" not in first and "812" in first and "outflow" in first, first
    net = ask_bi(env, TENANT, "What was the net cash used in investing activities in 2019?")
    assert "-717" in net["answer"].splitlines()[0], net  # a net flow keeps its sign


def test_no_model_draft_is_written_where_the_verifier_can_never_support_one(env):
    """The shipped calibration never supports a model draft (rag:model is not measured): the RAG route answers
    with what it found and never calls the model (its deps raise on a call); with ``draft_unverifiable`` on
    it does call it."""
    from app.agent.graph import build_graph
    from app.agent.state import AgentDeps, turn_input
    from app.agent.calibration import can_support

    kb, deps, doc = env
    assert not can_support("rag:model") and can_support("bi:bi")
    q = "What drove the cash used in investing activities of Tallis?"
    config = {"configurable": {"thread_id": "no-draft", "scratch": {}}}
    out = build_graph(deps).invoke(turn_input(TENANT, q, "rag", [doc]), config)
    assert out["route"] == "rag" and out["messages"][-1]["answer"]["answer"], out
    asked = []

    def model():
        asked.append(1)
        raise RuntimeError("no model here")

    drafting = AgentDeps(kb, deps.settings.model_copy(update={"draft_unverifiable": True}), model)
    config = {"configurable": {"thread_id": "draft", "scratch": {}}}
    try:
        build_graph(drafting).invoke(turn_input(TENANT, q, "rag", [doc]), config)
    except RuntimeError:
        pass
    assert asked
