"""Formulas over line items, as analysts write them: "365 * (average accounts payable between FY2016 and
FY2017) / (FY2017 COGS + change in inventory between FY2016 and FY2017)", "total current assets divided by
total current liabilities", "DIO + DSO - DPO".

``parse(text)`` -> an expression tree: ``Num`` constants, ``Term`` line items (a value at a period, the
average of two period-ends, or the change between them), ``Ref`` names of other metrics (expanded by
``bi.metrics``) and ``Bin`` operations. Periods a term does not name are the question's (``Term.periods``
empty): a value at the target year, an average / change over the target year and the year before.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union

from app.agent.bi.periods import Period, periods_in, strip_periods


@dataclass
class Num:
    value: float


@dataclass
class Term:
    name: str  # the line item as written ("accounts payable")
    agg: str = "value"  # value | average | change
    periods: list[Period] = field(default_factory=list)  # as written; empty: the question's
    optional: bool = False  # "[short-term investments]": 0 when the statements have no such row
    outflow: Optional[bool] = None  # its size, whichever sign is printed (None: as its line item is, bi.metrics)


@dataclass
class Ref:
    name: str  # another metric ("DIO", "EBITDA")


@dataclass
class Bin:
    op: str  # + - * /
    left: "Node"
    right: "Node"


Node = Union[Num, Term, Ref, Bin]

_WORD_OPS = [
    (re.compile(r"\s*\b(?:divided by|÷)\s*", re.I), " / "),
    (re.compile(r"\s*\b(?:multiplied by|times)\b\s*", re.I), " * "),
    (re.compile(r"\s*×\s*|\s+x\s+(?=\(|\d)"), " * "),
    (re.compile(r"\s+\b(?:plus|added to)\b\s+", re.I), " + "),
    (re.compile(r"\s+\b(?:minus|less)\b\s+", re.I), " - "),
    (re.compile(r"\s+[−–—-]\s+"), " - "),
]
_TOKEN = re.compile(r"\s*(?:(?P<num>(?<![\w.])\d+(?:\.\d+)?(?![\w.%]))|(?P<op>[-+*/])|(?P<lp>[(\[])|(?P<rp>[)\]])|"
                    r"(?P<text>(?:[^-+*/()\[\]]|(?<=[A-Za-z])-(?=[A-Za-z]))+))")
_AVG = re.compile(r"^(?:the\s+)?(?:average|avg\.?|mean)\s+(?:of\s+)?(?:the\s+)?", re.I)
_CHANGE = re.compile(r"^(?:the\s+)?(?:change|increase|decrease)\s+(?:in\s+)?(?:the\s+)?", re.I)
_SOURCE = re.compile(r"\s*\b(?:from|in|on|per) (?:the )?(?:[\w&]+ ){0,3}(?:statements?|balance sheet)\b", re.I)
_LEAD = re.compile(r"^\s*(?:the|a|an|total of the|unadjusted|reported)\s+", re.I)
_TAIL = re.compile(r"(?:\s+(?:between|from|for|in|of|at|as of|and|to|through|the|end of|year end|end))+\s*$", re.I)


class FormulaError(ValueError):
    pass


def normalise(text: str) -> str:
    t = " ".join(text.replace("−", "-").replace("–", "-").replace("—", "-").split())
    t = re.sub(r"(?<=[A-Za-z])-(?=[A-Za-z])", "_HYPHEN_", t)  # "short-term", "year-end": words, not minus
    t = re.sub(r"(?<=[A-Za-z&])\s*\(([A-Za-z&' ]+)\)", r" \1", t)  # "income tax (expense)": part of the name
    for rx, rep in _WORD_OPS:
        t = rx.sub(rep, t)
    return t.replace("_HYPHEN_", "-").strip().rstrip(".")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise FormulaError(f"cannot read {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        val = m.group(kind).strip()
        if kind == "text" and not val:
            continue
        out.append((kind, val))
    return out


def term(text: str, known_refs: frozenset = frozenset(), optional: bool = False) -> Node:
    """A line item as written: "average accounts payable between FY2016 and FY2017", "FY2017 COGS"."""
    t = " ".join(text.split())
    ps = periods_in(t)
    body = strip_periods(_SOURCE.sub(" ", t))
    agg = "value"
    if _AVG.match(body):
        agg, body = "average", _AVG.sub("", body)
    elif _CHANGE.match(body):
        agg, body = "change", _CHANGE.sub("", body)
    body = _LEAD.sub("", body)
    body = _TAIL.sub("", body).strip(" ,:;'\"")
    if not body:
        raise FormulaError(f"no line item in {text!r}")
    key = body.lower()
    if agg == "value" and not ps and key in known_refs:
        return Ref(key)
    return Term(body, agg, ps, optional)


def parse(text: str, known_refs: frozenset = frozenset()) -> Node:
    """``known_refs``: lower-case names of metrics a term may name instead of a line item."""
    toks = _tokens(normalise(text))
    pos = 0

    def peek() -> Optional[tuple[str, str]]:
        return toks[pos] if pos < len(toks) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def expr() -> Node:
        node = product()
        while peek() and peek()[0] == "op" and peek()[1] in "+-":
            op = take()[1]
            node = Bin(op, node, product())
        return node

    def product() -> Node:
        node = atom()
        while peek() and peek()[0] == "op" and peek()[1] in "*/":
            op = take()[1]
            node = Bin(op, node, atom())
        return node

    def atom() -> Node:
        tok = peek()
        if tok is None:
            raise FormulaError("formula ends too early")
        kind, val = take()
        if kind == "num":
            nxt = peek()
            if nxt and nxt[0] == "text":  # "365 days": a constant with a word after it
                take()
            return Num(float(val))
        if kind == "lp":
            if val == "[":  # an optional line item
                inner = take() if peek() and peek()[0] == "text" else None
                if inner is None or not (peek() and peek()[0] == "rp"):
                    raise FormulaError("[...] holds one line item")
                take()
                return term(inner[1], known_refs, optional=True)
            node = expr()
            if not (peek() and peek()[0] == "rp"):
                raise FormulaError("unbalanced parentheses")
            take()
            return node
        if kind == "text":
            return term(val, known_refs)
        if kind == "op" and val == "-":  # unary minus
            return Bin("-", Num(0.0), atom())
        raise FormulaError(f"unexpected {val!r}")

    node = expr()
    if pos != len(toks):
        raise FormulaError(f"unexpected {toks[pos][1]!r}")
    return node


def terms(node: Node) -> list[Term]:
    if isinstance(node, Term):
        return [node]
    if isinstance(node, Bin):
        return terms(node.left) + terms(node.right)
    return []


def refs(node: Node) -> list[str]:
    if isinstance(node, Ref):
        return [node.name]
    if isinstance(node, Bin):
        return refs(node.left) + refs(node.right)
    return []


def show(node: Node) -> str:
    """The formula in words, as the answer states it."""
    if isinstance(node, Num):
        return f"{node.value:g}"
    if isinstance(node, Ref):
        return node.name.upper() if len(node.name) <= 5 else node.name
    if isinstance(node, Term):
        when = " and ".join(p.label() for p in node.periods)
        head = {"value": "", "average": "average ", "change": "change in "}[node.agg]
        return f"{head}{node.name}" + (f" ({when})" if when else "")
    left, right = show(node.left), show(node.right)
    if isinstance(node.left, Bin) and node.op in "*/" and node.left.op in "+-":
        left = f"({left})"
    if isinstance(node.right, Bin) and (node.op in "*/" or (node.op == "-" and node.right.op in "+-")):
        right = f"({right})"
    sym = {"*": "×", "/": "/", "+": "+", "-": "−"}[node.op]
    return f"{left} {sym} {right}"
