"""Table extraction quality and PDF parse speed on ../shared/eval (skips with a message when absent).

  python bench/bench_tables.py icdar [--limit N]     detection recall/precision (IoU >= 0.5 against the
                                                     *-reg.xml regions) and cell accuracy on matched tables
                                                     (*-str.xml), ours beside plain pdfplumber find_tables()
  python bench/bench_tables.py periods [--limit N] [-v]  financebench-dev: per filing, the primary statements
                                                     (income, balance sheet, cash flow) found with period
                                                     columns; statement tables without periods; period-like
                                                     headers read as periods
  python bench/bench_tables.py evidence              financebench-dev questions whose evidence is a statement
                                                     table: does a table on the evidence page hold the row,
                                                     the period column and the value
  python bench/bench_tables.py parse [--limit N]     parse-only pages/s: pdfplumber on every page (before)
                                                     vs pypdfium2 text + pdfplumber on table pages (ours)
"""
from __future__ import annotations

import argparse
import re
import sys
import time
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EVAL = ROOT.parent / "shared" / "eval"


def _norm(s) -> str:
    return re.sub(r"\s+", "", str(s or "")).lower()


# ---- ICDAR 2013 ground truth ------------------------------------------------------------------------
def gold_regions(reg: Path) -> list[tuple[int, tuple[float, float, float, float]]]:
    """(page 1-based, bbox (x0, y0, x1, y1) in PDF points, origin bottom-left) per table region."""
    out = []
    for region in ET.parse(reg).getroot().iter("region"):
        bb = region.find("bounding-box")
        x1, y1, x2, y2 = (float(bb.get(k)) for k in ("x1", "y1", "x2", "y2"))
        out.append((int(region.get("page")), (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))))
    return out


def gold_cells(strf: Path) -> list[tuple[int, tuple, list[list[str]]]]:
    """(page, bbox, grid of normalised cell contents) per table region of the structure file."""
    out = []
    for region in ET.parse(strf).getroot().iter("region"):
        cells = []
        for c in region.iter("cell"):
            r, k = int(c.get("start-row")), int(c.get("start-col"))
            bb = c.find("bounding-box")
            cells.append((r, k, c.findtext("content") or "", [float(bb.get(x)) for x in ("x1", "y1", "x2", "y2")]))
        if not cells:
            continue
        nr, nc = max(c[0] for c in cells) + 1, max(c[1] for c in cells) + 1
        grid = [[""] * nc for _ in range(nr)]
        for r, k, text, _ in cells:
            grid[r][k] = _norm(text)
        box = (min(c[3][0] for c in cells), min(c[3][1] for c in cells),
               max(c[3][2] for c in cells), max(c[3][3] for c in cells))
        out.append((int(region.get("page")), box, grid))
    return out


def iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def adjacency(grid: list[list[str]]) -> set[tuple[str, str, str]]:
    """ICDAR-2013 style relations: each non-empty cell and its next non-empty neighbour right and below."""
    rel = set()
    for row in grid:
        cells = [c for c in row if c]
        rel |= {(a, b, "h") for a, b in zip(cells, cells[1:]) if a != b}
    width = max((len(r) for r in grid), default=0)
    for j in range(width):
        col = [r[j] for r in grid if j < len(r) and r[j]]
        rel |= {(a, b, "v") for a, b in zip(col, col[1:]) if a != b}
    return rel


def cell_scores(gold: list[list[str]], pred: list[list]) -> tuple[float, float]:
    """(adjacency-relation F1, share of gold cell contents found as a predicted cell)."""
    pgrid = [[_norm(c) for c in row] for row in pred]
    g, p = adjacency(gold), adjacency(pgrid)
    f1 = 2 * len(g & p) / (len(g) + len(p)) if g and p else 0.0
    gcells = [c for row in gold for c in row if c]
    pcells = {c for row in pgrid for c in row if c}
    content = sum(c in pcells for c in gcells) / len(gcells) if gcells else 0.0
    return f1, content


