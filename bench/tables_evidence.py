"""financebench-dev questions whose evidence is a statement (or segment) table: does an extracted table on the
evidence page (0-based in questions.jsonl) hold the row the answer needs, a column of the period asked and the
value printed there -- and is that table classified as the statement it is, with the scale the filing states?
Used by ``python bench/bench_tables.py evidence``."""
from __future__ import annotations

import json
import re
from pathlib import Path

# ---- evidence rows of FinanceBench questions ----------------------------------------------------
# Questions of financebench-dev whose evidence is a statement (or segment) table: the row and period the
# answer needs, read from the question's evidence text. (question index in questions.jsonl, evidence page
# 0-based, row label, period year, period months or None for any, value as printed)
EVIDENCE_CELLS = [
    (0, 37, "Cost of sales", 2017, None, 111934), (0, 39, "Accounts payable", 2016, None, 25309),
    (0, 39, "Accounts payable", 2017, None, 34616), (0, 39, "Inventories", 2016, None, 11461),
    (0, 39, "Inventories", 2017, None, 16047),
    (1, 37, "Total net sales", 2016, None, 135987), (1, 37, "Total net sales", 2017, None, 177866),
    (6, 51, "Merchandise inventories", 2019, None, 5409),
    (7, 39, "Revenue", 2023, None, 46298), (7, 39, "Gross profit", 2023, None, 9912),
    (7, 39, "Gross profit", 2022, None, 11640),
    (9, 41, "Total cash provided by operating activities", 2023, None, 1824),
    (13, 67, "Total current assets", 2016, None, 1001425), (13, 67, "Total current liabilities", 2016, None, 577464),
    (14, 37, "Total assets", 2021, None, 59268),
    (18, 51, "Total cost of revenue", 2016, None, 32780),
    (19, 39, "Revenues", 2015, None, 6779511), (19, 39, "Operating income", 2015, None, 305826),
    (19, 41, "Depreciation and amortization of property, equipment and intangibles", 2015, None, 62283),
    (20, 44, "Total current liabilities", 2017, None, 5466312),
    (22, 37, "Developed Rest of World", 2023, 3, 1305),
]


# the statement each evidence page prints (a segment table is no primary statement)
EVIDENCE_KIND = {(0, 37): "income_statement", (0, 39): "balance_sheet", (1, 37): "income_statement",
                 (6, 51): "balance_sheet", (7, 39): "income_statement", (9, 41): "cash_flow", (13, 67): "balance_sheet",
                 (14, 37): "balance_sheet", (18, 51): "income_statement", (19, 39): "income_statement",
                 (19, 41): "cash_flow", (20, 44): "balance_sheet", (22, 37): ""}


def _letters(s: str) -> str:
    return re.sub(r"[^a-z]", "", str(s or "").lower())


def cell_found(tables, label: str, year: int, months: int | None, value: float, kind: str | None = None,
               scale: str | None = None) -> str:
    """"ok", or what is missing: "row", "period" (row found, no column of that period), "value", "kind" (the
    table is not classified as the statement it is) or "scale" (its scale is not the one the filing states)."""
    want = _letters(label)
    best = "row"
    found = ""
    for t in tables:
        rows = [i for i, m in enumerate(t.row_meta) if _letters(m.label) == want] if t.row_meta else []
        if not rows:
            continue
        best = "period" if best == "row" else best
        cols = [j for j, c in enumerate(t.columns) if c.period and c.fiscal_year == year
                and (months is None or c.period_months == months)]
        if not cols:
            continue
        best = "value"
        if any(t.rows[i][j] is not None and abs(abs(t.rows[i][j]) - value) < 0.5 for i in rows for j in cols):
            if kind is not None and t.statement != kind:
                found = found or "kind"
            elif scale is not None and t.scale != scale:
                found = found or "scale"
            else:
                return "ok"
    return found or best


def bench_evidence(limit: int | None, eval_dir: Path, typed_tables) -> None:
    """For each listed cell: is it on the evidence page, in a typed table of the right kind and scale?
    ``typed_tables(pdf)`` -> (parsed document, typed tables)."""
    folder = eval_dir / "financebench-dev"
    if not (folder / "questions.jsonl").exists():
        print(f"SKIP: {folder} is absent")
        return
    questions = [json.loads(x) for x in (folder / "questions.jsonl").read_text().splitlines() if x.strip()]
    by_doc: dict[str, list] = {}
    for item in EVIDENCE_CELLS[:limit]:
        by_doc.setdefault(questions[item[0]]["doc_name"], []).append(item)
    from ingest.tables.rows import find_scale

    cells_ok, cells_loose, per_q = 0, 0, {}
    for doc, items in by_doc.items():
        _, typed = typed_tables(folder / "pdfs" / f"{doc}.pdf")
        for qi, page0, label, year, months, value in items:
            on_page = [t for t in typed if t.page == page0 + 1]
            evidence = next(e["evidence_text"] for e in questions[qi]["evidence"] if e["evidence_page_num"] == page0)
            got = cell_found(on_page, label, year, months, value, EVIDENCE_KIND.get((qi, page0)), find_scale(evidence))
            loose = cell_found(on_page, label, year, months, value)
            cells_loose += loose == "ok"
            cells_ok += got == "ok"
            per_q.setdefault(qi, []).append(got == "ok")
            print(f"q{qi} {doc} page {page0} (0-based): {label!r} {year}{f' {months}M' if months else ''} = {value}: "
                  f"{got if got == 'ok' else 'no ' + got} ({len(on_page)} tables on the page)", flush=True)
    n = sum(len(v) for v in by_doc.values())
    q_ok = sum(all(v) for v in per_q.values())
    print(f"\nevidence cells (row label + period column + value on the evidence page): {cells_loose}/{n}; "
          f"and in a table of the right statement kind and scale: {cells_ok}/{n}; "
          f"questions with every needed cell (kind and scale too): {q_ok}/{len(per_q)}")
