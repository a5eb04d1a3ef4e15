"""BI planner on real tables ingested through the real ingest path (HTML files written here): each program kind
computes the right value with its formula, SQL and citation; synonyms ground rows; a question without a
confident plan hands over to RAG; a second document's table is never used outside the scope."""
from __future__ import annotations

import pytest

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py

TENANT = "bi-planner"

ACME = """<html><body><h1>Acme Corp annual report 2019</h1>
<p>Consolidated statements of operations (in millions)</p>
<table>
<tr><th></th><th>Year Ended December 31, 2019</th><th>Year Ended December 31, 2018</th><th>Year Ended December 31, 2017</th></tr>
<tr><td>Net sales</td><td>1,200.0</td><td>1,000.0</td><td>900.0</td></tr>
<tr><td>Cost of sales</td><td>700.0</td><td>650.0</td><td>600.0</td></tr>
<tr><td>Gross profit</td><td>500.0</td><td>350.0</td><td>300.0</td></tr>
<tr><td>Operating expenses:</td><td></td><td></td><td></td></tr>
<tr><td>Research and development</td><td>120.0</td><td>100.0</td><td>80.0</td></tr>
<tr><td>Selling, general and administrative</td><td>80.0</td><td>70.0</td><td>60.0</td></tr>
<tr><td>Total operating expenses</td><td>200.0</td><td>170.0</td><td>140.0</td></tr>
<tr><td>Operating income</td><td>300.0</td><td>180.0</td><td>160.0</td></tr>
<tr><td>Purchases of property, plant and equipment</td><td>(45.5)</td><td>(38.2)</td><td>(30.0)</td></tr>
</table>
<p>Net sales grew because customers bought more widgets.</p>
</body></html>"""

GLOBEX = """<html><body><h1>Globex Inc annual report 2019</h1>
<p>Income statement (in millions)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th></tr>
<tr><td>Net sales</td><td>5,000.0</td><td>4,000.0</td></tr>
<tr><td>Royalty income</td><td>75.0</td><td>60.0</td></tr>
<tr><td>Operating income</td><td>900.0</td><td>700.0</td></tr>
</table></body></html>"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from app.agent.state import AgentDeps
    from ingest.knowledge_base import KnowledgeBase

    settings = small_settings(tmp_path_factory.mktemp("bi-planner"))
    kb = KnowledgeBase(settings)
    docs = {}
    for name, text in (("acme_annual_2019.html", ACME), ("globex_annual_2019.html", GLOBEX)):
        path = settings.data_dir / name
        path.write_text(text)
        res = kb.ingest_file(path, TENANT)
        assert res.status == "ingested" and res.tables == 1, res
        docs[name.split("_")[0]] = res.doc_id

    def no_model():
        raise AssertionError("the BI route must not need a model")

    yield kb, AgentDeps(kb, settings, no_model), docs
    kb.close()


def ask(env, question, doc="acme"):
    from app.agent.nodes_bi import make_bi_node
    from app.agent.state import turn_input

    kb, deps, docs = env
    state = turn_input(TENANT, question, "bi", [docs[doc]] if doc else None)
    return make_bi_node(deps)(state)


def computed(env, out, op):
    """The value the answer's SQL computes, run again through the read-only validator."""
    kb = env[0]
    res = kb.run_sql(TENANT, out["sql"])
    assert res.rows == out["rows"]
    return res.rows[0][res.columns.index(op)]


def assert_bi(env, out, doc="acme"):
    assert out["route"] == "bi", out
    assert out["supported"] is True
    c = out["citations"][0]
    assert c["doc_id"] == env[2][doc] and c["filename"].startswith(doc) and c["page"] == 1
    assert "SQL: SELECT" in out["answer"] and out["sql"] in out["answer"]


def test_difference_is_new_minus_old(env):
    out = ask(env, "What was the change in net sales from 2018 to 2019?")
    assert_bi(env, out)
    assert computed(env, out, "difference") == pytest.approx(200.0)
    assert "1,200 − 1,000 = 200" in out["answer"] and "Net sales (2019) 1,200" in out["answer"]


