"""What a question over report text asks for, and the span of a sentence that gives it.

``ask_of(question)`` types the question: an amount ("What was the hosting cost in 2018?" -> "$9.5 million"),
a percentage, a count ("How many employees ..." -> "1,620"), a date or period ("When ..."), years ("In which
years ..."), a duration ("How long ..."), a reason ("Why ..." -> the clause after "due to"), a list ("What are
the contract types?" -> the items) or a description (the sentence itself). How questions ask for each kind is data
(vocabulary.yaml ``answer_kinds``, terms and connectors read by ``app.agent.clauses.connectors``).
``extract(ask, sentence)`` reads that span off one sentence, verbatim, or returns None when the sentence does not
state it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from app.agent.clauses.connectors import compile_expression, sentences
from app.agent.text import content_words, number_word_pattern, stem
from app.agent.text_terms import FILLER, key_words
from app.agent.vocabulary import vocabulary, word_lists

YEAR = re.compile(r"(?<![\d.$])(?<!\d,)(?:19|20)\d{2}(?!\d|,\d{3}|\.\d)")
FY = re.compile(r"\b(?:fiscal(?: year)?|fy|financial year)\s*'?(\d{2,4})\b", re.I)
CURRENCY = r"(?:US\$|A\$|C\$|NZ\$|HK\$|S\$|R\$|\$|€|£|¥|₹|RMB\s?|INR\s?|EUR\s?|USD\s?|GBP\s?|CHF\s?|SEK\s?|DKK\s?|NOK\s?)"
SCALE = r"(?:\s?(?:million|billion|thousand|trillion|bn|mn|m|k)\b)"
UNIT = r"(?:\s?(?:%|percent\b|per cent\b|basis points\b|bps\b|p\b|pence\b|cents?\b|per share\b|x\b))"
AMOUNT = re.compile(rf"(?<![\w.])\(?-?{CURRENCY}?\s?\(?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?\)?{SCALE}?{UNIT}?(?![\w])",
                    re.I)
QUALIFIER = re.compile(r"(?:approximately|about|around|over|more than|less than|nearly|almost|up to|at least|"
                       r"roughly|some|an estimated)\s+$", re.I)
MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|" \
        r"Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
DATES = [  # most specific first
    re.compile(rf"\b{MONTH}\s+\d{{1,2}},?\s+\d{{4}}\b|\b\d{{1,2}}\s+{MONTH},?\s+\d{{4}}\b"),
    re.compile(rf"\b(?:(?:first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter|(?:first|second)\s+half|"
               rf"Q[1-4])\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?)?\d{{4}}\b", re.I),
    re.compile(rf"\b{MONTH}\s+(?:of\s+)?\d{{4}}\b"),
    re.compile(r"\b(?:fiscal(?: year)?|FY)\s*'?\d{2,4}\b", re.I),
    YEAR,
]
DURATION = re.compile(rf"\b(?:\d+(?:\.\d+)?|{number_word_pattern()})(?:\s+to\s+\d+(?:\.\d+)?)?[\s-]+"
                      r"(?:years?|months?|weeks?|days?)\b"
                      r"|\b(?:annually|quarterly|monthly|weekly|daily|semi-annually|indefinite(?:ly)?)\b"
                      r"|\b(?:an? )?(?:annual|quarterly|monthly) basis\b", re.I)
CAUSE = re.compile(r"\b(?:(?:primarily|mainly|largely|principally|partially|partly|mostly|in part|chiefly)\s+)?"
                   r"(?:due to|as a result of|attributable to|driven by|resulting from|result of|because(?: of)?|"
                   r"owing to|caused by|reflect(?:s|ing|ed)?|on account of|following|in order to|to (?=[a-z]+\b))",
                   re.I)
LIST_LEAD = re.compile(r"\b(?:includ(?:e|es|ed|ing)|such as|consist(?:s|ed|ing)? of|compris(?:e|es|ed|ing)(?: of)?|"
                       r"namely|are|were|was|is|:)\s+", re.I)
ITEM_SPLIT = re.compile(r"\s*(?:;|,(?!\d{3})|(?<!-)\band\b(?!-)|(?<!-)\bor\b(?!-)|\bas well as\b)\s*", re.I)
@dataclass
class Ask:
    kind: str  # amount | percent | count | date | years | duration | reason | list | text
    years: list[str] = field(default_factory=list)  # years the question names, in its order
    key: set[str] = field(default_factory=set)  # its content-word stems (years and cue words out)
    multi: bool = False  # several values: "in 2019 and 2018 respectively", "What are ..."
    count_noun: str = ""  # "How many employees": the stem "employe"
    question: str = ""


def question_years(q: str) -> list[str]:
    out = [m.group(0) for m in YEAR.finditer(q)]
    for m in FY.finditer(q):
        y = m.group(1)
        out.append(y if len(y) == 4 else "20" + y)
    out += re.findall(r"\bQ[1-4]\s*['’]?\s*((?:19|20)\d{2})\b", q, re.I)  # "Q22023", "Q2'2023"
    return list(dict.fromkeys(out))


CUE_WORDS = {"what", "which", "when", "why", "how", "much", "many", "long", "respectively", "reason", "year",
             "years", "amount", "value", "total", "percentage", "proportion", "company", "group"}


QUESTION_DATE = re.compile(rf"\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{{2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+"
                           rf"(?:of\s+)?{MONTH},?\s+(?:19|20)\d{{2}}\b", re.I)
QUESTION_PERIOD = re.compile(r"\b(?:fiscal(?:\s+year)?|fy)\s*'?\s*\d{2,4}\b|\bq[1-4](?:\s*(?:of\s+)?(?:fy|fiscal)?\s*['’]?\s*"
                             r"\d{2,4})?\b|\b(?:fiscal|fy)\b", re.I)


# what a "what is the ..." question asks for: its words up to the first preposition or punctuation
ASKED_PHRASE = re.compile(r"^(?:what|which)\s+(?:is|was|are|were|will be)\s+(?:the\s+|an?\s+)?([\w\s'’&/-]+?)\s*"
                          r"(?:\b(?:of|for|in|from|at|on|by|during|as|under|between|to|that|with|and|over|after|"
                          r"before|since|if|when|per|across|within|through|than)\b|[?,(]|$)")
HOW_MANY = re.compile(r"\bhow many\b(?:\s+([a-z]+))?")
YEAR_ON_YEAR = re.compile(r"\s*(?:on|over|to)[\s-]+year\b")


def asked_head(ql: str) -> str:
    """The kind of answer the head of what a question asks for names ("years", "date", "duration"; data:
    vocabulary.yaml ``asked_heads``), or "": "the last fiscal year of expiration" asks a year, though the tax
    words around it read like an amount; "year on year" names no year."""
    m = ASKED_PHRASE.match(ql)
    words = m.group(1).split() if m else []
    if not words or YEAR_ON_YEAR.match(ql[m.end(1):]):
        return ""
    return next((kind for kind, heads in asked_heads().items() if words[-1] in heads), "")


@lru_cache(maxsize=1)
def answer_kinds() -> list[tuple[str, tuple, tuple]]:
    """(kind, what asks for it, what says it is not) of vocabulary.yaml ``answer_kinds``, in order, compiled once
    (a word list's name, ``@amount_nouns``, stands for one of its words)."""
    lists = {f"@{name}": "(" + "|".join(words) + ")" for name, words in word_lists("answer_words").items()}

    def compiled(exprs) -> tuple:
        return tuple(compile_expression(re.sub(r"@\w+", lambda m: lists[m.group(0)], e)) for e in exprs or ())

    return [(e["kind"], compiled(e["asks"]), compiled(e.get("unless"))) for e in vocabulary()["answer_kinds"]]


def asked_kind(ql: str, head: str = "") -> str:
    """The kind of answer a question asks for (amount, percent, count, date, years, duration, reason, table, list),
    read by the first entry of ``answer_kinds`` that matches it, or whose kind the head of what is asked names
    (``asked_head``); "text" (a description) when none does."""
    split = sentences(ql) + tuple(s for part in ql.split(",")[1:] for s in sentences(part)[:1])  # "..., why"
    for kind, asks, unless in answer_kinds():
        if kind == head or (any(e.matches(s) for s in split for e in asks)
                            and not any(e.matches(s) for s in split for e in unless)):
            return kind
    return "text"


@lru_cache(maxsize=1)
def asked_heads() -> dict[str, list[str]]:
    return word_lists("asked_heads")  # checked once: the file is code-side data


def ask_of(question: str) -> Ask:
    q = " ".join(question.strip().split())
    ql = q.lower()
    years = question_years(q)
    drop = {stem(c) for c in CUE_WORDS | FILLER}

    def terms(text: str) -> set[str]:
        return {w for w in key_words(QUESTION_PERIOD.sub(" ", QUESTION_DATE.sub(" ", text)))
                if not YEAR.fullmatch(w) and w not in drop}

    # an aside in parentheses ("(formerly Consumer Health business segment)", "(by top line)") qualifies the
    # question; its words are no terms a sentence must carry
    key = terms(re.sub(r"\([^()]*\)", " ", ql)) or terms(ql)
    multi = bool(re.search(r"\brespectively\b|\beach of\b", ql)) or len(years) >= 2 and bool(
        re.search(r"\b(?:in|for|of|at|during|as of)\b[^?]*\d{4}\s*(?:,|and)\s*\d{4}", ql)) and not re.search(
        r"\b(?:change|differ|increase|decrease|grow|growth|average|total|sum|ratio|between)\b", ql)
    kind = asked_kind(ql, asked_head(ql))
    if kind == "count" and HOW_MANY.search(ql):  # "how many employees": what is counted; "how many years": a duration
        m = HOW_MANY.search(ql)
        noun = m.group(1) or ""
        kind = "duration" if noun in ("years", "months", "days", "weeks") else "count"
        return Ask(kind, years, key, multi, stem(noun) if noun else "", q)
    if kind == "table":
        key = set()  # what the table shows is said by "the following table shows ..." or a caption ("... as follows:")
    if kind in ("amount", "list") and not years and re.match(r"^what (?:is|are) (?!the (?:total|amount|value|number)\b)"
                                                             r"(?:an? |the )?[\w\s'’-]{2,60}\?$", ql) \
            and not re.search(r"\b(?:of|in|for|at|as of|during|from)\b", ql):
        kind = "text"  # "What is Audit Fees?": a definition
    if kind in ("amount", "percent", "list") and ANCHOR.search(ql.rstrip()):
        kind = "text"  # "What are the costs primarily related to?": read after the anchor
    return Ask(kind, years, key, multi, question=q)


def _strip(span: str) -> str:
    return span.strip().strip(",;:").rstrip(".").strip()


def amounts(sentence: str, percent: bool | None = None) -> list[re.Match]:
    """Figures of a sentence (not years, not day-of-month, not note numbers)."""
    out = []
    for m in AMOUNT.finditer(sentence):
        t = m.group(0).strip()
        bare = re.sub(r"[()\-\s]", "", t)
        if YEAR.fullmatch(bare):
            continue  # a year
        if re.fullmatch(r"\(\d{1,2}\)|\d{1,2}\)", t):
            continue  # a footnote or item marker: "(2)"
        if re.search(rf"{MONTH}\s*$", sentence[:m.start()]) or re.match(r"\s*,?\s*(?:19|20)\d{2}", sentence[m.end():]) \
                and re.fullmatch(r"\d{1,2}", bare):
            continue  # the day of a date
        if re.fullmatch(r"\d{1,2}", bare) and re.match(rf"\s*(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH}", sentence[m.end():]):
            continue  # "31 December 2019"
        if re.search(r"(?:note|notes|item|section|page|level|tier|phase|ias|ifrs|asc|topic)\s*$", sentence[:m.start()], re.I):
            continue
        is_pct = bool(re.search(r"%|percent|per cent|basis points|bps", t, re.I))
        if percent is not None and is_pct != percent:
            continue
        out.append(m)
    return out


def _near(sentence: str, pos: int, words: set[str]) -> float:
    """How close ``pos`` is to the question's words in ``sentence`` (1 beside one, falling with distance)."""
    best = 0.0
    for w in re.finditer(r"[A-Za-z]+", sentence):
        if stem(w.group(0).lower()) in words:
            best = max(best, 1.0 / (1.0 + abs(w.start() - pos) / 40.0))
    return best


def _key_share(text: str, words: set[str]) -> float:
    return len(content_words(text) & words) / len(words) if words else 0.0


YEAR_AFTER = re.compile(r"^\s*(?:for|in|during|at|as of|of|from)?\s*(?:the\s+)?(?:fiscal\s+)?(?:years?|quarters?|"
                        r"periods?|months?|financial year|full year)?\s*(?:ended|ending)?\s*(?:[A-Z][a-z]+\.?\s+\d{1,2},?\s*|"
                        r"\d{1,2}\s+[A-Z][a-z]+\s+)?(?:fiscal\s+|fy\s*)?$", re.I)
YEAR_BEFORE = re.compile(r"^\s*(?:[:)]|,)?\s*(?:was|were|is|of|totall?ed|amounted to|were approximately|"
                         r"was approximately)?\s*$", re.I)


def attached_year(sentence: str, found: list[re.Match], i: int) -> str | None:
    """The year a figure is stated for: "$2.5 million for the year ended December 31, 2019" or
    "(December 31, 2018: $169)"; None when the sentence does not tie one to it."""
    m = found[i]
    nxt = found[i + 1].start() if i + 1 < len(found) else len(sentence)
    for y in YEAR.finditer(sentence, m.end(), nxt):
        if YEAR_AFTER.match(sentence[m.end():y.start()]):
            return y.group(0)
        break
    prev = found[i - 1].end() if i else 0
    ys = list(YEAR.finditer(sentence, prev, m.start()))
    if ys and YEAR_BEFORE.match(sentence[ys[-1].end():m.start()]):
        return ys[-1].group(0)
    return None


SERIES = re.compile(r"(?:19|20)\d{2}(?:\s*(?:,|and|,\s*and)\s*(?:(?:fiscal\s+)?(?:19|20)\d{2}))+")


def year_series(sentence: str) -> list[str]:
    """The years a "respectively" sentence lists, in order ("2019, 2018 and 2017")."""
    m = SERIES.search(sentence)
    return [y.group(0) for y in YEAR.finditer(m.group(0))] if m else []


COUNT_WORDS = number_word_pattern(2, 100)  # "three segments" ("one" is as often a pronoun)


def pick_figure(ask: Ask, sentence: str, percent: bool | None, money: bool = True) -> list[str]:
    """The figure(s) answering ``ask`` in ``sentence``: aligned with the question's years where the sentence
    lists values by year, else the figure nearest the question's words (and its year)."""
    asked = {re.sub(r"[^\d.]", "", f) for f in re.findall(r"\d[\d,]*(?:\.\d+)?", ask.question)}
    found = [m for m in amounts(sentence, percent) if re.sub(r"[^\d.]", "", m.group(0)) not in asked
             and (money or not re.match(r"[$€£¥₹]|US\$|RMB|INR|EUR|USD|GBP", m.group(0).strip().lstrip("(-")))]
    if not found:
        return []
    series = year_series(sentence)
    values = [_clean(m.group(0)) for m in found]
    if ask.years and series and re.search(r"respectively", sentence, re.I) and len(values) >= len(series):
        at = SERIES.search(sentence).start()  # the values listed just before the years, else just after them
        before = [v for v, m in zip(values, found) if m.end() <= at]
        vals = before[-len(series):] if len(before) >= len(series) else values[:len(series)]
        picked = [vals[series.index(y)] for y in ask.years if y in series]
        if picked:
            return picked if ask.multi else picked[:1]
    scored = []
    for i, m in enumerate(found):
        left = sentence[found[i - 1].end() if i else 0: m.start()]
        left = re.split(r",\s+(?=(?:of which|while|whereas|compared|and|but|which|as|with)\b)|;", left)[-1]
        aside = "(" in left and ")" not in left[left.rindex("("):]
        if aside:  # "(including $0.7 million of issuance costs)": an aside to the figure before it
            left = left[left.rindex("(") + 1:]
        right = sentence[m.end(): found[i + 1].start() if i + 1 < len(found) else len(sentence)].split("(")[0]
        # the subject before the figure ("costs were $9.5 million") or after it ("$54.5 million of debt")
        s = max(_key_share(left, ask.key), 0.8 * _key_share(right, ask.key)) - 0.2 * aside
        year = attached_year(sentence, found, i) if ask.years else None
        if year is not None:
            s += 1.0 if year in ask.years else -1.0
        if percent is False and re.match(r"[$€£¥₹]|US\$|RMB|INR|EUR|USD|GBP", m.group(0).strip().lstrip("(-")):
            s += 0.3  # an amount question: money first
        if re.search(r"(?:million|billion|thousand|bn|mn)\b", m.group(0), re.I):
            s += 0.1
        scored.append((s, -m.start(), m))
    scored.sort(key=lambda x: (x[0], x[1]), reverse=True)
    best = scored[0][2]
    out = [_with_qualifier(sentence, best)]
    if ask.multi and len(ask.years) >= 2:
        others = sorted((m for _, _, m in scored[1:len(ask.years)]), key=lambda m: m.start())
        out = sorted([best] + others, key=lambda m: m.start())
        out = [_clean(m.group(0)) for m in out]
    return out


def _clean(span: str) -> str:
    """A figure without an unbalanced parenthesis: "(53%" -> "53%", "(1,234)" kept (a negative)."""
    span = span.strip()
    if span.startswith("(") and not span.endswith(")"):
        span = span[1:]
    if span.endswith(")") and "(" not in span:
        span = span[:-1]
    return span.strip()


def _with_qualifier(sentence: str, m: re.Match) -> str:
    q = QUALIFIER.search(sentence[:m.start()])
    span = _clean(m.group(0))
    return (q.group(0) + span) if q else span


def extract(ask: Ask, sentence: str) -> str | None:
    """The span of ``sentence`` answering ``ask`` (verbatim pieces; several joined with " and "), or None."""
    s = sentence
    if ask.kind in ("amount", "percent"):
        vals = pick_figure(ask, s, True if ask.kind == "percent" else False)
        if not vals and ask.kind == "percent":
            vals = pick_figure(ask, s, None)
        return " and ".join(vals) if vals else None
    if ask.kind == "count":
        vals = pick_figure(ask, s, False, money=False)
        if not vals:
            m = re.search(rf"\b({COUNT_WORDS})\s+(?:[a-z-]+\s+)?([a-z-]+)", s, re.I)
            return m.group(1) if m and ask.count_noun and stem(m.group(2).lower()) == ask.count_noun else None
        if ask.multi:
            return " and ".join(vals)
        m = re.search(re.escape(vals[0]) + r"\s+([A-Za-z-]+)", s)
        noun = m.group(1) if m and ask.count_noun and stem(m.group(1).lower()) == ask.count_noun else ""
        return (vals[0] + (" " + noun if noun else "")).strip()
    if ask.kind == "date":
        for rx in DATES:
            hits = [m for m in rx.finditer(s) if m.group(0) not in ask.years and not any(
                m.group(0) in y or y == m.group(0) for y in ask.years)]
            if hits:
                best = max(hits, key=lambda m: _near(s, m.start(), ask.key))
                return best.group(0).strip()
        return None
    if ask.kind == "years":
        ys = [y for y in dict.fromkeys(m.group(0) for m in YEAR.finditer(s))]
        return (" and ".join(ys) if ask.multi or re.search(r"\byears\b", ask.question.lower()) else ys[0]) if ys else None
    if ask.kind == "duration":
        hits = list(DURATION.finditer(s))
        if not hits:
            return None
        best = max(hits, key=lambda m: _near(s, m.start(), ask.key))
        return _with_qualifier(s, best)
    if ask.kind == "reason":
        m = None
        for c in CAUSE.finditer(s):
            if not c.group(0).lower().startswith("to "):
                m = c
                break
        return _strip(s)  # the whole sentence: annotators and readers take the reason with its subject
    if ask.kind == "list":
        items = list_items(ask, s)
        return ", ".join(items[:-1]) + " and " + items[-1] if len(items) >= 2 else _strip(s)
    if ask.kind == "table":
        m = TABLE_LEAD.search(s)
        if m:
            return _strip(s[m.end():])
        m = re.match(r"^(?:the\s+)?(.{8,}?)\s+(?:is|are|was|were)\s+(?:summari[sz]ed\s+|presented\s+|shown\s+)?"
                     r"(?:as\s+follows|below)\b", s, re.I)
        if m:
            return _strip(m.group(1))
        return _strip(s) if s.rstrip().endswith(":") else None  # a caption: "Cash provided by ... 2017:"
    return after_anchor(ask, s) or _strip(s)


TABLE_LEAD = re.compile(r"\b(?:the )?(?:following |above |below )?tables?\b[^.;]{0,40}?\b(?:shows?|sets? (?:forth|out)|"
                        r"presents?|provides?|summari[sz]es?|illustrates?|reflects?|contains?|details?|displays?|"
                        r"discloses?|includes?|represents?|lists?)[\s,]+(?:the\s+(?:following|components|details)\s+of\s+)?",
                        re.I)
ANCHOR = re.compile(r"\b([a-z]{3,}(?:ed|en|es|s)?)\s+(to|with|by|as|from|into|for|on|in)\s*\??$")
CLAUSE_END = re.compile(r";|,\s+(?:while|whereas|but|therefore|however)\b|\.\s")


def after_anchor(ask: Ask, sentence: str) -> str | None:
    """For "What is the company's involvement limited to?" / "Who approved the statements?": the words after
    the question's closing verb and preposition in the sentence ("limited to ...", "approved by ..."), up to
    the end of that clause; None when the sentence does not have that wording."""
    q = ask.question.lower().strip()
    m = ANCHOR.search(q)
    if m:
        verb, prep = m.group(1), m.group(2)
    else:
        w = re.match(r"^who\s+(?:has\s+|have\s+|had\s+)?([a-z]{3,}ed)\b", q)
        if not w:
            return None
        verb, prep = w.group(1), "by"
    hit = re.search(rf"\b{re.escape(stem(verb))}[a-z]*\s+{prep}\s+", sentence, re.I)
    if not hit:
        return None
    tail = sentence[hit.end():] if prep == "by" else sentence[hit.end() - len(prep) - 1:]
    tail = CLAUSE_END.split(tail, maxsplit=1)[0]
    if prep == "by":
        tail = re.split(r"\s+(?:on|in|at|during)\s+(?:\d|[A-Z][a-z]+ \d)|\s+and\s+(?=[a-z]+ed\b)", tail, maxsplit=1)[0]
    tail = _strip(tail)
    return tail if len(tail.split()) >= 1 else None


def list_items(ask: Ask, sentence: str) -> list[str]:
    """Items listed after the question's subject ("... include A, B and C"), verbatim, or []."""
    leads = [m for m in LIST_LEAD.finditer(sentence) if _near(sentence, m.start(), ask.key) > 0.2]
    if not leads:
        return []
    tail = sentence[leads[0].end():]
    tail = re.split(r"(?<=\w)[.;](?:\s|$)|\s+(?:which|that|who|where)\s+|\s*\(", tail, maxsplit=1)[0]
    items = [_strip(i) for i in ITEM_SPLIT.split(tail) if i and len(_strip(i)) >= 2]
    items = [re.sub(r"^(?:the|a|an|our|its|their)\s+", "", i, flags=re.I) for i in items]
    return items if 2 <= len(items) <= 8 and all(len(i.split()) <= 8 for i in items) else []
