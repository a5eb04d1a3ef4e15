"""Document facts are read once at ingest and stored with the document; a document stored before facts existed
gets them on its first read, stored once; every read is bound to its tenant. Real files through the real
KnowledgeBase (SQLite, Qdrant Edge, the packaged embedder)."""
from __future__ import annotations

from datetime import date

from sqlmodel import Session, select

QUARTER = """<html><body><h1>Globex Corp quarterly report (Form 10-Q) for the quarter ended July 29, 2023</h1>
<p>FORM 10-Q. For the quarterly period ended July 29, 2023.</p>
<p>GLOBEX CORPORATION (Exact name of registrant as specified in its charter)</p>
<p>Condensed consolidated balance sheets (in millions)</p>
<table>
<tr><th></th><th>July 29, 2023</th><th>January 28, 2023</th><th>July 30, 2022</th></tr>
<tr><td>Cash and cash equivalents</td><td>1,093</td><td>1,874</td><td>840</td></tr>
<tr><td>Merchandise inventories</td><td>5,651</td><td>5,140</td><td>6,043</td></tr>
</table>
<p>Condensed consolidated statements of earnings (in millions)</p>
<table>
<tr><th></th><th>Three Months Ended July 29, 2023</th><th>Three Months Ended July 30, 2022</th>
<th>Six Months Ended July 29, 2023</th><th>Six Months Ended July 30, 2022</th></tr>
<tr><td>Revenue</td><td>9,583</td><td>10,329</td><td>19,050</td><td>20,976</td></tr>
<tr><td>Cost of sales</td><td>7,355</td><td>7,975</td><td>14,642</td><td>16,190</td></tr>
</table>
<p>Revenue for the six months ended July 29, 2023 decreased on lower comparable sales in fiscal 2024.</p>
</body></html>"""

CONTRACT = """SUPPLY AGREEMENT

This Supply Agreement is made on March 3, 2021 by and between Acme Widgets Corp., a Delaware corporation, and
Beta Parts LLC, a Texas limited liability company.

1. Definitions
"Products" means the widgets listed in Exhibit A.

1.1 Interpretation
Headings are for convenience only.

2. Term
This Agreement starts on the Effective Date and runs for three years.

14. Governing Law
This Agreement is governed by the laws of the State of New York.
"""