def _match(golds, preds):
    """Greedy one-to-one by IoU >= 0.5 on the same page; returns [(gold index, pred index)]."""
    pairs = sorted(((iou(g[1], p[1]), gi, pi) for gi, g in enumerate(golds) for pi, p in enumerate(preds)
                    if g[0] == p[0]), reverse=True)
    used_g, used_p, out = set(), set(), []
    for score, gi, pi in pairs:
        if score < 0.5 or gi in used_g or pi in used_p:
            continue
        used_g.add(gi)
        used_p.add(pi)
        out.append((gi, pi))
    return out


def _to_pdf_box(box, height):
    x0, top, x1, bottom = box
    return (x0, height - bottom, x1, height - top)


@contextmanager
def no_table_budget():
    """Quality is measured on every page: the parser's per-document time budget for the table search (which a
    loaded machine can exhaust) is lifted while the benchmark parses, and restored after."""
    import ingest.parsers.pdf as pdf_parser

    saved, pdf_parser.TABLE_BUDGET_S = pdf_parser.TABLE_BUDGET_S, float("inf")
    try:
        yield
    finally:
        pdf_parser.TABLE_BUDGET_S = saved


def predict(pdf_path: Path) -> tuple[list, list]:
    """(ours, plain pdfplumber): lists of (page, bbox bottom-left, rows)."""
    import pdfplumber

    from ingest.parsers.pdf import parse_pdf

    with no_table_budget():
        parsed = parse_pdf(pdf_path)
    ours, plain = [], []
    with pdfplumber.open(str(pdf_path)) as pdf:
        heights = [float(p.height) for p in pdf.pages]
        for n, page in enumerate(pdf.pages, start=1):
            for t in page.find_tables():
                plain.append((n, _to_pdf_box(t.bbox, heights[n - 1]), t.extract()))
            page.flush_cache()
    for t in parsed.tables:
        ours.append((t.page, _to_pdf_box(t.bbox, heights[t.page - 1]), t.rows))
    return ours, plain


def bench_icdar(limit: int | None) -> None:
    folder = EVAL / "icdar2013-eu"
    if not folder.is_dir():
        print(f"SKIP: {folder} is absent")
        return
    totals = {k: {"tp": 0, "pred": 0, "gold": 0, "f1": [], "content": []} for k in ("ours", "pdfplumber")}
    regs = sorted(folder.glob("*-reg.xml"))
    regs = [r for r in regs if (folder / r.name.replace("-reg.xml", ".pdf")).exists()][:limit]
    for reg in regs:
        stem = reg.name.replace("-reg.xml", "")
        golds = gold_regions(reg)
        structs = gold_cells(folder / f"{stem}-str.xml")
        try:
            ours, plain = predict(folder / f"{stem}.pdf")
        except Exception as exc:  # noqa: BLE001
            print(f"{stem}: failed {type(exc).__name__}: {exc}")
            ours, plain = [], []
        line = [stem, f"gold {len(golds)}"]
        for name, preds in (("ours", ours), ("pdfplumber", plain)):
            tot = totals[name]
            matches = _match(golds, preds)
            tot["tp"] += len(matches)
            tot["pred"] += len(preds)
            tot["gold"] += len(golds)
            smatch = _match(structs, preds)
            for si, pi in smatch:
                f1, content = cell_scores(structs[si][2], preds[pi][2])
                tot["f1"].append(f1)
                tot["content"].append(content)
            line.append(f"{name} {len(matches)}/{len(preds)}")
        print("  ".join(line), flush=True)
    print(f"\nICDAR-2013 eu ({len(regs)} PDFs), detection by IoU >= 0.5, cells on matched tables:")
    for name, t in totals.items():
        r = t["tp"] / t["gold"] if t["gold"] else 0.0
        p = t["tp"] / t["pred"] if t["pred"] else 0.0
        f1 = sum(t["f1"]) / len(t["f1"]) if t["f1"] else 0.0
        c = sum(t["content"]) / len(t["content"]) if t["content"] else 0.0
        print(f"  {name:10s} recall {r:.3f} ({t['tp']}/{t['gold']})  precision {p:.3f} ({t['tp']}/{t['pred']})  "
              f"cell adjacency F1 {f1:.3f}  cell content recall {c:.3f}  (n={len(t['f1'])})")


