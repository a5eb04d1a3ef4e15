"""Financial metrics over statement line items: a small library of the standard definitions (DPO, DSO, DIO,
inventory turnover, current / quick ratio, margins, EBITDA, free cash flow, ROA, ROE, ...) and the definitions a
question spells out ("DPO is defined as: 365 * (average accounts payable between FY2016 and FY2017) / ...").

``metric_for(question)`` -> ``Metric`` (name, expression tree, how to state it) or None. A definition the
question gives wins over the library's; names it uses that the question also defines ("CCC is defined as
DIO + DSO - DPO. DIO is defined as ...") or the library knows are expanded. Line items are named as analysts
name them; ``CONCEPTS`` lists the row labels filings use for each and the statement it is read from.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from app.agent.bi.formula import Bin, FormulaError, Node, Num, Ref, Term, parse

# (name pattern, display name, formulas tried in order, unit: days | ratio | percent | amount)
LIBRARY: list[tuple[str, str, list[str], str]] = [
    (r"days payables? outstanding|\bdpo\b", "days payable outstanding (DPO)",
     ["365 * average accounts payable / (cost of goods sold + change in inventory)"], "days"),
    (r"days sales outstanding|\bdso\b", "days sales outstanding (DSO)",
     ["365 * average accounts receivable / revenue"], "days"),
    (r"days inventory outstanding|days (?:in|of) inventory|\bdio\b", "days inventory outstanding (DIO)",
     ["365 * average inventory / cost of goods sold"], "days"),
    (r"cash conversion cycle|\bccc\b", "cash conversion cycle (CCC)", ["dio + dso - dpo"], "days"),
    (r"inventory turnover", "inventory turnover", ["cost of goods sold / average inventory"], "ratio"),
    (r"(?:accounts )?receivables? turnover", "receivables turnover", ["revenue / average accounts receivable"],
     "ratio"),
    (r"(?:accounts )?payables? turnover", "payables turnover", ["cost of goods sold / average accounts payable"],
     "ratio"),
    (r"fixed asset turnover", "fixed asset turnover", ["revenue / average property and equipment"], "ratio"),
    (r"(?:total )?asset turnover", "total asset turnover", ["revenue / average total assets"], "ratio"),
    (r"working capital ratio|current ratio", "current ratio",
     ["total current assets / total current liabilities"], "ratio"),
    (r"quick ratio|acid[- ]test ratio", "quick ratio",
     ["(cash and cash equivalents + [short-term investments] + accounts receivable) / total current liabilities"],
     "ratio"),
    (r"operating cash flow ratio", "operating cash flow ratio",
     ["cash from operations / total current liabilities"], "ratio"),
    (r"(?:net )?working capital", "working capital", ["total current assets - total current liabilities"],
     "amount"),
    (r"gross (?:profit )?margin", "gross margin",
     ["gross profit / revenue * 100", "(revenue - cost of goods sold) / revenue * 100"], "percent"),
    (r"ebitda (?:%\s*)?margin|ebitda as a % of revenue", "EBITDA margin",
     ["ebitda / revenue * 100"], "percent"),
    (r"operating (?:profit |income )?(?:%\s*)?margin|ebit (?:%\s*)?margin", "operating margin",
     ["operating income / revenue * 100"], "percent"),
    (r"net (?:profit |income )?(?:%\s*)?margin|profit margin", "net profit margin",
     ["net income / revenue * 100"], "percent"),
    (r"free cash flow margin", "free cash flow margin", ["free cash flow / revenue * 100"], "percent"),
    (r"free cash flow conversion", "free cash flow conversion", ["free cash flow / net income"], "ratio"),
    (r"free cash flow|\bfcf\b", "free cash flow", ["cash from operations - capital expenditure"], "amount"),
    (r"capex (?:to|over|as a (?:%|percent(?:age)?) of) (?:revenue|sales)|capital expenditures? (?:to|over|as a "
     r"(?:%|percent(?:age)?) of) (?:revenue|sales)", "capital expenditure as a % of revenue",
     ["capital expenditure / revenue * 100"], "percent"),
    (r"\bebitda\b", "EBITDA", ["operating income + depreciation and amortization"], "amount"),
    (r"return on (?:total )?assets|\broa\b", "return on assets (ROA)", ["net income / average total assets"],
     "ratio"),
    (r"return on (?:shareholders'? |stockholders'? )?equity|\broe\b", "return on equity (ROE)",
     ["net income / average total equity"], "ratio"),
    (r"debt[- ]to[- ]equity|debt to equity", "debt-to-equity ratio",
     ["total debt / total equity", "(long-term debt + [current portion of long-term debt] + [short-term borrowings])"
      " / total equity"], "ratio"),
    (r"interest coverage", "interest coverage ratio", ["operating income / interest expense"], "ratio"),
    (r"effective (?:income )?tax rate", "effective tax rate",
     ["income tax expense / income before income taxes * 100"], "percent"),
    (r"dividend payout ratio|payout ratio", "dividend payout ratio", ["cash dividends paid / net income"], "ratio"),
]
# metrics other definitions use by name ("CCC = DIO + DSO - DPO", "EBITDA margin = EBITDA / revenue")
_REFS = frozenset({"dio", "dso", "dpo", "ebitda", "free cash flow"})

# line item -> (row labels filings use, statement read from, absolute value: outflows / expenses printed in
# parentheses on one statement and not on another)
CONCEPTS: dict[str, tuple[list[str], str, bool]] = {
    "accounts payable": (["accounts payable", "trade payables", "accounts payable trade"], "balance_sheet", False),
    "accounts receivable": (["accounts receivable", "receivables", "trade receivables",
                             "accounts receivable net", "trade accounts receivable"], "balance_sheet", False),
    "inventory": (["inventories", "inventory", "merchandise inventories"], "balance_sheet", False),
    "cost of goods sold": (["cost of goods sold", "cost of sales", "cost of revenue", "cost of revenues",
                            "cost of products sold", "total cost of revenue", "total cost of sales", "merchandise costs"],
                           "income_statement", True),
    "revenue": (["revenue", "revenues", "total revenue", "total revenues", "net revenues", "net revenue",
                 "total net sales", "net sales", "sales", "total net revenue"], "income_statement", False),
    "gross profit": (["gross profit", "gross margin"], "income_statement", False),
    "operating income": (["operating income", "income from operations", "operating profit",
                          "operating income loss", "earnings from operations"], "income_statement", False),
    "net income": (["net income", "net earnings", "net income attributable", "net earnings attributable"],
                   "income_statement", False),
    "income before income taxes": (["income before income taxes", "earnings before income taxes",
                                    "income before provision for income taxes", "income before taxes"],
                                   "income_statement", False),
    "income tax expense": (["provision for income taxes", "income tax expense", "income taxes",
                            "income tax provision"], "income_statement", True),
    "interest expense": (["interest expense"], "income_statement", True),
    "depreciation and amortization": (["depreciation and amortization", "depreciation amortization and other",
                                       "depreciation", "depreciation and amortization expense"], "cash_flow", True),
    "capital expenditure": (["purchases of property and equipment", "purchases of property plant and equipment",
                             "capital expenditures", "additions to property and equipment",
                             "purchase of property and equipment", "payments for property and equipment",
                             "purchases of property equipment and intangibles"], "cash_flow", True),
    "cash from operations": (["net cash provided by operating activities", "cash provided by operating activities",
                              "net cash from operating activities", "cash flows from operating activities",
                              "net cash provided by used in operating activities",
                              "total cash provided by operating activities"], "cash_flow", False),
    "cash from investing": (["net cash used in investing activities", "net cash provided by used in investing "
                             "activities", "total cash used in investing activities",
                             "cash used in investing activities"], "cash_flow", False),
    "cash from financing": (["net cash used in financing activities", "net cash provided by used in financing "
                             "activities", "total cash used in financing activities",
                             "cash used in financing activities"], "cash_flow", False),
    "cash dividends paid": (["dividends paid", "cash dividends paid", "payments of dividends", "dividends"],
                            "cash_flow", True),
    "property and equipment": (["property and equipment net", "property plant and equipment net",
                                "property and equipment", "property plant and equipment"], "balance_sheet", False),
    "total assets": (["total assets"], "balance_sheet", False),
    "total current assets": (["total current assets"], "balance_sheet", False),
    "total current liabilities": (["total current liabilities"], "balance_sheet", False),
    "total equity": (["total stockholders equity", "total shareholders equity", "total equity",
                      "stockholders equity", "shareholders equity"], "balance_sheet", False),
    "cash and cash equivalents": (["cash and cash equivalents"], "balance_sheet", False),
    "short-term investments": (["short-term investments", "marketable securities", "short-term marketable "
                                "securities"], "balance_sheet", False),
    "total debt": (["total debt"], "balance_sheet", False),
    "long-term debt": (["long-term debt"], "balance_sheet", False),
    "current portion of long-term debt": (["current portion of long-term debt", "current maturities of long-term "
                                           "debt", "short-term debt"], "balance_sheet", False),
    "short-term borrowings": (["short-term borrowings", "commercial paper"], "balance_sheet", False),
}
# how analysts abbreviate or rephrase a line item -> the concept
ALIASES = [
    (r"\bcogs\b|cost of (?:goods )?(?:sold|sales|revenues?)", "cost of goods sold"),
    (r"\bd\s?&\s?a\b|depreciation (?:and|&) amortization|depreciation", "depreciation and amortization"),
    (r"\bcapex\b|capital expenditures?|purchases? of (?:property|pp&e)", "capital expenditure"),
    (r"\bpp\s?&\s?e\b|\bppne\b|property,? plant,? and equipment|property and equipment|fixed assets",
     "property and equipment"),
    (r"\b(?:accounts )?payables?\b|\bap\b", "accounts payable"),
    (r"\b(?:accounts )?receivables?\b|\bar\b", "accounts receivable"),
    (r"\binventor(?:y|ies)\b", "inventory"),
    (r"\b(?:total )?(?:net )?(?:revenues?|sales|top line)\b", "revenue"),
    (r"\bgross profit\b", "gross profit"),
    (r"\b(?:operating income|operating profit|income from operations|ebit)\b", "operating income"),
    (r"\bnet (?:income|earnings|profit)\b", "net income"),
    (r"\b(?:income|earnings|profit) before (?:income )?tax(?:es)?\b|\bpre-?tax income\b", "income before income taxes"),
    (r"\b(?:income )?tax (?:expense|provision)|provision for (?:income )?taxes|income taxes\b", "income tax expense"),
    (r"\binterest expense\b", "interest expense"),
    (r"\b(?:cash (?:flow )?from operations|operating cash flows?|cash (?:flow )?from operating activities|"
     r"cash provided by operating activities)\b", "cash from operations"),
    (r"\b(?:cash (?:flow )?from investing|investing activities|investing cash flows?)\b", "cash from investing"),
    (r"\b(?:cash (?:flow )?from financing|financing activities|financing cash flows?)\b", "cash from financing"),
    (r"\bdividends?\b", "cash dividends paid"),
    (r"\btotal current assets\b|\bcurrent assets\b", "total current assets"),
    (r"\btotal current liabilities\b|\bcurrent liabilities\b", "total current liabilities"),
    (r"\btotal assets\b", "total assets"),
    (r"\b(?:total )?(?:shareholders'?|stockholders'?)? ?equity\b", "total equity"),
    (r"\bcash and (?:cash )?equivalents\b|\bcash\b", "cash and cash equivalents"),
    (r"\bshort[- ]term investments\b|\bmarketable securities\b", "short-term investments"),
    (r"\btotal debt\b", "total debt"),
    (r"\bcurrent portion of long[- ]term debt\b", "current portion of long-term debt"),
    (r"\blong[- ]term debt\b", "long-term debt"),
    (r"\bshort[- ]term borrowings\b", "short-term borrowings"),
]


def concept_of(name: str) -> Optional[str]:
    """The line item a term names, when the name is one analysts use for a standard item."""
    low = " ".join(name.lower().replace("’", "'").split())
    low = re.sub(r"^(?:the |unadjusted |reported |gaap |total )+", "", low) if low not in CONCEPTS else low
    if low in CONCEPTS:
        return low
    for rx, concept in ALIASES:
        m = re.search(rx, low)
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


PART = re.compile(r"\b(?:segments?|regions?|divisions?|business(?:es)? units?|categor(?:y|ies)|product lines?|"
                  r"countr(?:y|ies)|geograph\w*|brands?|subsidiar(?:y|ies))\b", re.I)


CAGR = re.compile(r"\b(?:cagr|compound(?:ed)? annual growth(?: rate)?)\b", re.I)
_CAGR_AFTER = re.compile(r"\s+(?:of|in|for)\s+(?:the\s+)?(?:total\s+)?([A-Za-z][\w&' -]*?)(?=\s+(?:from|between|over|for|in|"
                         r"during)\b|[?.,]|$)", re.I)
_CAGR_STOP = re.compile(r"^(?:the|is|was|what|of|a|an|total|year|years|\d+(?:-year)?|one|two|three|four|five)$|['’]s$", re.I)


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


def _library_entry(text: str) -> Optional[tuple[str, str, list[str], str]]:
    for entry in LIBRARY:
        if re.search(rf"(?:{entry[0]})", text, re.I):
            return entry
    return None


def _expand(node: Node, defined: dict[str, Node], depth: int = 0) -> Node:
    if depth > 4:
        raise FormulaError("definitions nest too deeply")
    if isinstance(node, Ref):
        if node.name in defined:
            return _expand(defined[node.name], defined, depth + 1)
        entry = _library_entry(node.name)
        if entry is None:
            raise FormulaError(f"no definition of {node.name}")
        return _expand(parse(entry[2][0], _REFS), defined, depth + 1)
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
            if not _is_plain_term(tree):
                entry = _library_entry(name) or _library_entry(question.split(".")[0])
                shown = entry[1] if entry and _key(entry[1]) == _key(name) or (entry and len(name) <= 6) else name
                return Metric(shown, [tree], _unit_of(name + " " + question, expr), True)
    if re.search(r"(?<!un)adjusted|non[- ]gaap|pro forma", question, re.I):
        return None  # the company's own adjusted measure, not the standard definition over the statements
    if PART.search(question):
        return None  # a segment's / region's figure: the statements give the company's
    item = cagr_item(question)
    if item:  # "the 2 year total revenue CAGR": a line item's growth, over the years the question names
        return Metric(f"{item} CAGR", [Term(item)], "amount", False)
    entry = _library_entry(question)
    if entry is None:
        return None
    _, name, formulas, unit = entry
    if unit == "ratio" and re.search(r"%|\bpercent", question, re.I):  # "ROA (as a %)": the ratio in percent
        unit = "percent"
    trees = [_expand(parse(f, _REFS), {}) for f in formulas]
    return Metric(name, trees, unit, False)


def _is_plain_term(node: Node) -> bool:
    return isinstance(node, (Term, Num))

