"""A metric program: a formula (``bi.formula``) whose line items are grounded cells of one filing's
statements (``bi.operands``), possibly from several tables (the balance sheet and the income statement),
compiled to one read-only SQL statement that computes the value, and stated back as the formula in words
with each operand's value, row and page.

``plan_metric(question, views, ...)`` -> MetricProgram or (None, why): the document is the one whose
statements ground every operand (never operands from two documents); a missing operand is said by name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from app.agent.bi.format import col_name
from app.agent.bi.formula import Bin, Node, Num, Ref, Term, show, terms
from app.agent.bi.metrics import Judgement, Metric, metric_named
from app.agent.bi.operands import STATEMENT_NAMES, Leaf, LeafProgram, ground, unique_leaves
from app.agent.bi.periods import Period
from app.agent.bi.program import fmt, q
from app.agent.bi.table import TableView
from app.agent.bi.units import restated
from app.agent.vocabulary import asked_sign, asks_yes_no


@dataclass
class MetricProgram(LeafProgram):
    metric: Metric
    tree: Node
    target: Period
    leaves: dict[int, list[Leaf]]  # id(Term) -> value: [cell]; average: [old, new]; change: [old, new]
    decimals: Optional[int] = None  # as the question asks ("round to two decimal places")
    sign_asked: Optional[str] = None  # positive | negative: a yes/no question whether the value is above zero
    judgement: Optional[Judgement] = None  # a yes/no judgement by a threshold ("capital intensive")
    also: list = field(default_factory=list)  # other metrics stated beside the judgement (MetricProgram)

    @property
    def all_leaves(self) -> list[Leaf]:
        return unique_leaves(leaf for t in terms(self.tree) for leaf in self.leaves.get(id(t), []))

    # ---- evaluation ---------------------------------------------------------------------------------
    def _term_value(self, t: Term) -> Optional[float]:
        ls = self.leaves.get(id(t))
        if not ls:
            return 0.0 if t.optional else None
        v = [leaf.value for leaf in ls]
        if any(x is None for x in v):
            return None
        if t.agg == "average":
            return sum(v) / len(v)
        if t.agg == "change":
            return v[-1] - v[0]
        return v[0]

    def evaluate(self, node: Optional[Node] = None) -> Optional[float]:
        node = self.tree if node is None else node
        if isinstance(node, Num):
            return node.value
        if isinstance(node, Term):
            return self._term_value(node)
        if isinstance(node, Bin):
            a, b = self.evaluate(node.left), self.evaluate(node.right)
            if a is None or b is None:
                return None
            if node.op == "/":
                return None if b == 0 else a / b
            return {"+": a + b, "-": a - b, "*": a * b}[node.op]
        return None

    # ---- SQL ----------------------------------------------------------------------------------------
    def _sql_expr(self, node: Node, alias: dict) -> str:
        if isinstance(node, Num):
            return repr(float(node.value))
        if isinstance(node, Term):
            ls = self.leaves.get(id(node))
            if not ls:
                return "0.0"
            refs = [cell_ref(leaf, alias) for leaf in ls]
            if node.agg == "average":
                return f"(({' + '.join(refs)}) / {float(len(refs))})"
            if node.agg == "change":
                return f"({refs[-1]} - {refs[0]})"
            return refs[0]
        if isinstance(node, Bin):
            left, right = self._sql_expr(node.left, alias), self._sql_expr(node.right, alias)
            if node.op == "/":
                return f"({left} * 1.0 / {right})"
            return f"({left} {node.op} {right})"
        raise ValueError(node)

    def sql(self) -> str:
        alias = aliases(self.all_leaves)
        return select_sql([(self._sql_expr(self.tree, alias), "value")], self.all_leaves, alias)

    def answer(self, value: float, sql: str, asked_scale: Optional[str] = None) -> str:
        return answer_text(self, value, sql, asked_scale)

    # ---- text ---------------------------------------------------------------------------------------
    def with_values(self, node: Optional[Node] = None) -> str:
        node = self.tree if node is None else node
        if isinstance(node, Num):
            return fmt(node.value)
        if isinstance(node, Term):
            ls = self.leaves.get(id(node))
            if not ls:
                return "0"
            v = [fmt(leaf.value) for leaf in ls]
            if node.agg == "average":  # newest first, as statements print them
                return f"({' + '.join(reversed(v))}) / {len(v)}"
            if node.agg == "change":
                return f"({v[-1]} − {v[0]})"
            return v[0]
        left, right = self.with_values(node.left), self.with_values(node.right)
        if isinstance(node.left, Bin) and node.op in "*/" and node.left.op in "+-":
            left = f"({left})"
        if isinstance(node.right, Bin) and (node.op in "*/" or (node.op == "-" and node.right.op in "+-")):
            right = f"({right})"
        return f"{left} {dict(zip('*/+-', '×/+−'))[node.op]} {right}"

    def unit(self) -> str:
        return {"days": "days", "percent": "%", "ratio": ""}.get(self.metric.unit, self.all_leaves[0].col.unit
                                                                  or self.all_leaves[0].view.unit or "")

    def result_text(self, value: float, asked_scale: Optional[str] = None) -> str:
        d = self.decimals if self.decimals is not None else 2
        r = round(value, d)
        s = f"{r:,.{d}f}" if d > 0 else f"{int(round(r)):,}"
        u = self.unit()
        if u == "%":
            return s + "%"
        again = restated(value, u, asked_scale) if self.metric.unit == "amount" else ""
        return s + (f" {u}" if u else "") + again


def aliases(leaves: list[Leaf]) -> dict[tuple, str]:
    """One alias per physical row read: (table, row_num) -> r1, r2, ..."""
    keys: list[tuple] = []
    for leaf in leaves:
        k = (leaf.table.sql_name, leaf.cell.row_num)
        if k not in keys:
            keys.append(k)
    return {k: f"r{i + 1}" for i, k in enumerate(keys)}


def cell_ref(leaf: Leaf, alias: dict) -> str:
    r = f"{alias[(leaf.table.sql_name, leaf.cell.row_num)]}.{q(leaf.cell.column)}"
    return f"ABS({r})" if leaf.absolute else r


def select_sql(exprs: list[tuple[str, str]], leaves: list[Leaf], alias: dict) -> str:
    """One read-only statement: the computed values first (``value`` first of all), then every cell read."""
    froms = ", ".join(f"{q(t)} {a}" for (t, _), a in alias.items())
    where = " AND ".join(f"{a}.row_num = {r}" for (_, r), a in alias.items())
    cols = ", ".join(f"{alias[(leaf.table.sql_name, leaf.cell.row_num)]}.{q(leaf.cell.column)}" for leaf in leaves)
    head = ", ".join(f"{e} AS {q(n)}" for e, n in exprs)
    return f"SELECT {head}, {cols} FROM {froms} WHERE {where}"


def leaf_line(leaf: Leaf) -> str:
    stmt = STATEMENT_NAMES.get(getattr(leaf.table, "statement", "") or "", "table")
    sign = " (as printed: " + fmt(leaf.cell.value) + ")" if leaf.absolute and (leaf.cell.value or 0) < 0 else ""
    return (f"{leaf.row.text} ({col_name(leaf)}) {fmt(leaf.value)}{sign}, {stmt} "
            f"\"{leaf.table.title}\" page {leaf.table.page}")


def answer_text(prog: MetricProgram, value: float, sql: str, asked_scale: Optional[str] = None) -> str:
    when = prog.target.label() if prog.target.quarter else f"FY{prog.target.year}"
    head = (f"{prog.metric.name[:1].upper()}{prog.metric.name[1:]}, {when}: {show(prog.tree)} = "
            f"{prog.with_values()} = {prog.result_text(value, asked_scale)}.")
    if prog.judgement is not None:  # "Is it capital intensive?": the catalogue's convention decides
        j, yes = prog.judgement, value >= prog.judgement.at_least
        bar = f"{fmt(j.at_least)}%" if prog.unit() == "%" else fmt(j.at_least)
        head = (f"{'Yes' if yes else 'No'}, the {prog.metric.name} was {prog.result_text(value)} in {when}, "
                f"{'at or above' if yes else 'below'} {bar} ({j.basis}). " + head)
        for other in prog.also:
            v = other.evaluate()
            head += (f" {other.metric.name[:1].upper()}{other.metric.name[1:]}, {when}: {show(other.tree)} = "
                     f"{other.with_values()} = {other.result_text(v)}.")
    if prog.sign_asked and value:  # "Does it have positive working capital?": yes or no first
        sign = "positive" if value > 0 else "negative"
        head = (f"{'Yes' if sign == prog.sign_asked else 'No'}, the {prog.metric.name} was {sign} in {when}. "
                + head)
    leaves = unique_leaves(prog.all_leaves + [leaf for other in prog.also for leaf in other.all_leaves])
    lines = [head, "Rows used: " + "; ".join(leaf_line(leaf) for leaf in leaves) + "."]
    if prog.notes:
        lines.append("Note: " + "; ".join(prog.notes) + ".")
    tables = prog.tables
    lines.append("Source: " + ", ".join(f'table "{t.title}" ({t.filename}, page {t.page})' for t in tables) + ".")
    lines.append(f"SQL: {sql}")
    if prog.doubts:
        lines.append("Not verified: " + "; ".join(prog.doubts) + ".")
    return "\n".join(lines)


# ---- planning ---------------------------------------------------------------------------------------
_DECIMALS = re.compile(r"\bround(?:ed|ing)?\b[^.?]*?\b(?:to\s+)?(?:the\s+)?(?:(?P<n>one|two|three|four|zero|no|\d)\s+"
                       r"decimal|nearest (?P<w>whole|integer|tenth|hundredth))", re.I)
_N = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4}


def decimals_asked(question: str) -> Optional[int]:
    m = _DECIMALS.search(question)
    if not m:
        return None
    if m["w"]:
        return {"whole": 0, "integer": 0, "tenth": 1, "hundredth": 2}[m["w"].lower()]
    return _N.get(m["n"].lower(), None) if not m["n"].isdigit() else int(m["n"])


def term_periods(t: Term, target: Period) -> list[Period]:
    if t.periods:
        ps = sorted(t.periods, key=lambda p: (p.year, p.quarter or 0))
        if t.agg == "value":
            return [ps[-1]]
        return ps[:2] if len(ps) >= 2 else [Period(ps[0].year - 1, ps[0].quarter), ps[0]]
    if t.agg == "value":
        return [target]
    return [Period(target.year - 1, target.quarter), target]


def _percent_tree(metric: Metric, tree: Node) -> Node:
    """A metric asked in percent whose formula does not multiply by 100 itself."""
    def has_100(n: Node) -> bool:
        return (isinstance(n, Num) and n.value == 100) or (isinstance(n, Bin) and (has_100(n.left) or has_100(n.right)))
    if metric.unit == "percent" and not has_100(tree):
        return Bin("*", tree, Num(100.0))
    return tree


def bind(views: list[TableView], tree: Node, target: Period, statements: list[str],
         encode: Optional[Callable] = None) -> tuple[dict[int, list[Leaf]], list[str]]:
    """Every term of ``tree`` grounded in ``views`` (one document's tables): (leaves, missing reasons). Where one
    statement table grounds every term the metric needs, the first such (in page order) gives them all: a ratio
    of one company's figures, not the consolidated cash over a parent-only schedule's receivables."""
    one = _one_table(views, tree, target, statements, encode)
    if one is not None:
        return one, []
    leaves: dict[int, list[Leaf]] = {}
    missing: list[str] = []
    for t in terms(tree):
        got, why = ground(views, t.name, term_periods(t, target), statements, encode, t.outflow)
        if got is None:
            if not t.optional:
                missing.append(why)
            continue
        leaves[id(t)] = got
    return leaves, missing


def _one_table(views: list[TableView], tree: Node, target: Period, statements: list[str],
               encode: Optional[Callable] = None) -> Optional[dict[int, list[Leaf]]]:
    ts = terms(tree)
    if len(ts) < 2:
        return None
    tables = sorted((v for v in views if getattr(v.info, "statement", "")), key=_document_order)
    for view in tables:
        leaves: dict[int, list[Leaf]] = {}
        for t in ts:
            got, _why = ground([view], t.name, term_periods(t, target), statements, encode, t.outflow)
            if got is None and not t.optional:
                break
            if got is not None:
                leaves[id(t)] = got
        else:
            return leaves
    return None


def _document_order(view: TableView) -> tuple[int, int]:
    """(page, the table's number in its document: the suffix of its SQL name)."""
    n = view.info.sql_name.rsplit("_", 1)[-1]
    return view.info.page or 0, int(n) if n.isdigit() else 0


def newest_period(views: list[TableView]) -> Optional[Period]:
    ps = [c.period for v in views if getattr(v.info, "statement", "") for c in v.period_cols if not c.period.quarter]
    return max(ps, key=lambda p: p.year) if ps else None


def plan_metric(question: str, metric: Metric, views_by_doc: dict[str, list[TableView]], periods: list[Period],
                statements: list[str], encode: Optional[Callable] = None) -> tuple[Optional[MetricProgram], str]:
    """The metric over the document whose statements ground every operand at the period asked."""
    best: Optional[tuple] = None
    reasons: list[str] = []
    for doc_id, views in views_by_doc.items():
        target = max(periods, key=lambda p: (p.year, p.quarter or 0)) if periods else newest_period(views)
        if target is None:
            continue
        for tree in metric.formulas:
            if isinstance(tree, Ref):
                continue
            tree = _percent_tree(metric, tree)
            leaves, missing = bind(views, tree, target, statements, encode)
            if missing:
                reasons.append("; ".join(missing))
                continue
            prog = MetricProgram(metric, tree, target, leaves, decimals=decimals_asked(question),
                                 sign_asked=asked_sign(question) if asks_yes_no(question) else None)
            if not periods:
                prog.doubts.append(f"the question names no period; the newest ({target.label()}) was taken")
            odd = metric.out_of_range(prog.evaluate())
            if odd:
                prog.doubts.append(odd)
            newest = newest_period(views)
            # the filing of the year asked (its own figures, not a later restatement) first, then statements
            rank = (prog.grounded, newest is not None and newest.year == target.year,
                    sum(bool(getattr(leaf.table, "statement", "")) for leaf in prog.all_leaves))
            if best is None or rank > best[0]:
                best = (rank, prog)
            break
    if best is None:
        return None, "Not verified: " + (reasons[0] if reasons else "no statement table gives its line items")
    return best[1], "ok"


def plan_judgement(question: str, judgement: Judgement, metric: Metric, views_by_doc: dict, periods: list[Period],
                   statements: list[str], encode: Optional[Callable] = None) -> tuple[Optional[MetricProgram], str]:
    """A yes/no judgement by the catalogue's threshold: the metric at the period asked, and the metrics the
    judgement states beside it, from the same filing."""
    prog, why = plan_metric(question, metric, views_by_doc, periods, statements, encode)
    if prog is None:
        return None, why
    prog.judgement, prog.sign_asked = judgement, None
    doc = {prog.all_leaves[0].table.doc_id: views_by_doc[prog.all_leaves[0].table.doc_id]}
    for name in judgement.also:
        other, _ = plan_metric(question, metric_named(name), doc, [prog.target], statements, encode)
        if other is not None and other.grounded and other.evaluate() is not None:
            prog.also.append(other)
    return prog, why
