"""Financial metrics over statement line items: a small library of the standard definitions (DPO, DSO, DIO,
inventory turnover, current / quick ratio, margins, EBITDA, free cash flow, ROA, ROE, ...) and the definitions a
question spells out ("DPO is defined as: 365 * (average accounts payable between FY2016 and FY2017) / ...").

The catalogue is data (``app/data/metrics.yaml``: names, formulas, units, which way is better; line items with
their row labels and names), loaded once. ``metric_for(question)`` -> ``Metric`` (name, expression tree, how to state it) or None. A definition the
question gives wins over the library's; names it uses that the question also defines ("CCC is defined as
DIO + DSO - DPO. DIO is defined as ...") or the library knows are expanded. Line items are named as analysts
name them; ``CONCEPTS`` lists the row labels filings use for each and the statement it is read from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

from app.agent.bi.formula import Bin, FormulaError, Node, Num, Ref, Term, parse, refs, terms
from app.agent.bi.periods import strip_periods
from app.agent.vocabulary import phrase_pattern, phrase_regex, with_plurals, word_lists

DATA_FILE = Path(__file__).resolve().parents[2] / "data" / "metrics.yaml"
UNITS = ("days", "ratio", "percent", "amount")
STATEMENTS = ("balance_sheet", "income_statement", "cash_flow")


class CatalogueError(ValueError):
    """``metrics.yaml`` has an invalid entry (the message names it and the field)."""


def _read(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def _load(path: Path = DATA_FILE, data: Optional[dict] = None) -> tuple[list, dict, list, dict, list]:
    """(LIBRARY, CONCEPTS, ALIASES, PARTS, JUDGEMENTS) from the metric catalogue: read once, at import (a data
    file shipped with the code, not a document fact); ``data``: the file already parsed."""
    data = _read(path) if data is None else data
    library, concepts, aliases, parts, judgements = [], {}, [], {}, []
    for i, e in enumerate(data.get("metrics") or []):
        where = f"{path.name}: metric {e.get('name') or i!r}"
        if not e.get("name") or not e.get("names") or not e.get("formulas") or e.get("unit") not in UNITS:
            raise CatalogueError(f"{where}: needs name, names, formulas and a unit of {', '.join(UNITS)}")
        if e.get("better") not in (None, "higher", "lower"):
            raise CatalogueError(f"{where}: better must be higher or lower")
        bounds = e.get("range")
        if bounds is not None and not (isinstance(bounds, list) and len(bounds) == 2
                                       and all(isinstance(b, (int, float)) for b in bounds) and bounds[0] < bounds[1]):
            raise CatalogueError(f"{where}: range must be [low, high]")
        library.append(MetricEntry(phrase_regex(e["names"], plural=True), str(e["name"]),
                                   [str(f) for f in e["formulas"]], e["unit"], e.get("better"),
                                   tuple(bounds) if bounds else None))
    for i, e in enumerate(data.get("line_items") or []):
        where = f"{path.name}: line item {e.get('name') or i!r}"
        if not e.get("name") or not e.get("labels") or e.get("statement") not in STATEMENTS:
            raise CatalogueError(f"{where}: needs name, labels and a statement of {', '.join(STATEMENTS)}")
        concepts[str(e["name"])] = ([str(x) for x in e["labels"]], e["statement"], bool(e.get("outflow")))
        if e.get("names"):
            aliases.append((phrase_regex(e["names"]), str(e["name"])))
        if e.get("parts"):
            try:
                parts[str(e["name"])] = [parse(str(f)) for f in e["parts"]]
            except FormulaError as exc:
                raise CatalogueError(f"{where}: parts: {exc}") from None
    names = {e.name for e in library}
    for i, e in enumerate(data.get("judgements") or []):
        where = f"{path.name}: judgement {i + 1}"
        if not e.get("asked") or e.get("metric") not in names or not isinstance(e.get("at_least"), (int, float)) \
                or not e.get("basis") or any(a not in names for a in e.get("also") or []):
            raise CatalogueError(f"{where}: needs asked, a metric and also of the catalogue's metrics, a number "
                                 "at_least and a basis")
        judgements.append(Judgement(phrase_regex(e["asked"]), str(e["metric"]), float(e["at_least"]), str(e["basis"]),
                                    tuple(str(a) for a in e.get("also") or ())))
    return library, concepts, aliases, parts, judgements


def _statement_names(path: Path = DATA_FILE, data: Optional[dict] = None) -> list[tuple[str, re.Pattern]]:
    """(statement kind, how a question names it as its source), in the catalogue's order."""
    data = _read(path) if data is None else data
    names = data.get("statements") or {}
    if set(names) != set(STATEMENTS) or not all(isinstance(v, list) and v for v in names.values()):
        raise CatalogueError(f"{path.name}: statements must name each of {', '.join(STATEMENTS)} by a list of phrases")
    return [(kind, phrase_regex(names[kind])) for kind in STATEMENTS]


