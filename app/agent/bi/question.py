"""Question parsing for the BI planner: which operation is asked, over which periods, and the words left
to name the line items. TAT-QA/analyst conventions: "change"/"difference"/"increase" between two periods is
a difference (new - old) unless a percentage is asked; "percentage change"/"growth" is (new - old) / old;
"average" is over the periods mentioned; "ratio of A to B" / "A as a percentage of B" is A / B.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Optional

from app.agent.bi.count import condition, without_condition
from app.agent.bi.periods import Period, names_quarter, periods_in, strip_periods, yearless_quarters
from app.agent.text_spans import asked_head
from app.agent.vocabulary import phrase_pattern, word_lists

OPS = ("lookup", "difference", "pct_change", "average", "sum", "ratio", "max", "min", "count")
# the shapes of a question that are not word lists: year spans, "which years", a full year
_WHICH_YEARS = re.compile(r"^\s*(?:in |for |during )?which (?:fiscal )?years\b|\bwhat years\b", re.I)
_FY = re.compile(r"\b(fy|full[- ]year)\b", re.I)
# "fiscal years 2019 to 2017": a range (a lookup lists every year in it; "2018 and 2019" names two)
_RANGE_TEXT = r"\b(?:fy\s*)?((?:19|20)\d\d)\s*(?:-|–|to|through|until)\s*(?:fiscal\s+|fy\s*)?((?:19|20)\d\d)\b"
_RANGE = re.compile(_RANGE_TEXT, re.I)
# a span of years an average or sum runs over: "from 2017 to 2019", "between 2018 and 2019", or a range
_SPAN = re.compile(r"\b(?:from|between|for)\s+(?:fiscal\s+|fy\s*)?((?:19|20)\d\d)\s*(?:to|and|through|until|-|–)\s*"
                   r"(?:fiscal\s+|fy\s*)?((?:19|20)\d\d)\b|" + _RANGE_TEXT, re.I)
# "how does the company ...", "what does X mean": asks how or what, which the text answers
_TEXT_SHAPES = (r"\bhow (?:does|do|did|is|are|was|were|will|would|can|should) (?:the |our )?(?:company|group|"
                r"management|we|it|they)\b(?! (?:\w+ ){0,3}(?:change|increase|decrease|grow))|\bwhat (?:does|do) "
                r"(?:the )?(?:[\w/()-]+ ){1,5}(?:mean|refer|include|represent|comprise)\b")
# the word lists of app/data/vocabulary.yaml `operations` the patterns are built from
_WORD_LISTS = ("average", "line_item_names", "percent", "percent_change_words", "percent_difference_words", "growth",
               "percent_change", "ratio", "fraction", "ratio_phrases", "reversed_ratio_verbs", "change", "comparison",
               "sum", "total", "added_items", "max", "min", "extreme", "list", "which_kinds", "breakdown",
               "counted_amounts", "text_openers", "text_intent", "boilerplate", "superlatives", "period_kinds")


def patterns(words: dict[str, list[str]]) -> SimpleNamespace:
    """The patterns a question is read with, built from the operation word lists (``vocabulary.word_lists``): the
    words are data, the shapes around them ("<percent> [of] <change>", "as a <fraction>") are here."""
    w = words

    def p(phrases, plural=False):  # operation words are apart by spaces only ("higher-than-expected")
        return phrase_pattern(phrases, plural, hyphens=False)

    def rx(phrases):
        return re.compile(p(phrases), re.I)

    percent, changes = p(w["percent"]), p(w["percent_change_words"])
    fraction, parts = p(w["fraction"]), p(w["ratio"] + w["fraction"])
    kinds = [v for k in w["which_kinds"] for v in (k, k + "s")]  # "segments" (not "countries", "businesses")
    return SimpleNamespace(
        average=rx(w["average"]), percent=rx(w["percent"]), weighted=rx(w["line_item_names"]),
        pct_change=re.compile(rf"{percent}\s*(?:of\s+)?{p(w['percent_change_words'] + w['percent_difference_words'])}"
                              rf"|{changes}\s+(?:in\s+)?{p(w['percent'], plural=True)}"
                              rf"|{p(w['percent_change'] + w['growth'])}", re.I),
        ratio=re.compile(rf"{p(w['ratio'])}|{fraction}\s+of\b|\bas an? {parts}|{p(w['ratio_phrases'])}", re.I),
        reversed_ratio=re.compile(rf"{fraction}\s+of\s+(?:the\s+)?[\w\s,&'’()-]+?{p(w['reversed_ratio_verbs'])}",
                                  re.I),
        diff=rx(w["change"] + w["comparison"]),
        sum=rx(w["sum"] + w["total"]), added=rx(w["added_items"]),
        max=rx(w["max"]), min=rx(w["min"]),
        # "which segment ... highest": the kind of item ranked (read by bi.grounding too)
        # at the start, or after a lead-in clause ("Among the derivative instruments it uses, which one ...")
        which=re.compile(rf"(?:^|[,;:])\s*(which|what|in which|for which|during which)\b[^?]*?{p(kinds)}", re.I),
        period_kinds=frozenset(v for k in w["period_kinds"] for v in (k, k + "s")),
        # "What was the largest liability ...": a superlative before a noun asks which item of that kind is the
        # extreme one (the rows of the statement's section of that name), not a figure looked up
        extreme_of=re.compile(rf"^\s*what (?:is|was|are|were) (?:the |its |their )?(?P<word>{p(w['superlatives'])})\s+"
                              rf"(?P<kind>[a-z][a-z-]+)\b", re.I),
        breakdown=rx(w["breakdown"]),
        counted_amount=re.compile(rf"\bhow many (?:\w+ )?{p(w['counted_amounts'])}", re.I),
        text_intent=re.compile(rf"^\s*{p(w['text_openers'])}|{p(w['text_intent'])}|{_TEXT_SHAPES}", re.I),
        boiler=rx(w["boilerplate"]),
        # what a question asks to be computed, as families of operations (see operations_asked)
        asked={"average": rx(w["average"]),
               "change": rx(w["change"] + w["growth"]),
               "percent": rx(w["percent"]),
               # bare "ratio" names a line item ("net debt to EBITDA ratio")
               "ratio": re.compile(rf"{parts}\s+of\b|\bas an? {parts}|{p(w['ratio_phrases'])}", re.I),
               "sum": rx(w["sum"]),  # "in total": a total row
               "list": rx(w["list"]),
               "extreme": rx(w["extreme"])})


_RX = patterns(word_lists("operations", _WORD_LISTS))  # built once, at import
WHICH = _RX.which


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
    span: bool = False  # "from 2015 to 2019": every period in between (average, sum; a lookup's "2015 to 2019")
    text_intent: bool = False  # asks why / how / what something means, or which years a table covers: text
    reversed_ratio: bool = False  # "what percentage of B is A": the first-named item divides
    extreme_of: str = ""  # "what was the largest liability": the kind of row ranked ("liability"), when no op is
    extreme_op: str = ""  # max | min: how the rows of that kind are ranked
    quarters: tuple[int, ...] = ()  # the quarters named without a year ("in Q3", "the fourth quarter")
    quarter_named: bool = False  # a quarter named without its year, "the quarters ended ..." too
    asks_for: str = ""  # years | date | duration: what the head of the asked phrase names (text_spans.asked_head)


def parse_question(question: str) -> ParsedQuestion:
    q = " ".join(question.split())
    rx = _RX  # the patterns built from the operation words
    body = rx.weighted.sub("weighted_avg", q)  # "weighted average X" names a line item, not an operation
    periods = periods_in(q)
    percent = bool(rx.percent.search(body))
    which = bool(rx.which.search(body))
    counting = bool(re.search(r"\bhow many\b", body, re.I)) and condition(body) is not None
    if counting:  # "how many years did X exceed $N": a count of cells meeting the condition
        op = "count"
    elif which and rx.max.search(body):
        op = "max"
    elif which and rx.min.search(body):
        op = "min"
    elif rx.pct_change.search(body) and not rx.average.search(body):
        op = "pct_change"
    elif rx.average.search(body):
        op = "average"
    elif rx.ratio.search(body):
        op = "ratio"
    elif rx.diff.search(body):
        op = "difference"
    elif rx.sum.search(body) and (len(periods) >= 2 or rx.added.search(body)):
        op = "sum"
    elif re.match(r"\s*how many\b", body, re.I) and not rx.counted_amount.search(body):
        op = "count"
    else:
        op = "lookup"
    # "Autodesk's goodwill": the possessive names the company (the scope's business), not a line item
    phrase = strip_periods(re.sub(r"\b[A-Z][\w&.-]*['’]s\b", " ", without_condition(q) if counting else q))
    span = bool(_SPAN.search(q)) and op in ("average", "sum") or bool(_RANGE.search(q)) and op == "lookup"
    extreme = rx.extreme_of.search(body) if op == "lookup" else None
    quarters = tuple(yearless_quarters(q))
    return ParsedQuestion(q, op, percent and op == "ratio", periods, bool(_FY.search(q)),
                          bool(re.search(r"\btotal\b", q, re.I)), bool(rx.breakdown.search(q)), which, phrase,
                          span, bool(rx.text_intent.search(q)) or (bool(_WHICH_YEARS.search(q))
                                                                   and op not in ("max", "min")),
                          bool(rx.reversed_ratio.search(body)), extreme.group("kind").lower() if extreme else "",
                          ("max" if rx.max.fullmatch(extreme.group("word")) else "min") if extreme else "",
                          quarters, bool(quarters) or names_quarter(q), asked_head(q.lower()))


def label_span(text: str, label: str) -> Optional[tuple[int, int]]:
    """Where ``text`` names a row ``label`` as printed, word for word (case, punctuation and spacing aside):
    "the interest expense" names "Interest expense"; None where it does not."""
    words = re.findall(r"[a-z0-9]+", label.lower())
    if not words:
        return None
    m = re.search(r"(?<![a-z0-9])" + r"[^a-z0-9]+".join(map(re.escape, words)) + r"(?![a-z0-9])", text.lower())
    return m.span() if m else None


def op_besides(pq: ParsedQuestion, label: str) -> ParsedQuestion:
    """``pq`` read again without the words of a row label it names verbatim: "What was the Total operating
    expense in 2019 and 2018?" names the row "Total operating expense", whose "total" asks for no sum, as "Net
    decrease in cash" asks for no difference. ``pq`` itself where the label is not named whole or its words
    change nothing."""
    if pq.op == "lookup" or len(label.split()) < 2:
        return pq
    at = label_span(pq.text, label)
    if at is None:
        return pq
    again = parse_question(f"{pq.text[:at[0]]} {pq.text[at[1]:]}")
    return replace(pq, op=again.op, span=again.span, percent=again.percent) if again.op != pq.op else pq


def ranks_periods(question: str) -> bool:
    """"Which year had the highest ...": the periods are ranked (a table's columns), not its rows (the kind word
    that ends the "which" phrase is one of the vocabulary's ``period_kinds``)."""
    m = WHICH.search(question)
    return bool(m) and m.group(0).split()[-1].lower() in _RX.period_kinds


def entity_text(phrase: str) -> str:
    """The words that name line items: ``phrase`` without boilerplate and operation words."""
    t = _RX.boiler.sub(" ", phrase.replace("?", " "))
    return " ".join(t.split())


# What a question asks to be computed, as families of operations (``_RX.asked``), and what each program operation
# computes: the verifier's check that a BI program does what was asked ("the change in the average", "the change
# (%)", "the values ... respectively" are not answered by an average, a difference, a total).
COMPUTES = {"lookup": {"list"}, "difference": {"change"}, "pct_change": {"change", "percent"},
            "average": {"average"}, "sum": {"sum"}, "ratio": {"ratio", "percent"}, "max": {"extreme"},
            "min": {"extreme"}, **{f"{m}_by_change": {"extreme", "change"} for m in ("max", "min")},
            **{f"{m}_by_pct_change": {"extreme", "change", "percent"} for m in ("max", "min")},
            "count": set()}


def names_percent(text: str) -> bool:
    """``text`` (a row label) says its figures are percentages ("Gross margin (as percentage of net revenues)")."""
    return bool(_RX.percent.search(text))


def operations_asked(question: str) -> set[str]:
    """The families of operations ``question`` names; "percent" only beside a change (a percentage looked up
    or divided out needs no operation of its own), "weighted average" names a line item."""
    body = _RX.weighted.sub("weighted_avg", " ".join(question.split()))
    found = {name for name, rx in _RX.asked.items() if rx.search(body)}
    if "ratio" in found:
        found.discard("percent")
    if "change" not in found:
        found.discard("percent")
    return found


# computations a sentence states by name ("increased $1.2 million"); a percentage is asked only beside a change
# ("the percentage change": "grew 12%"), see operations_asked
STATED_FAMILIES = ("average", "change", "sum", "percent")


def operations_unstated(question: str, text: str) -> set[str]:
    """The computations ``question`` asks for (an average, a change, a sum) that ``text`` names no word of: a
    passage quoting the figures without the computation ("$53 million ... and $68 million" for "the average
    ...") states the operands, not the answer."""
    asked = operations_asked(question) & set(STATED_FAMILIES)
    return {f for f in asked if not _RX.asked[f].search(text)}


def operation_unmet(question: str, op: str, label: str = "") -> set[str]:
    """The families ``question`` asks for that program operation ``op`` does not compute (empty when it does,
    or when ``op`` is not a program operation: a metric formula, a model's SQL); the words of ``label``, a row
    the question names whole, ask for nothing ("Net decrease in cash")."""
    if op not in COMPUTES:
        return set()
    if label and (at := label_span(question, label)):
        question = f"{question[:at[0]]} {question[at[1]:]}"
    return operations_asked(question) - COMPUTES[op]
