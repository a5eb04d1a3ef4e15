"""The typed BI program: an operation over grounded table cells, compiled to one read-only SQL statement
that computes the answer, and stated back as a formula in words ("(25.37 − 27.19) = -1.82").

Programs reference cells by (row_num, column) of the physical table, so the same program works on wide
tables and on long ones (a period column, metrics as columns) alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from app.agent.bi.table import Cell, Col, Row, TableView

ARITHMETIC = {"difference", "pct_change", "average", "sum", "ratio", "count"}


@dataclass
class Operand:
    row: Row
    col: Col
    cell: Cell

    @property
    def name(self) -> str:
        return f"{self.row.label} ({self.col.title})"


@dataclass
class Program:
    op: str  # lookup | difference | pct_change | average | sum | ratio | max | min
    view: TableView
    operands: list[Operand]
    percent: bool = False  # ratio stated as a percentage
    confidence: float = 0.0
    notes: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)  # why the cells may not be what was asked (empty: grounded)
    cond: Optional[tuple[str, float]] = None  # count: the operands meeting (comparison, threshold)
    cover: float = 1.0  # share of the question's item words the rows, columns and title used explain
    whole: bool = False  # every row used is named whole by the question ("Revenue", not "Deferred revenue")
    ranked_by: str = ""  # max / min over a printed change column: "change" or "pct_change" (what it ranks by)
    from_statement: bool = False  # its table is of the statement the question names as its source (the planner)
    of_whole: bool = False  # it reads what is asked of the whole, or the part the question names (the planner)
    op_label: str = ""  # a row label the question names whole, whose operation word is the row's ("Total ...")

    @property
    def computes(self) -> str:
        """The operation as the verifier checks it against the question: a ranking by a change column computes the
        change too ("which region had the biggest drop")."""
        return f"{self.op}_by_{self.ranked_by}" if self.ranked_by else self.op

    @property
    def grounded(self) -> bool:
        """Rows named by the question with high confidence, the periods asked present as its columns, the
        table from the document in scope: only then is the answer ``supported``."""
        return not self.doubts

    @property
    def table(self):
        return self.view.info

    @property
    def single_row(self) -> bool:
        return len({id(o.row) for o in self.operands}) == 1

    def expression(self, refs: list[str]) -> str:
        if self.op == "difference":
            return f"({refs[0]} - {refs[1]})"
        if self.op == "pct_change":
            return f"ROUND(({refs[0]} - {refs[1]}) * 100.0 / {refs[1]}, 2)"
        if self.op == "average":
            return f"(({' + '.join(refs)}) / {float(len(refs))})"
        if self.op == "sum":
            return f"({' + '.join(refs)})"
        if self.op == "ratio":
            return f"({refs[0]} * {'100.0' if self.percent else '1.0'} / {refs[1]})"
        if self.op == "count":
            cmp, n = self.cond
            return "(" + " + ".join(f"(CASE WHEN {r} {cmp} {n!r} THEN 1 ELSE 0 END)" for r in refs) + ")"
        raise ValueError(self.op)

    def evaluate(self) -> Optional[float]:
        v = [o.cell.value for o in self.operands]
        if any(x is None for x in v):
            return None
        try:
            if self.op == "difference":
                return v[0] - v[1]
            if self.op == "pct_change":
                return (v[0] - v[1]) * 100.0 / v[1]
            if self.op == "average":
                return sum(v) / len(v)
            if self.op == "sum":
                return sum(v)
            if self.op == "ratio":
                return v[0] * (100.0 if self.percent else 1.0) / v[1]
            if self.op == "count":
                return float(sum(_meets(x, *self.cond) for x in v))
        except ZeroDivisionError:
            return None
        return None

    def sql(self) -> str:
        t = q(self.table.sql_name)
        label = q(self.view.label_column) if self.view.label_column else None
        if self.op in ("lookup", "max", "min"):
            rows = sorted({o.cell.row_num for o in self.operands})
            cols = []
            for o in self.operands:
                if o.cell.column not in cols:
                    cols.append(o.cell.column)
            select = ([label] if label else []) + [q(c) for c in cols]
            return (f"SELECT {', '.join(select)} FROM {t} WHERE row_num IN ({', '.join(map(str, rows))}) "
                    f"ORDER BY row_num")
        phys_rows = sorted({o.cell.row_num for o in self.operands})
        if len(phys_rows) == 1:  # one physical row: plain column arithmetic
            refs = [q(o.cell.column) for o in self.operands]
            head = [label] if label else []
            return (f"SELECT {', '.join(head + refs)}, {self.expression(refs)} AS {self.op} FROM {t} "
                    f"WHERE row_num IN ({phys_rows[0]})")
        alias = {r: f"r{i + 1}" for i, r in enumerate(phys_rows)}
        refs = [f"{alias[o.cell.row_num]}.{q(o.cell.column)}" for o in self.operands]
        where = " AND ".join(f"{alias[r]}.row_num IN ({r})" for r in phys_rows)
        froms = ", ".join(f"{t} {alias[r]}" for r in phys_rows)
        if self.single_row and label:  # one line item over periods of a long table: its period first
            head = f"{alias[self.operands[0].cell.row_num]}.{label}"
            return f"SELECT {head}, {', '.join(refs)}, {self.expression(refs)} AS {self.op} FROM {froms} WHERE {where}"
        return f"SELECT {self.expression(refs)} AS {self.op}, {', '.join(refs)} FROM {froms} WHERE {where}"

    def formula(self, result: float) -> str:
        v = [fmt(o.cell.value) for o in self.operands]
        r = fmt(round(result, 2))
        if self.op == "difference":
            return f"{v[0]} − {v[1]} = {r}"
        if self.op == "pct_change":
            return f"({v[0]} − {v[1]}) / {v[1]} × 100 = {r}%"
        if self.op == "average":
            return f"({' + '.join(v)}) / {len(v)} = {r}"
        if self.op == "sum":
            return f"{' + '.join(v)} = {r}"
        if self.op == "ratio":
            return f"{v[0]} / {v[1]}{' × 100' if self.percent else ''} = {r}{'%' if self.percent else ''}"
        if self.op == "count":
            cmp, n = self.cond
            hits = [o for o in self.operands if _meets(o.cell.value, cmp, n)]
            names = ", ".join(o.col.period.label() if self.single_row and o.col.period else
                              (o.row.label if not self.single_row else o.col.title) for o in hits) or "none"
            return f"{cmp} {fmt(n)}: {names}; count = {fmt(round(result))}"
        return r


def _meets(v, cmp: str, n: float) -> bool:
    return v is not None and {">": v > n, ">=": v >= n, "<": v < n, "<=": v <= n}[cmp]


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float) and v.is_integer() and 1900 <= v <= 2100:
        return str(int(v))
    if isinstance(v, (int, float)):
        v = float(v)
        s = f"{v:,.2f}".rstrip("0").rstrip(".") if abs(v) < 1e15 else str(v)
        return "0" if s in ("-0", "") else s
    return str(v)