def _ingest(kb, tmp_path, name: str, text: str, tenant: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    res = kb.ingest_file(path, tenant)
    assert res.status == "ingested", res
    return res.doc_id


def _row(kb, doc_id):
    from ingest.models import DocumentFactsRow

    with Session(kb.engine) as s:
        return s.get(DocumentFactsRow, doc_id)


def test_facts_are_read_at_ingest_and_stored_with_the_document(kb, tmp_path):
    q = _ingest(kb, tmp_path, "globex-report.html", QUARTER, "t1")
    c = _ingest(kb, tmp_path, "supply.txt", CONTRACT, "t1")
    assert _row(kb, q) is not None and _row(kb, c) is not None  # written by the ingest commit itself
    facts = kb.for_tenant("t1").facts()
    assert list(facts) == [q, c]  # file-name order
    f = facts[q]
    assert (f.filing.form, f.filing.fiscal_year, f.filing.quarter) == ("10-Q", 2024, 2)
    assert f.company == "GLOBEX CORPORATION"
    # the six-month columns close Q2 of the fiscal years ending January 2024 and 2023; "January 28, 2023" is
    # FY2023's end
    assert f.calendar == {date(2023, 7, 29): (2024, 2), date(2022, 7, 30): (2023, 2)}
    periods = {p for cols in f.columns.values() for p in cols.values()}
    assert {(2024, 2), (2023, None), (2023, 2)} <= periods, f.columns
    assert {"revenue", "inventories"} <= f.table_words
    assert "globex" in f.profile
    k = facts[c]
    assert k.parties[:2] == ["Acme Widgets Corp", "Beta Parts LLC"] and date(2021, 3, 3) in k.dates
    assert k.filing.form is None and not k.calendar
    assert k.sections == []  # a read of every document leaves the section trees out
    k = kb.for_tenant("t1").document_facts(c)
    numbered = {s.number: s for s in k.sections if s.number}
    assert {"1", "1.1", "2", "14"} <= set(numbered), k.sections
    assert k.sections[numbered["1.1"].parent].number == "1" and numbered["1.1"].level == 2
    assert all(s.first_chunk <= s.last_chunk and s.page >= 1 for s in k.sections)
    # whole-text words: which documents name a word, this tenant's only
    hits = kb.for_tenant("t1").docs_with_words(["delaware", "merchandise", "nowhere"])
    assert hits == {"delaware": {c}, "merchandise": {q}, "nowhere": set()}


def test_facts_are_bound_to_their_tenant(kb, tmp_path):
    a = _ingest(kb, tmp_path, "supply.txt", CONTRACT, "alpha")
    assert kb.for_tenant("beta").document_facts(a) is None
    assert kb.for_tenant("beta").facts() == {}
    assert kb.for_tenant("beta").docs_with_words(["delaware"]) == {"delaware": set()}
    assert kb.for_tenant("alpha").document_facts(a).parties


def test_a_document_stored_before_facts_gets_them_on_first_read_once(kb, tmp_path):
    from ingest.facts import FACTS_VERSION
    from ingest.models import DocumentFactsRow

    c = _ingest(kb, tmp_path, "supply.txt", CONTRACT, "t1")
    at_ingest, at_ingest_sections = _row(kb, c).facts_json, _row(kb, c).sections_json
    with Session(kb.engine) as s:  # a database from before facts existed: no row
        s.delete(s.get(DocumentFactsRow, c))
        s.commit()
    kbt = kb.for_tenant("t1")
    assert kbt.document_facts(c).parties[:2] == ["Acme Widgets Corp", "Beta Parts LLC"]
    row = _row(kb, c)
    assert row is not None and row.facts_version == FACTS_VERSION
    assert row.facts_json == at_ingest  # the same facts from the stored chunks and catalogue as at ingest
    assert row.sections_json == at_ingest_sections and '"number": "14"' in row.sections_json
    # stored once: the next read takes the stored row as it is
    with Session(kb.engine) as s:
        r = s.get(DocumentFactsRow, c)
        r.facts_json = r.facts_json.replace("Beta Parts LLC", "Stored Row LLC")
        s.add(r)
        s.commit()
    assert "Stored Row LLC" in kbt.document_facts(c).parties
    # facts computed by another FACTS_VERSION are computed again
    with Session(kb.engine) as s:
        r = s.get(DocumentFactsRow, c)
        r.facts_version = "old"
        s.add(r)
        s.commit()
    assert "Beta Parts LLC" in kbt.document_facts(c).parties and _row(kb, c).facts_version == FACTS_VERSION


def test_a_new_version_replaces_the_facts_and_deleting_the_document_removes_them(kb, tmp_path):
    c = _ingest(kb, tmp_path, "supply.txt", CONTRACT, "t1")
    _ingest(kb, tmp_path, "supply.txt", CONTRACT.replace("Beta Parts LLC", "Gamma Tools Inc"), "t1")
    f = kb.for_tenant("t1").document_facts(c)
    assert f.version == 2 and "Gamma Tools Inc" in f.parties and _row(kb, c).version == 2
    assert kb.delete_document("t1", c)
    assert _row(kb, c) is None and kb.for_tenant("t1").facts() == {}
    from ingest.models import DocumentFactsRow

    with Session(kb.engine) as s:
        assert s.exec(select(DocumentFactsRow)).all() == []


def test_a_facts_table_from_before_the_section_column_gets_it(tmp_path):
    import sqlalchemy as sa

    from ingest.store.sql import make_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("ALTER TABLE lx_document_facts DROP COLUMN sections_json")
    engine.dispose()
    engine = make_engine(url)
    assert "sections_json" in {c["name"] for c in sa.inspect(engine).get_columns("lx_document_facts")}
    engine.dispose()