# ---- periods on real filings ----------------------------------------------------------------------
PRIMARY = ("income_statement", "balance_sheet", "cash_flow")
# a value-column header that names a period by itself: a year, FY/Q with its year ("Dec 31" alone does not)
PERIOD_HEADER = re.compile(r"(?<![\d.,$])(19|20)\d\d(?![\d,])|\b(FY|Q[1-4]|[1-4]Q)\s*'?\d\d\b", re.I)


def _doc_types() -> dict[str, str]:
    import json

    path = EVAL / "financebench-dev" / "documents.jsonl"
    if not path.exists():
        return {}
    return {d["doc_name"]: d.get("doc_type", "") for d in map(json.loads, path.read_text().splitlines()) if d}


def _typed_tables(pdf: Path):
    from ingest.parsers.pdf import parse_pdf
    from ingest.tables.typed import build_typed_table

    with no_table_budget():
        parsed = parse_pdf(pdf)
    return parsed, [t for t in (build_typed_table(r) for r in parsed.tables) if t is not None]


def bench_periods(limit: int | None, verbose: bool = False) -> None:
    """Per filing: which primary statements (income, balance sheet, cash flow) were found with period columns,
    statement tables without periods, and how many period-like value-column headers were read as periods."""
    folder = EVAL / "financebench-dev" / "pdfs"
    if not folder.is_dir():
        print(f"SKIP: {folder} is absent")
        return
    from ingest.tables.periods import NOT_A_PERIOD

    types = _doc_types()
    all_stmt = all_ok = all_tables = all_named = 0
    head_seen = head_read = stmt_cols = stmt_cols_ok = 0
    full = expected = 0
    incomplete = []
    for pdf in sorted(folder.glob("*.pdf"))[:limit]:
        t0 = time.perf_counter()
        parsed, typed = _typed_tables(pdf)
        stmts = [t for t in typed if t.statement in PRIMARY]
        ok = [t for t in stmts if any(c.period for c in t.columns)]
        named = [t for t in typed if sum(c.name.startswith("col_") for c in t.columns) * 2 < len(t.columns)]
        all_stmt += len(stmts)
        all_ok += len(ok)
        all_tables += len(typed)
        all_named += len(named)
        for t in typed:
            for c in t.columns:
                if c.role != "value":
                    continue
                if t.statement in PRIMARY:
                    stmt_cols += 1
                    stmt_cols_ok += bool(c.period)
                if PERIOD_HEADER.search(c.label) and not NOT_A_PERIOD.search(c.label):
                    head_seen += 1
                    head_read += bool(c.period)
        missing = [f"p{t.page} {t.statement} {t.title[:40]!r}" for t in stmts if t not in ok]
        marks = []
        for kind in PRIMARY:
            with_p = [t for t in ok if t.statement == kind]
            marks.append(f"{kind.split('_')[0]} " + (f"ok p{with_p[0].page}" if with_p else
                                                     ("NO PERIODS" if any(t.statement == kind for t in stmts)
                                                      else "MISSING")))
        must = types.get(pdf.stem, "") in ("10k", "10q")
        complete = all(any(t.statement == k for t in ok) for k in PRIMARY)
        full += complete
        expected += must
        if must and not complete:
            incomplete.append(pdf.stem)
        print(f"{pdf.stem} ({types.get(pdf.stem, '?')}): {len(parsed.pages)} pages, {len(typed)} tables, statement "
              f"tables {len(ok)}/{len(stmts)} with periods; {', '.join(marks)} ({time.perf_counter() - t0:.1f} s)"
              + (f"\n    without periods: {'; '.join(missing)}" if missing else "")
              + "".join(f"\n    parser warning: {w}" for w in parsed.warnings if "stopped" in w), flush=True)
        if verbose:
            for t in stmts:
                print(f"    p{t.page} {t.statement:16s} {t.title[:60]!r} periods {t.periods}")
    print(f"\nstatement tables (income statement, balance sheet, cash flows) with period columns: {all_ok}/{all_stmt} = "
          f"{all_ok / max(1, all_stmt):.3f}; their value columns with a period: {stmt_cols_ok}/{stmt_cols} = "
          f"{stmt_cols_ok / max(1, stmt_cols):.3f}")
    print(f"period-like value-column headers read as periods (all tables): {head_read}/{head_seen} = "
          f"{head_read / max(1, head_seen):.3f}; tables with mostly meaningful column names: {all_named}/{all_tables} = "
          f"{all_named / max(1, all_tables):.3f}")
    print(f"filings with all three primary statements found with periods: {full}/{len(sorted(folder.glob('*.pdf'))[:limit])}; "
          f"10-K/10-Q filings: {expected - len(incomplete)}/{expected}"
          + (f" (incomplete: {', '.join(incomplete)})" if incomplete else ""))