@dataclass(frozen=True)
class MetricEntry:
    names: re.Pattern  # how a question names it
    name: str  # as the answer states it
    formulas: list  # tried in order
    unit: str  # days | ratio | percent | amount
    better: Optional[str] = None  # higher | lower: which way is an improvement
    range: Optional[tuple] = None  # (low, high): the values it can take (a margin: -100% .. 100%)


@dataclass(frozen=True)
class Judgement:
    """A yes/no judgement by a metric and a threshold ("capital intensive": capital expenditure at least 10% of
    revenue), as analysts' conventions have it."""
    asked: re.Pattern  # how a question asks it
    metric: str  # the catalogue's metric it is judged by
    at_least: float  # yes when the metric is at least this
    basis: str  # the convention, stated with the answer
    also: tuple = ()  # other catalogue metrics stated beside it


# metrics other definitions use by name ("CCC = DIO + DSO - DPO", "EBITDA margin = EBITDA / revenue")
_REFS = frozenset({"dio", "dso", "dpo", "ebitda", "free cash flow"})

# the catalogue: metrics (in file order), line item -> (row labels filings use, statement read from, absolute value:
# outflows / expenses printed in parentheses on one statement and not on another), and how analysts name items
_CATALOGUE = _read(DATA_FILE)  # parsed once for both readers
LIBRARY, CONCEPTS, ALIASES, PARTS, JUDGEMENTS = _load(data=_CATALOGUE)
STATEMENT_NAMES = _statement_names(data=_CATALOGUE)


def concept_of(name: str) -> Optional[str]:
    """The line item a term names, when the name is one analysts use for a standard item."""
    low = " ".join(name.lower().replace("’", "'").split())
    low = re.sub(r"^(?:the |unadjusted |reported |gaap |total )+", "", low) if low not in CONCEPTS else low
    if low in CONCEPTS:
        return low
    for rx, concept in ALIASES:
        m = rx.search(low)
        if m and len(m.group(0)) >= 0.5 * len(low):  # the alias is (most of) the name, not a word inside it
            return concept
    return None


def outflow_item(label: str) -> Optional[str]:
    """The standard line item a row's label starts with when filings print that item as an outflow or expense
    in parentheses on one statement and not on another ("Purchases of property, plant and equipment (PP&E)":
    capital expenditure): its amount is the magnitude."""
    words = re.findall(r"[a-z]+", label.lower())
    for concept, (labels, _home, absolute) in CONCEPTS.items():
        if absolute and any(words[:len(w)] == w for w in (re.findall(r"[a-z]+", lb) for lb in labels)):
            return concept
    return None


@dataclass
class Metric:
    name: str  # as stated in the answer
    formulas: list[Node]  # tried in order until every operand is grounded
    unit: str  # days | ratio | percent | amount
    defined: bool  # the question spells the definition out
    better: Optional[str] = None  # higher | lower: which way is an improvement (the catalogue's)
    range: Optional[tuple] = None  # (low, high): the values it can take; outside it the rows are not the ones meant

    def out_of_range(self, value: Optional[float]) -> str:
        """A doubt when ``value`` lies outside the values this metric can take, else ""."""
        if value is None or self.range is None or self.range[0] <= value <= self.range[1]:
            return ""
        return (f"a {self.name} of {value:,.1f} lies outside the values it can take ({self.range[0]:g} to "
                f"{self.range[1]:g}): the rows read are not the ones it is computed from")


