"""XLSX (every sheet, computed values, not formulas) and CSV.

openpyxl's ``data_only`` read returns the values Excel cached when it last saved. Files written by
tools that never calculate (openpyxl itself, some exporters) have formulas without cached values; for
those we evaluate the common arithmetic subset ourselves (cell refs, + - * /, SUM/AVERAGE/MIN/MAX over
ranges) and report a warning for anything else instead of storing the formula text as data.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from ingest.errors import IngestError
from ingest.parsers.document import Cell, PageBuilder, ParsedDocument, RawTable, rows_as_text
from ingest.parsers.text import read_text

TOKEN = re.compile(
    r"\s*(?:(?P<range>\$?[A-Z]{1,3}\$?\d+:\$?[A-Z]{1,3}\$?\d+)|(?P<ref>\$?[A-Z]{1,3}\$?\d+)"
    r"|(?P<func>SUM|AVERAGE|MIN|MAX)\(|(?P<num>\d+(?:\.\d+)?)|(?P<op>[-+*/(),]))"
)


class FormulaEvaluator:
    """Evaluates the arithmetic subset of Excel formulas over one sheet."""

    def __init__(self, formulas_ws, values_ws):
        self.f_ws, self.v_ws = formulas_ws, values_ws
        self.cache: dict[str, float | None] = {}

    def value(self, coord: str) -> float | None:
        coord = coord.replace("$", "")
        if coord in self.cache:
            return self.cache[coord]
        self.cache[coord] = None  # cycle guard
        cached = self.v_ws[coord].value
        raw = self.f_ws[coord].value
        if isinstance(raw, str) and raw.startswith("=") and cached is None:
            result = self.evaluate(raw[1:])
        else:
            result = cached if isinstance(cached, (int, float)) and not isinstance(cached, bool) else None
        self.cache[coord] = result
        return result

    def cells(self, rng: str) -> list[float]:
        from openpyxl.utils import range_boundaries

        min_col, min_row, max_col, max_row = range_boundaries(rng.replace("$", ""))
        from openpyxl.utils import get_column_letter

        out = []
        for r in range(min_row, max_row + 1):
            for c in range(min_col, max_col + 1):
                v = self.value(f"{get_column_letter(c)}{r}")
                if v is not None:
                    out.append(float(v))
        return out

    def evaluate(self, formula: str) -> float | None:
        parts, pos = [], 0
        formula = formula.strip()
        while pos < len(formula):
            m = TOKEN.match(formula, pos)
            if not m or m.end() == pos:
                return None  # unsupported syntax
            pos = m.end()
            if m["range"]:
                parts.append(repr(self.cells(m["range"])))
            elif m["ref"]:
                v = self.value(m["ref"])
                parts.append(repr(float(v or 0.0)))
            elif m["func"]:
                parts.append({"SUM": "_sum(", "AVERAGE": "_avg(", "MIN": "_min(", "MAX": "_max("}[m["func"]])
            else:
                parts.append(m["num"] or m["op"])
        env = {
            "_sum": lambda *a: sum(_flat(a)), "_avg": lambda *a: (sum(_flat(a)) / max(len(_flat(a)), 1)),
            "_min": lambda *a: min(_flat(a)), "_max": lambda *a: max(_flat(a)), "__builtins__": {},
        }
        try:
            return float(eval("".join(parts), env))  # noqa: S307 - only numbers, operators and our 4 functions
        except Exception:  # noqa: BLE001
            return None


def _flat(args) -> list[float]:
    out = []
    for a in args:
        out.extend(a if isinstance(a, list) else [a])
    return out


def _trim(rows: list[list[Cell]]) -> list[list[Cell]]:
    rows = [r for r in rows if any(v not in (None, "") for v in r)]
    if not rows:
        return rows
    width = max(len(r) for r in rows)
    rows = [list(r) + [None] * (width - len(r)) for r in rows]
    keep = [j for j in range(width) if any(r[j] not in (None, "") for r in rows)]
    return [[r[j] for j in keep] for r in rows]


def parse_xlsx(path: Path) -> ParsedDocument:
    import openpyxl

    try:
        values_wb = openpyxl.load_workbook(str(path), data_only=True)
        formulas_wb = openpyxl.load_workbook(str(path), data_only=False)
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many types on damaged files
        raise IngestError(f"the XLSX is damaged and cannot be read ({type(exc).__name__}: {exc})") from exc
    pages, tables, warnings = [], [], []
    for number, name in enumerate(values_wb.sheetnames, start=1):
        v_ws, f_ws = values_wb[name], formulas_wb[name]
        evaluator = FormulaEvaluator(f_ws, v_ws)
        rows: list[list[Cell]] = []
        for r_idx, row in enumerate(f_ws.iter_rows(), start=1):
            out: list[Cell] = []
            for cell in row:
                raw = cell.value
                if isinstance(raw, str) and raw.startswith("="):
                    value = evaluator.value(cell.coordinate)
                    if value is None:
                        warnings.append(f"sheet {name!r} cell {cell.coordinate}: formula {raw} could not be computed")
                    out.append(value)
                elif hasattr(raw, "isoformat"):
                    out.append(raw.isoformat())
                else:
                    out.append(raw)
            rows.append(out)
        rows = _trim(rows)
        page = PageBuilder(number)
        page.add(f"Sheet: {name}", heading=True)
        if rows:
            page.add(rows_as_text(rows))
            tables.append(RawTable(number, name, rows, context=name))
        pages.append(page.build())
    if not tables:
        raise IngestError("the workbook has no data in any sheet")
    return ParsedDocument("xlsx", pages, tables, warnings)


def parse_csv(path: Path) -> ParsedDocument:
    text = read_text(path)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = _trim([list(r) for r in csv.reader(io.StringIO(text), dialect)])
    if not rows:
        raise IngestError("the CSV file has no rows")
    page = PageBuilder(1)
    page.add(rows_as_text(rows))
    return ParsedDocument("csv", [page.build()], [RawTable(1, path.stem, rows, context=path.stem)])