def test_percentage_change(env):
    out = ask(env, "What was the percentage change in gross profit between 2018 and 2019?")
    assert_bi(env, out)
    assert computed(env, out, "pct_change") == pytest.approx(42.86, abs=0.01)
    assert "(500 − 350) / 350 × 100 = 42.86%" in out["answer"]


def test_average_over_the_years_mentioned(env):
    out = ask(env, "What was the average research and development expense for 2018 and 2019?")
    assert_bi(env, out)
    assert computed(env, out, "average") == pytest.approx(110.0)
    assert "(120 + 100) / 2 = 110" in out["answer"] or "(100 + 120) / 2 = 110" in out["answer"]
    span = ask(env, "What was the average cost of sales from 2017 to 2019?")
    assert computed(env, span, "average") == pytest.approx(650.0)  # every year in the range


def test_sum_of_two_line_items(env):
    out = ask(env, "What was the sum of research and development and selling, general and administrative in 2019?")
    assert_bi(env, out)
    assert computed(env, out, "sum") == pytest.approx(200.0)
    assert "120 + 80 = 200" in out["answer"]


def test_ratio_and_share_of_a_total(env):
    out = ask(env, "What was the ratio of cost of sales to net sales in 2019?")
    assert_bi(env, out)
    assert computed(env, out, "ratio") == pytest.approx(700 / 1200)
    assert "700 / 1,200 = 0.58" in out["answer"]
    share = ask(env, "What percentage of total operating expenses was research and development in 2018?")
    assert computed(env, share, "ratio") == pytest.approx(100 / 170 * 100)
    assert "100 / 170 × 100 = 58.82%" in share["answer"]


REGIONS = """<html><body><h1>Initech annual report 2021</h1>
<p>Revenue by region (in millions)</p>
<table>
<tr><th></th><th>2021</th><th>2020</th></tr>
<tr><td>France</td><td>300.0</td><td>280.0</td></tr>
<tr><td>Germany</td><td>100.0</td><td>90.0</td></tr>
<tr><td>Total Europe</td><td>400.0</td><td>370.0</td></tr>
<tr><td>Americas</td><td>600.0</td><td>530.0</td></tr>
<tr><td>Total revenue</td><td>1,000.0</td><td>900.0</td></tr>
</table></body></html>"""


def test_a_share_reads_each_row_where_its_whole_label_stands(env, tmp_path):
    """"revenue from total Europe as a percentage of the total revenue": "revenue" first occurs in the part
    asked, but the row "Total revenue" is named whole at the end, so it divides."""
    from app.agent.nodes_bi import make_bi_node
    from app.agent.state import turn_input

    kb, deps, _docs = env
    path = tmp_path / "initech_annual_2021.html"
    path.write_text(REGIONS)
    res = kb.ingest_file(path, "bi-regions")
    assert res.status == "ingested" and res.tables == 1, res
    q = "How much is the 2021 revenue from total Europe as a percentage of the 2021 total revenue?"
    out = make_bi_node(deps)(turn_input("bi-regions", q, "bi", [res.doc_id]))
    assert out["route"] == "bi" and "400 / 1,000 × 100 = 40%" in out["answer"], out["answer"]


def test_max_over_periods_and_lookup_with_synonyms(env):
    out = ask(env, "Which year had the highest operating income?")
    assert_bi(env, out)
    assert out["answer"].startswith("2019 (highest Operating income")
    capex = ask(env, "What was capital expenditure in 2019?")  # ~ purchases of property, plant and equipment
    assert_bi(env, capex)
    assert capex["rows"] == [["Purchases of property, plant and equipment", -45.5]]
    assert ": 45.5" in capex["answer"] and "printed as an outflow" in capex["answer"]  # the concept's amount
    printed = ask(env, "What were the purchases of property, plant and equipment in 2019?")  # the row, as printed
    assert ": -45.5" in printed["answer"] and "outflow" not in printed["answer"], printed["answer"]
    revenue = ask(env, "What was revenue in 2018?")  # ~ net sales
    assert revenue["rows"] == [["Net sales", 1000.0]]