DEFINE = re.compile(r"\b(?P<name>[A-Za-z][\w &/()%'’-]{0,80}?)\s+(?:is|are)\s+(?:defined|calculated|computed)\s+as"
                    r"\s*:?\s*(?P<expr>.+?)(?=\.\s+[A-Z]|\.?\s*$)|\bdefin(?:e|ing)\s+(?P<name2>[^.?]+?)\s+as\s*:?\s*"
                    r"(?P<expr2>.+?)(?=\.\s+[A-Z]|\.?\s*$)", re.S)


def definitions(question: str) -> list[tuple[str, str]]:
    """(name, formula text) of each definition the question spells out, in order."""
    text = " ".join(question.split())
    out = []
    for s in re.split(r"(?<=[.?!])\s+(?=[A-Z])", text):
        m = DEFINE.search(s)
        if m:
            name = (m["name"] or m["name2"]).strip()
            name = re.sub(r"^(?:the|a|an)\s+", "", name, flags=re.I)
            out.append((name, (m["expr"] or m["expr2"]).strip().rstrip(".")))
    return out


# the words read around a metric are data (app/data/vocabulary.yaml `metric_words`)
_WORDS = word_lists("metric_words", ("part_kinds", "cagr", "cagr_stop"))
PART = phrase_regex(with_plurals(_WORDS["part_kinds"]))  # a segment's, a region's ... figure


CAGR = phrase_regex(_WORDS["cagr"])
_CAGR_AFTER = re.compile(r"\s+(?:of|in|for)\s+(?:the\s+)?(?:total\s+)?([A-Za-z][\w&' -]*?)(?=\s+(?:from|between|over|for|in|"
                         r"during)\b|[?.,]|$)", re.I)
# a word that ends the item's name, read back from "CAGR": a stop word, a number ("2", "2-year"), a possessive
_CAGR_STOP = re.compile(rf"^(?:{phrase_pattern(_WORDS['cagr_stop'])}|\d+(?:-year)?)$|['’]s$", re.I)


def cagr_item(question: str) -> str:
    """The line item whose compound annual growth is asked ("the 2 year total revenue CAGR": revenue)."""
    m = CAGR.search(question)
    if not m:
        return ""
    after = _CAGR_AFTER.match(question[m.end():])
    if after:
        return after.group(1).strip()
    item: list[str] = []
    for w in reversed(question[:m.start()].split()):
        if _CAGR_STOP.search(w.strip(",")):
            break
        item.insert(0, w.strip(","))
    return " ".join(item)


def _key(name: str) -> str:
    """"DPO", "Days payable outstanding (DPO)", "working capital ratio" -> a lower-case key."""
    m = re.search(r"\(([A-Za-z&]{2,6})\)", name)
    return (m.group(1) if m else name).strip().lower()


def _library_entry(text: str) -> Optional[MetricEntry]:
    return next((entry for entry in LIBRARY if entry.names.search(text)), None)


def _expand(node: Node, defined: dict[str, Node], depth: int = 0) -> Node:
    if depth > 4:
        raise FormulaError("definitions nest too deeply")
    if isinstance(node, Ref):
        if node.name in defined:
            return _expand(defined[node.name], defined, depth + 1)
        entry = _library_entry(node.name)
        if entry is None:
            raise FormulaError(f"no definition of {node.name}")
        return _expand(parse(entry.formulas[0], _REFS), defined, depth + 1)
    if isinstance(node, Bin):
        return Bin(node.op, _expand(node.left, defined, depth), _expand(node.right, defined, depth))
    return node



def _unit_of(text: str, expr: str) -> str:
    if re.search(r"\bdays?\b|\b(?:dpo|dso|dio|ccc)\b", text, re.I) or expr.strip().startswith("365"):
        return "days"
    if re.search(r"%|percent|margin", text, re.I):
        return "percent"
    return "ratio"


