"""Question parsing for the BI planner: which operation is asked, over which periods, and the words left
to name the line items. TAT-QA/analyst conventions: "change"/"difference"/"increase" between two periods is
a difference (new - old) unless a percentage is asked; "percentage change"/"growth" is (new - old) / old;
"average" is over the periods mentioned; "ratio of A to B" / "A as a percentage of B" is A / B.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.agent.bi.count import condition, without_condition
from app.agent.bi.periods import Period, periods_in, strip_periods

OPS = ("lookup", "difference", "pct_change", "average", "sum", "ratio", "max", "min", "count")
_PCT_CHANGE = re.compile(
    r"\b(percent(?:age)?|%)\s*(?:of\s+)?(?:change|increase|decrease|growth|decline|rise|difference|drop|"
    r"reduction)|\b(?:change|increase|decrease|growth|decline|rise|drop)\w*\s+(?:in\s+)?(?:percent(?:age)?|%)"
    r"|\bgrowth rate\b|\bgr[eo]w(?:th|s)?\b|\bgrow\b|\bby what percent(?:age)?\b|\byear[- ]on[- ]year\b", re.I)
_AVERAGE = re.compile(r"\b(average|mean|avg)\b", re.I)
_WEIGHTED = re.compile(r"\bweighted[- ]average\b", re.I)
_RATIO = re.compile(r"\b(ratio|proportion|percentage of|percent of|% of|share of|portion of|fraction of|as a "
                    r"(?:percentage|percent|proportion|share|ratio|fraction)|what percent(?:age)?|divided by)\b",
                    re.I)
_CHANGE_WORDS = (r"change[sd]?|difference|differ|increase[sd]?|decrease[sd]?|decline[sd]?|rise|rose|fell|drop(?:ped)?|"
                 r"variance|movement")  # words that ask for a change: the operation read and the one asked
_DIFF = re.compile(rf"\b({_CHANGE_WORDS}|how much (?:more|less|higher|lower|greater|larger|smaller|bigger)"
                   r"|(?:more|less|higher|lower|greater|larger|smaller) than)\b", re.I)
_SUM = re.compile(r"\b(sum|combined|in total|altogether|aggregate|add(?:ed)? up|total)\b", re.I)
_MAX = re.compile(r"\b(highest|largest|greatest|most|maximum|max|biggest|higher|larger|greater)\b", re.I)
_MIN = re.compile(r"\b(lowest|smallest|least|minimum|min|fewest|lower|smaller)\b", re.I)
# "which segment ... highest": the kind of item ranked (read by bi.grounding too)
WHICH = re.compile(r"^\s*(which|what|in which|for which|during which)\b[^?]*?\b(year|period|quarter|segment|"
                   r"category|region|item|one|month|country|type|business|division|product)s?\b", re.I)
# "In which years was X provided?", "Which years does the table cover?": the header answers (the text route)
_WHICH_YEARS = re.compile(r"^\s*(?:in |for |during )?which (?:fiscal )?years\b|\bwhat years\b", re.I)
_BREAKDOWN = re.compile(r"\b(by segment|each segment|per segment|by region|breakdown|each (?:year|period|quarter)|"
                        r"by year|per year|every segment|all segments|by category|each category)\b", re.I)
_PERCENT = re.compile(r"\bpercent(?:age)?\b|%", re.I)
_FY = re.compile(r"\b(fy|full[- ]year)\b", re.I)
_TEXT_INTENT = re.compile(
    r"^\s*(why|where|who|whom|whose|describe|explain|list the reasons?)\b|\b(reasons?|why|definitions?|define|"
    r"meaning|mean by|stand for|what (?:caused|drove|led to|contributed)|due to what|primarily due|policy|"
    r"policies|methodology|approach|how (?:does|do|did|is|are|was|were|will|would|can|should) (?:the |our )?"
    r"(?:company|group|management|we|it|they)\b(?! (?:\w+ ){0,3}(?:change|increase|decrease|grow))|"
    r"what (?:does|do) (?:the )?(?:[\w/()-]+ ){1,5}(?:mean|refer|include|represent|comprise)|what is included|included in|"
    r"consists? of|comprised of|which (?:method|standard|model|approach|assumption))\b", re.I)
_SPAN = re.compile(r"\b(?:from|between|for)\s+(?:fiscal\s+|fy\s*)?((?:19|20)\d\d)\s*(?:to|and|through|until|-|–)\s*"
                   r"(?:fiscal\s+|fy\s*)?((?:19|20)\d\d)\b|"
                   r"\b(?:fy\s*)?((?:19|20)\d\d)\s*(?:-|–|through|to)\s*(?:fy\s*)?((?:19|20)\d\d)\b",
                   re.I)
_RATIO_REVERSED = re.compile(
    r"\b(?:percentage|percent|proportion|share|portion|fraction|%)\s+of\s+(?:the\s+)?[\w\s,&'’()-]+?\b(?:is|was|are|"
    r"were|came|comes|made up|derived|accounted|represented|attributable|consist\w*|related)\b", re.I)
_BOILER = re.compile(
    r"\b(what|which|how|much|many|is|was|were|are|the|a|an|of|in|for|from|to|between|and|as|at|by|on|did|does|do|"
    r"year|years|period|periods|amount|value|values|figure|figures|reported|respectively|compared|comparison|"
    r"relative|over|end|ended|ending|fiscal|its|their|company|company.s|companys|sum|average|mean|change|"
    r"difference|increase|decrease|percentage|percent|ratio|proportion|nominal|net change|growth|rate|%|"
    r"highest|lowest|largest|smallest|greater|higher|lower|than|more|less|combined|this|that|these|those|"
    r"with|be|has|have|had|there|it|all|each|per|both|two|three|within|during|across|vs|versus)\b", re.I)


@dataclass
class ParsedQuestion:
    text: str
    op: str
    percent: bool  # a ratio asked as a percentage
    periods: list[Period] = field(default_factory=list)
    fy: bool = False
    wants_total: bool = False
    breakdown: bool = False
    which: bool = False  # "which year/segment ..." (max/min answer a label)
    phrase: str = ""  # the question without periods and operation words
    span: bool = False  # "from 2015 to 2019": every period in between (for average / sum)
    text_intent: bool = False  # asks why / how / what something means, or which years a table covers: text
    reversed_ratio: bool = False  # "what percentage of B is A": the first-named item divides


def parse_question(question: str) -> ParsedQuestion:
    q = " ".join(question.split())
    body = _WEIGHTED.sub("weighted_avg", q)  # "weighted average X" names a line item, not an operation
    periods = periods_in(q)
    percent = bool(_PERCENT.search(body))
    which = bool(WHICH.search(body))
    counting = bool(re.search(r"\bhow many\b", body, re.I)) and condition(body) is not None
    if counting:  # "how many years did X exceed $N": a count of cells meeting the condition
        op = "count"
    elif which and _MAX.search(body):
        op = "max"
    elif which and _MIN.search(body):
        op = "min"
    elif _PCT_CHANGE.search(body) and not _AVERAGE.search(body):
        op = "pct_change"
    elif _AVERAGE.search(body):
        op = "average"
    elif _RATIO.search(body):
        op = "ratio"
    elif _DIFF.search(body):
        op = "difference"
    elif _SUM.search(body) and (len(periods) >= 2 or re.search(r"\b(sum|combined|altogether|add)\b|\band\b", body,
                                                                 re.I)):
        op = "sum"
    elif re.match(r"\s*how many\b", body, re.I) and not re.search(r"\bhow many (?:\w+ )?(?:shares|units|employees|"
                                                                  r"customers|dollars|options|people|stores)\b",
                                                                  body, re.I):
        op = "count"
    else:
        op = "lookup"
    # "Autodesk's goodwill": the possessive names the company (the scope's business), not a line item
    phrase = strip_periods(re.sub(r"\b[A-Z][\w&.-]*['’]s\b", " ", without_condition(q) if counting else q))
    span = bool(_SPAN.search(q)) and op in ("average", "sum")
    return ParsedQuestion(q, op, percent and op == "ratio", periods, bool(_FY.search(q)),
                          bool(re.search(r"\btotal\b", q, re.I)), bool(_BREAKDOWN.search(q)), which, phrase,
                          span, bool(_TEXT_INTENT.search(q)) or (bool(_WHICH_YEARS.search(q)) and op not in ("max", "min")),
                          bool(_RATIO_REVERSED.search(body)))


def entity_text(phrase: str) -> str:
    """The words that name line items: ``phrase`` without boilerplate and operation words."""
    t = _BOILER.sub(" ", phrase.replace("?", " "))
    return " ".join(t.split())


# What a question asks to be computed, as families of operations, and what each program operation computes:
# the verifier's check that a BI program does what was asked ("the change in the average", "the change (%)",
# "the values ... respectively" are not answered by an average, a difference, a total).
_ASKED = {
    "average": _AVERAGE,
    "change": re.compile(rf"\b({_CHANGE_WORDS}|growth|grew)\b", re.I),
    "percent": _PERCENT,
    "ratio": re.compile(r"\b(?:ratio|proportion|percentage|percent|share|portion|fraction|%)\s+of\b|\bas an? "
                        r"(?:percentage|percent|proportion|share|ratio|fraction)\b|\bwhat percent(?:age)?\b|"
                        r"\bdivided by\b", re.I),  # bare "ratio" names a line item ("net debt to EBITDA ratio")
    "sum": re.compile(r"\b(?:sum|combined|altogether|aggregate|add(?:ed)? up)\b", re.I),  # "in total": a total row
    "list": re.compile(r"\brespective(?:ly)?\b", re.I),
    # a superlative asks which item or period is the extreme one ("the largest liability"), not one looked up
    "extreme": re.compile(r"\b(?:highest|largest|greatest|biggest|lowest|smallest|maximum|minimum)\b", re.I),
}
COMPUTES = {"lookup": {"list"}, "difference": {"change"}, "pct_change": {"change", "percent"},
            "average": {"average"}, "sum": {"sum"}, "ratio": {"ratio", "percent"}, "max": {"extreme"},
            "min": {"extreme"},
            "count": set()}


def operations_asked(question: str) -> set[str]:
    """The families of operations ``question`` names; "percent" only beside a change (a percentage looked up
    or divided out needs no operation of its own), "weighted average" names a line item."""
    body = _WEIGHTED.sub("weighted_avg", " ".join(question.split()))
    found = {name for name, rx in _ASKED.items() if rx.search(body)}
    if "ratio" in found:
        found.discard("percent")
    if "change" not in found:
        found.discard("percent")
    return found


def operation_unmet(question: str, op: str) -> set[str]:
    """The families ``question`` asks for that program operation ``op`` does not compute (empty when it does,
    or when ``op`` is not a program operation: a metric formula, a model's SQL)."""
    if op not in COMPUTES:
        return set()
    return operations_asked(question) - COMPUTES[op]