def test_scope_never_uses_another_documents_table(env):
    # the caller passed Acme: Globex's royalty income is not an answer, RAG gets the question
    out = ask(env, "What was royalty income in 2019?", doc="acme")
    assert out["route"] == "rag" and out.get("fallback")
    acme = ask(env, "What was operating income in 2019?", doc="acme")
    assert acme["rows"] == [["Operating income", 300.0]] and acme["citations"][0]["doc_id"] == env[2]["acme"]
    # no doc_ids: the question names Globex, so only Globex's table is in scope
    named = ask(env, "What was Globex's net sales in 2019?", doc=None)
    assert_bi(env, named, doc="globex")
    assert named["rows"] == [["Net sales", 5000.0]]


def test_not_confident_hands_over_to_rag_without_raising(env):
    for q in ("Why did net sales grow in 2019?", "What is the governing law of the agreement?",
              "What was net sales in 2015?", "Who is the chief executive officer?"):
        out = ask(env, q)
        assert out["route"] == "rag" and out["fallback"], (q, out)


def test_routing_decides_by_a_confident_plan(env):
    from app.agent.graph import build_graph
    from app.agent.state import turn_input

    kb, deps, docs = env
    graph = build_graph(deps)

    def route_of(q):  # the node the frame's routing sends the question to
        for upd in graph.stream(turn_input(TENANT, q, "auto", [docs["acme"]]), {"configurable": {"scratch": {}}},
                                stream_mode="updates"):
            if "bi" in upd or "retrieve" in upd:
                return "bi" if "bi" in upd else "rag"

    assert route_of("What was the change in net sales from 2018 to 2019?") == "bi"
    assert route_of("How did gross profit change in 2019 compared to 2018?") == "bi"
    assert route_of("Why did net sales grow in 2019?") == "rag"
    assert route_of("What do customers buy?") == "rag"