def metric_for(question: str) -> Optional[Metric]:
    """The metric the question asks for: its own definition, else the library's (by the metric's name)."""
    defs = definitions(question)
    if defs:
        try:
            trees = {_key(n): parse(e, frozenset(_key(x) for x, _ in defs) | _REFS) for n, e in defs}
        except FormulaError:
            trees = {}
        if trees:
            name, expr = defs[0]
            tree = _expand(trees[_key(name)], trees)
            combined = asked_formula(question)  # "EBITDA less capex", EBITDA defined: the object asked, computed
            if combined is not None:
                return combined
            if not _is_plain_term(tree):
                entry = _library_entry(name) or _library_entry(question.split(".")[0])
                shown = entry.name if entry and _key(entry.name) == _key(name) or (entry and len(name) <= 6) else name
                return Metric(shown, with_parts([tree]), _unit_of(name + " " + question, expr), True,
                              entry.better if entry and shown == entry.name else None,
                              entry.range if entry and shown == entry.name else None)
    if re.search(r"(?<!un)adjusted|non[- ]gaap|pro forma", question, re.I):
        return None  # the company's own adjusted measure, not the standard definition over the statements
    if PART.search(question):
        return None  # a segment's / region's figure: the statements give the company's
    item = cagr_item(question)
    if item:  # "the 2 year total revenue CAGR": a line item's growth, over the years the question names
        return Metric(f"{item} CAGR", [Term(item)], "amount", False)
    combined = asked_formula(question)
    if combined is not None:
        return combined
    entry = _library_entry(question)
    if entry is None:
        return item_ratio(question)
    name, formulas, unit = entry.name, entry.formulas, entry.unit
    if unit == "ratio" and re.search(r"%|\bpercent", question, re.I):  # "ROA (as a %)": the ratio in percent
        unit = "percent"
    trees = with_parts([_expand(parse(f, _REFS), {}) for f in formulas])
    return Metric(name, trees, unit, False, entry.better, entry.range if unit == entry.unit else None)


def _replace(node: Node, target: Term, repl: Node) -> Node:
    if node is target:
        return repl
    if isinstance(node, Bin):
        return Bin(node.op, _replace(node.left, target, repl), _replace(node.right, target, repl))
    return node


def _as_term(node: Node, like: Term) -> Node:
    """A part formula read at ``like``'s periods and aggregation (an average of COGS: of each part)."""
    if isinstance(node, Term):  # a part of an outflow is one ("cost of services" of cost of goods sold)
        return Term(node.name, like.agg, list(like.periods), like.optional,
                    CONCEPTS.get(concept_of(like.name) or "", ([], "", False))[2])
    if isinstance(node, Bin):
        return Bin(node.op, _as_term(node.left, like), _as_term(node.right, like))
    return node


def with_parts(trees: list[Node]) -> list[Node]:
    """``trees``, then each with one line item replaced by the rows a filing prints in its place where it
    prints no row for the whole (the catalogue's ``parts``: cost of goods sold as cost of products + cost of
    services): tried only after the trees themselves."""
    out = list(trees)
    for tree in trees:
        for t in terms(tree):
            for alt in PARTS.get(concept_of(t.name) or "", []):
                out.append(_replace(tree, t, _as_term(alt, t)))
    return out


def _is_plain_term(node: Node) -> bool:
    return isinstance(node, (Term, Num))



def usual_ratios() -> list[tuple[re.Pattern, str, str, str, bool]]:
    """The catalogue's metrics that are one line item over another ("current ratio": total current assets / total
    current liabilities; a margin: gross profit / revenue * 100): (names, metric, numerator, denominator, in
    percent), the usual definition a table program may read where the question's own name grounds nothing."""
    out = []
    for entry in LIBRARY:
        tree = parse(entry.formulas[0], _REFS)
        percent = isinstance(tree, Bin) and tree.op == "*" and isinstance(tree.right, Num) and tree.right.value == 100
        core = tree.left if percent else tree
        if (isinstance(core, Bin) and core.op == "/" and isinstance(core.left, Term) and isinstance(core.right, Term)
                and core.left.agg == core.right.agg == "value"):
            out.append((entry.names, entry.name, core.left.name, core.right.name, percent))
    return out


