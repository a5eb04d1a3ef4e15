"""A question naming a company is answered from that company's documents only: real files ingested through
the real KnowledgeBase, the real agent graph. A company no document is about gets "the documents do not
contain", never another company's table or text, also when several documents are in scope."""
from __future__ import annotations

import pytest

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py

TENANT = "company-scope"

ACME = """<html><body><h1>Acme Corp annual report 2019</h1>
<p>Acme Corp makes widgets. Consolidated statements of cash flows (in millions)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th></tr>
<tr><td>Net sales</td><td>1,200.0</td><td>1,000.0</td></tr>
<tr><td>Purchases of property, plant and equipment</td><td>(45.5)</td><td>(38.2)</td></tr>
</table></body></html>"""

GLOBEX = """<html><body><h1>Globex Inc annual report 2019</h1>
<p>Globex Inc sells services. Cash flow statement (in millions)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th></tr>
<tr><td>Net sales</td><td>5,000.0</td><td>4,000.0</td></tr>
<tr><td>Capital expenditures</td><td>(300.0)</td><td>(250.0)</td></tr>
</table></body></html>"""


def test_mentions_read_possessives_and_named_companies_not_terms():
    from app.agent.company_scope import mentions

    def names(q):
        return [m.tokens for m in mentions(q)]

    assert names("What is 3M's FY2018 capex?") == [["3m"]]
    assert names("What is the year end FY2019 total amount of inventories for Best Buy? Answer in USD millions.") \
        == [["best", "buy"]]
    assert names("What is the FY2016 COGS for Microsoft?") == [["microsoft"]]
    assert names("What is the nature & purpose of AMCOR's restructuring liability as of Q2 of FY2023 close?") \
        == [["amcor"]]
    # generic possessives, periods, terms and contractions are not companies
    assert names("What is the Company's revenue in 2019?") == []
    assert names("Here's the question: what was EBITDA for FY2015?") == []
    assert names("What was the change in net sales from 2018 to 2019?") == []


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from app.agent.state import AgentDeps
    from ingest.knowledge_base import KnowledgeBase

    settings = small_settings(tmp_path_factory.mktemp("company-scope"))
    kb = KnowledgeBase(settings)
    docs = {}
    for name, text in (("ACME_2019_10K.html", ACME), ("GLOBEX_2019_10K.html", GLOBEX)):
        path = settings.data_dir / name
        path.write_text(text)
        res = kb.ingest_file(path, TENANT)
        assert res.status == "ingested" and res.tables == 1, res
        docs[name.split("_")[0].lower()] = res.doc_id

    def no_model():
        raise AssertionError("no model is needed to say a company is not in the documents")

    yield kb, AgentDeps(kb, settings, no_model), docs
    kb.close()


def run(env, question, doc_ids=None, mode="auto"):
    from app.agent.graph import build_graph
    from app.agent.state import turn_input

    kb, deps, docs = env
    graph = build_graph(deps)
    out = graph.invoke(turn_input(TENANT, question, mode, doc_ids), {"configurable": {"thread_id": question}})
    return out["messages"][-1]["answer"]


@pytest.mark.parametrize("mode", ["auto", "bi", "rag"])
def test_a_company_no_document_is_about_is_not_answered_from_another(env, mode):
    docs = env[2]
    for doc_ids in (None, [docs["acme"], docs["globex"]]):  # unscoped, and several documents in scope
        a = run(env, "What is 3M's FY2018 capex?", doc_ids, mode)
        assert a["route"] == "none" and a["supported"] is False and a["citations"] == [], a
        assert "do not contain" in a["answer"] and "3M" in a["answer"]
    # named, but not among the documents the caller passed
    a = run(env, "What was Globex's capital expenditure in 2019?", [docs["acme"]], mode)
    assert a["route"] == "none" and "Globex" in a["answer"]


def test_a_named_company_scopes_bi_and_rag_to_its_documents(env):
    from app.agent.bi.planner import plan_question
    from app.agent.scope import resolve

    kb, deps, docs = env
    tables = kb.list_tables(TENANT)
    for q, doc, value in (("What was Globex's capital expenditure in 2019?", "globex", -300.0),
                          ("What was the capex for Acme in 2019?", "acme", -45.5)):
        plan = plan_question(q, tables, kb=kb, tenant=TENANT)
        assert plan.program is not None and plan.program.table.doc_id == docs[doc], plan
        assert [o.cell.value for o in plan.program.operands] == [value]
        assert resolve(kb, TENANT, q).doc_ids == [docs[doc]]
    a = run(env, "What was Globex's capital expenditure in 2019?")
    assert a["route"] == "bi" and all(c["doc_id"] == docs["globex"] for c in a["citations"])


def test_a_short_form_of_the_registrant_names_its_filing(tmp_path_factory):
    """"AMEX" is no word of the filing: it is a short form of its registrant's name (read from the cover page at
    ingest), so the question is about that filing, not "not in the documents"."""
    from app.agent.company_scope import company_scope_of, short_forms
    from ingest.knowledge_base import KnowledgeBase

    assert {"amex", "ae"} - short_forms("American Express Company") == {"ae"}  # three letters at least
    assert "jpm" in short_forms("JPMORGAN CHASE & CO") and "amd" in short_forms("ADVANCED MICRO DEVICES, INC")
    settings = small_settings(tmp_path_factory.mktemp("short-forms"))
    kb = KnowledgeBase(settings)
    try:
        ids = {}
        for name, text in (("filing_a.html", "<html><body><p>FORM 10-K</p><p>American Express Company</p><p>(Exact "
                            "name of registrant as specified in its charter)</p><p>Annual report 2022.</p></body></html>"),
                           ("ACME_2019_10K.html", ACME)):
            path = settings.data_dir / name
            path.write_text(text)
            ids[name] = kb.ingest_file(path, TENANT).doc_id
        kbt = kb.for_tenant(TENANT)
        cs = company_scope_of(kbt, "Does AMEX have an improving operating margin profile as of 2022?")
        assert cs.doc_ids == [ids["filing_a.html"]] and not cs.missing, cs
        cs = company_scope_of(kbt, "Does AMX have an improving operating margin profile as of 2022?")  # no short form
        assert cs.doc_ids is None and cs.missing == ["AMX"], cs
    finally:
        kb.close()