def test_the_plan_is_made_once_per_question_and_the_run_keeps_its_deadline(env, monkeypatch):
    """The frame's plan and the time budget live in the run's scratch (an empty dict when the run starts):
    the BI node runs the frame's plan, never plans again."""
    from app.agent import nodes_bi
    from app.agent.bi import planner as bi_planner
    from app.agent.graph import build_graph
    from app.agent.state import turn_input

    kb, deps, docs = env
    calls = []
    real = bi_planner.plan_question

    def counted(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(bi_planner, "plan_question", counted)
    monkeypatch.setattr(nodes_bi, "plan_question", counted, raising=False)
    scratch: dict = {}
    config = {"configurable": {"thread_id": "plan-once", "scratch": scratch}}
    out = build_graph(deps).invoke(turn_input(TENANT, "What was the change in net sales from 2018 to 2019?", "auto",
                                              [docs["acme"]]), config)
    assert out["route"] == "bi" and len(calls) == 1, calls
    assert scratch.get("bi_plan") is not None and scratch["deadline"] > scratch["started"]


def test_past_the_table_limit_the_plan_reads_the_documents_a_search_finds(env, monkeypatch):
    """A question that names no document or company, over more tables than the planner reads, is planned over
    the tables of the documents the search ranks first (here: the one that speaks of royalties)."""
    from app.agent.bi import planner as bi_planner

    kb, deps, docs = env
    monkeypatch.setattr(bi_planner, "MAX_SCOPE_TABLES", 1)
    monkeypatch.setattr(bi_planner, "SEARCH_DOCS", 1)
    res = bi_planner.plan_question("What was royalty income in 2019?", kb.list_tables(TENANT), kb=kb, tenant=TENANT)
    assert "the documents search finds" in res.scope and res.program is not None
    assert res.program.table.doc_id == docs["globex"] and res.program.operands[0].cell.value == 75.0


def test_tables_are_read_whole_for_their_tenant_only(env):
    kb, deps, docs = env
    names = [t.sql_name for t in kb.list_tables(TENANT)]
    read = kb.read_tables(TENANT, names)
    assert set(read) == set(names) and all("row_num" in r.columns and r.rows for r in read.values())
    assert kb.read_tables("another-tenant", names) == {}


def test_ranking_items_of_a_kind_the_table_does_not_name_is_in_doubt(env):
    """"Which segment ..." over a table whose title and headers say nothing of segments (an income statement's
    line items): the item found is stated, not supported; "which item" asks no kind."""
    from app.agent.bi.catalog import load_views
    from app.agent.bi.table_program import build_program
    from app.agent.bi.question import parse_question

    kb, deps, docs = env
    view = next(v for v in load_views(kb, TENANT, kb.list_tables(TENANT), {}) if v.info.doc_id == docs["acme"])
    ranked = build_program(view, parse_question("Which segment had the highest amount in 2019?"))
    assert ranked.op == "max" and "the table does not say its rows are the segment items the question ranks" in ranked.doubts
    items = build_program(view, parse_question("Which item had the highest amount in 2019?"))
    assert items.op == "max" and not any("does not say its rows" in d for d in items.doubts)


def test_a_row_named_whole_keeps_its_operation_word_and_a_range_lists_every_year(env):
    """"Total operating expenses" is the row's name, not a sum of its years; "2019 to 2017 respectively" lists
    every year of the range, not its two ends."""
    out = ask(env, "What were the Total operating expenses in 2019 and 2018?")
    assert_bi(env, out)
    assert "200" in out["answer"] and "170" in out["answer"] and "370" not in out["answer"], out["answer"]
    out = ask(env, "What was the net sales for fiscal years 2019 to 2017 respectively?")
    assert_bi(env, out)
    assert all(v in out["answer"] for v in ("1,200", "1,000", "900")), out["answer"]
    out = ask(env, "What was the change in net sales from 2017 to 2019?")  # a change reads the two ends
    assert computed(env, out, "difference") == pytest.approx(300.0)


OBLIGATIONS = """<html><body><h1>Umbrella Corp annual report 2019</h1>
<p>Contractual obligations (in thousands)</p>
<table>
<tr><th></th><th>Total</th><th>Up to 1 year</th><th>1 to 3 years</th><th>3 to 5 years</th>
<th>More than 5 years</th></tr>
<tr><td>Operating lease obligations</td><td>48,410</td><td>16,164</td><td>19,812</td><td>6,551</td><td>5,883</td></tr>
<tr><td>Purchase obligations</td><td>97,219</td><td>52,300</td><td>20,150</td><td>7,120</td><td>17,649</td></tr>
</table></body></html>"""


def test_a_column_named_by_its_numbers_is_the_one_read(tmp_path_factory):
    """"Between 1 to 3 years" names the column "1 to 3 years"; "Up to 1 year" shares only "1" and "year"
    with the question, words the named column has too."""
    from app_test_helpers import ask_bi, bi_env

    gen = bi_env(tmp_path_factory, "bi-obligations", "UMBRELLA_2019_10K.html", OBLIGATIONS, 1)
    env = next(gen)
    try:
        out = ask_bi(env, "bi-obligations", "What were the operating lease obligations that are between 1 to 3 years?")
        head = out["answer"].split("\n")[0]
        assert "19,812" in head and "16,164" not in head, out["answer"]
        out = ask_bi(env, "bi-obligations", "What were the purchase obligations due in 3 to 5 years?")
        head = out["answer"].split("\n")[0]
        assert "7,120" in head and "20,150" not in head, out["answer"]
    finally:
        next(gen, None)


def test_what_share_of_a_whole_an_item_forms_divides_by_the_whole(env):
    """"What percentage of B does A form a part of": B, named first, divides (vocabulary.yaml
    reversed_ratio_verbs)."""
    out = ask(env, "What percentage of net sales does gross profit form a part of in 2019?")
    assert computed(env, out, "ratio") == pytest.approx(500 / 1200 * 100, abs=0.01), out["answer"]
