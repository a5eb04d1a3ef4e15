"""A quarterly filing's column periods by its fiscal calendar are read once at ingest and stored with the
document; the planner's views take the stored periods, the same as reading them from the catalogue."""
from __future__ import annotations

import pytest

from app_test_helpers import bi_env  # tests/app/app_test_helpers.py
from test_bi_metrics import QUARTER  # tests/app/test_bi_metrics.py


@pytest.fixture(scope="module")
def quarter_env(tmp_path_factory):
    yield from bi_env(tmp_path_factory, "bi-quarter-stored", "GLOBEX_2024Q2_10Q.html", QUARTER, 2)


def test_stored_column_periods_are_the_catalogue_reading(quarter_env):
    from app.agent.bi import fiscal as bi_fiscal
    from app.agent.bi.catalog import load_views

    kb, _deps, doc_id = quarter_env
    kbt = kb.for_tenant("bi-quarter-stored")
    tables = kbt.list_tables()
    stored, read = load_views(kb, "bi-quarter-stored", tables, {}), load_views(kb, "bi-quarter-stored", tables, {})
    bi_fiscal.apply_stored(stored, kbt)
    bi_fiscal.apply(read)
    periods = [[(c.key, c.period) for c in v.cols] for v in stored]
    assert periods == [[(c.key, c.period) for c in v.cols] for v in read]
    labels = {c.period.label() for v in stored for c in v.cols if c.period is not None}
    assert {"Q2 2024", "Q2 2023"} <= labels, labels
    assert kbt.document_facts(doc_id).columns  # the calendar re-read some columns, and that is stored