def judgement_for(question: str) -> Optional[tuple[Judgement, Metric]]:
    """A yes/no question the catalogue's judgements answer ("Is it a capital-intensive business?", "Does it have a
    healthy liquidity profile based on its quick ratio?"): the judgement and the metric it is judged by (the one the
    question names where it names one of the catalogue's, else the judgement's)."""
    j = next((j for j in JUDGEMENTS if j.asked.search(question)), None)
    if j is None:
        return None
    named = metric_for(question)
    return j, (named if named is not None and not named.defined else metric_named(j.metric))


def metric_named(name: str) -> Metric:
    """The catalogue's metric called ``name`` (as its entry names it)."""
    entry = next(e for e in LIBRARY if e.name == name)
    trees = with_parts([_expand(parse(f, _REFS), {}) for f in entry.formulas])
    return Metric(entry.name, trees, entry.unit, False, entry.better, entry.range)


_AS_SHARE = re.compile(r"(?P<a>[a-z][\w&,' -]*?)\s+(?:as an?|to)\s+(?:%|percent(?:age)?|share|proportion)\s+of\s+"
                       r"(?:the\s+)?(?:total\s+)?(?P<b>[a-z][\w&' -]*?)(?=\s+(?:from|for|in|between|over|during|at)\b|"
                       r"[?.,;]|$)", re.I)


_ITEM_MARGIN = re.compile(r"(?P<a>[a-z][\w&,' -]*?)\s+(?:%\s+)?margin\b", re.I)


def item_ratio(question: str) -> Optional[Metric]:
    """"Cost of goods sold as a % of revenue", "D&A % margin": one standard line item over another (a margin: over
    revenue), in percent, where both are line items of the catalogue (no metric entry needed)."""
    plain = re.sub(r"\s*\([^()]*\)", "", question)  # "depreciation and amortization (D&A from cash flow) % margin"
    m = _AS_SHARE.search(plain)
    if not m:
        mm = _ITEM_MARGIN.search(plain)
        m = {"a": mm["a"], "b": "revenue"} if mm else None
    if not m:
        return None
    words = m["a"].split()
    for i in range(len(words)):  # "three year average of cost of goods sold": the longest tail that is an item
        a = " ".join(words[i:])
        if concept_of(a) and concept_of(m["b"]):
            tree = Bin("*", Bin("/", Term(concept_of(a)), Term(concept_of(m["b"]))), Num(100.0))
            return Metric(f"{concept_of(a)} as a % of {concept_of(m['b'])}", with_parts([tree]), "percent", False)
    return None


_ASKED_OBJECT = re.compile(r"^\s*(?i:what\s+(?:is|was|were|are)\s+(?:the\s+)?)(?P<obj>[^?]+?)(?:\s+(?:for|of|at)\s+[A-Z][^?]*)?\?")
_ARITHMETIC = re.compile(r"\b(?:less|minus|plus|divided by|times)\b|\s[-+*/]\s", re.I)


def asked_formula(question: str) -> Optional[Metric]:
    """"What is the FY2022 EBITDA less capex?": the object asked is itself a formula over a metric of the catalogue
    and line items (every operand known), computed as written."""
    m = _ASKED_OBJECT.search(question)
    if not m or not _ARITHMETIC.search(m["obj"]):
        return None
    text = re.sub(r"^(?:unadjusted|reported|gaap)\s+", "", strip_periods(m["obj"]).strip(), flags=re.I)
    text = re.sub(r"(?:\s+(?:in|for|of|at|during|from|to|between|and|the))+\s*$", "", text, flags=re.I)
    try:
        tree = parse(text, _REFS)
        if not isinstance(tree, Bin) or not refs(tree):
            return None
        tree = _expand(tree, {})
    except FormulaError:
        return None
    if any(concept_of(t.name) is None for t in terms(tree)):
        return None
    return Metric(" ".join(text.split()), with_parts([tree]), "amount", False)