# ---- parse speed ----------------------------------------------------------------------------------
def _parse_before(path: Path) -> list[str]:
    """The former parser: pdfplumber text lines on every page, ruled tables where rules exist."""
    import pdfplumber

    texts = []
    with pdfplumber.open(str(path)) as pdf:
        for page in pdf.pages:
            texts.append("\n".join(ln["text"] for ln in page.extract_text_lines(return_chars=True)))
            if page.rects or page.lines:
                for t in page.find_tables():
                    t.extract()
            page.flush_cache()
    return texts


def word_match(before: list[str], ours: list[str]) -> float:
    """Share of pdfplumber's words (per page, as a multiset) that pypdfium2's page text has too."""
    from collections import Counter

    hit = total = 0
    for a, b in zip(before, ours):
        wa, wb = Counter(a.split()), Counter(b.split())
        hit += sum((wa & wb).values())
        total += sum(wa.values())
    return hit / total if total else 1.0


def bench_parse(limit: int | None) -> None:
    folder = EVAL / "financebench-dev" / "pdfs"
    if not folder.is_dir():
        print(f"SKIP: {folder} is absent")
        return
    from ingest.parsers.pdf import parse_pdf, pdf_page_texts

    pdfs = sorted(folder.glob("*.pdf"))[: limit or 3]
    tb = to = tt = 0.0
    pages = 0
    for pdf in pdfs:
        t0 = time.perf_counter()
        before = _parse_before(pdf)
        n = len(before)
        t1 = time.perf_counter()
        ours = parse_pdf(pdf)
        t2 = time.perf_counter()
        match = word_match(before, [p.text for p in ours.pages])
        pdf_page_texts(pdf)
        t3 = time.perf_counter()
        pages += n
        tb, to, tt = tb + t1 - t0, to + t2 - t1, tt + t3 - t2
        print(f"{pdf.stem}: {n} pages; before {n / (t1 - t0):.1f} pages/s, ours {n / (t2 - t1):.1f} pages/s "
              f"(text only {n / (t3 - t2):.1f} pages/s); words matching pdfplumber's {match:.3f}", flush=True)
    print(f"\nparse-only, {pages} pages: before (pdfplumber every page) {pages / tb:.1f} pages/s; ours (pypdfium2 "
          f"text + tables on pre-checked pages) {pages / to:.1f} pages/s = {tb / to:.2f}x; text alone "
          f"{pages / tt:.1f} pages/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["icdar", "periods", "evidence", "parse", "all"])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("-v", "--verbose", action="store_true", help="periods: list every statement table")
    args = ap.parse_args()
    if args.what in ("icdar", "all"):
        bench_icdar(args.limit)
    if args.what in ("periods", "all"):
        bench_periods(args.limit, args.verbose)
    if args.what in ("evidence", "all"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from tables_evidence import bench_evidence

        bench_evidence(args.limit, EVAL, _typed_tables)
    if args.what in ("parse", "all"):
        bench_parse(args.limit)


if __name__ == "__main__":
    main()
