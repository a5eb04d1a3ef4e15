"""The verifier: an answer is ``supported`` only when its cited span answers the question.

Two checks, both over the cited text:
1. the span contains what the question asks for: a jurisdiction for governing law, a duration (or a date) for
   a term or renewal, an amount (or a fee-based limit) for a liability cap, two or more parties for parties, a
   date for an agreement date, and the clause type's own wording (consent language for anti-assignment, "change
   of control"/merger for change of control, ...); a question of no known type must share its content words
   with the span;
2. every figure and every name (capitalised words) the answer states occurs in its cited span.
"""
from __future__ import annotations

import re

from app.agent.bi.question import operations_unstated
from app.agent.text import content_words, flat, number_word_pattern
from app.agent.text_terms import key_words
from app.agent.vocabulary import phrase_pattern, word_lists

MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
        r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
NUMWORD = rf"(?:{number_word_pattern()}|\d+)"
DATE = re.compile(
    rf"\b{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,\s*|\s+)\d{{4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?{MONTH},?\s+\d{{4}}\b"
    rf"|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\bday of\s+{MONTH},?\s+(?:\d{{4}}|\[)", re.I)
DURATION = re.compile(rf"\b{NUMWORD}(?:\s*\(\d+\))?[\s-]+(?:calendar\s+|business\s+|consecutive\s+|full\s+)?"
                      rf"(?:day|week|month|year|anniversar)|\bperpetu|\bindefinite|\bannual(?:ly)?\b|\byear[\s-]to[\s-]year\b"
                      rf"|\bsuccessive\b|\buntil\b.{{0,60}}\b(?:terminat|expir)", re.I)
AMOUNT = re.compile(r"(?:\$|usd|us\$|eur|€|£|gbp)\s?\d|\d[\d,.]*\s*(?:dollars|usd|euros?)\b|\b(?:fees?|amounts?|"
                    r"compensation|royalt\w+|sums?|price)\b.{0,40}\b(?:paid|payable|received)|\bdollars\b", re.I)
JURISDICTION = re.compile(r"\b(?i:laws?)\s+(?i:in\s+force\s+in|of)\s+(?i:the\s+)?(?i:state\s+of\s+|commonwealth\s+of\s+|province\s+of\s+|"
                          r"republic\s+of\s+|kingdom\s+of\s+)?[A-Z][A-Za-z]+(?:\s+[A-Z][a-z]+)?|\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+law\b"
                          r"|\blaws?\s+(?:in\s+force\s+)?in\s+[A-Z][a-z]+")
_NAMES = word_lists("entity_names", ("suffixes", "determiners"))  # data: app/data/vocabulary.yaml
ENTITY = re.compile(rf"{phrase_pattern(_NAMES['suffixes'])}\.?", re.I)
# an entity named: a capitalised name before the entity word ("Kiromic, Inc."), not a defined role ("the Company")
NAMED_ENTITY = re.compile(rf"\b(?!(?i:{phrase_pattern(_NAMES['determiners'])})\b)[A-Z][\w&'’.-]*,?\s+"
                          rf"(?i:{ENTITY.pattern})")
# a start cue, then a date within 60 characters of the same sentence, no end word between ("in effect until <date>")
_END = phrase_pattern(word_lists("date_roles", ("end",))["end"])  # data: app/data/vocabulary.yaml
_END_BEFORE = re.compile(rf"{_END}(?:(?!{_END})[^.;])*$", re.I)
_ROLES = word_lists("date_roles", ("start", "other_documents", "other_articles", "other_document_links",
                                   "other_document_ids"))
_START_CUE = phrase_pattern(_ROLES["start"])
AGREEMENT_DATE = re.compile(rf"{_START_CUE}(?:(?!{_END})[^.;]){{0,60}}?(?P<date>{DATE.pattern})", re.I)
# "... to the Supply and Manufacturing Agreement <dated April 1, 2017>": the date of another document
_OTHER_DOC_BEFORE = re.compile(rf"{phrase_pattern(_ROLES['other_articles'])}\s+(?:[\w&'’().-]+\s+){{0,6}}?"
                               rf"{phrase_pattern(_ROLES['other_documents'], plural=True)}\s*,?\s*"
                               r"(?:\([^()]{1,40}\)\s*,?\s*)?"  # its short name: 'request for information ("RFI")'
                               rf"(?:{phrase_pattern(_ROLES['other_document_ids'])}\s*[\w./#-]*\d[\w./#-]*\s*,?\s*)?"
                               rf"(?:{phrase_pattern(_ROLES['other_document_links'])}\s+(?:an?|the|its)\s+)?$", re.I)


def own_dates(text: str) -> list[str]:
    """The dates ``text`` gives as when this document was made, signed or took effect: a start cue, no end word
    between, and not right after another document's name ("the Supply Agreement dated ...")."""
    out = []
    for m in AGREEMENT_DATE.finditer(text):
        # the cue nearest the date speaks of it: "entered into a Non-Competition Agreement dated ..." is the other's
        cue = m.start() + [c.start() for c in re.finditer(_START_CUE, text[m.start():m.start("date")], re.I)][-1]
        if not _OTHER_DOC_BEFORE.search(text[max(0, cue - 120):cue]):
            out.append(m.group("date"))
    return out
# a definition ("Change of Control" means ...) names a clause kind without being the clause
DEFINITION = re.compile(r"^\W*(\(?[a-z0-9]{1,4}[.)]\s*)?[\"“][^\"”]{1,60}[\"”]\s*(shall )?"
                        r"(mean|means|has the meaning|refers)\b", re.I)
FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
NAME = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)+\b")  # two+ capitalised words: a name


HEADING_LEAD = re.compile(r"^\s*(?:(?:section|article|clause)\s+)?[\dIVX]+(?:\.\d+)*\.?\s+(?:[A-Z][\w&/-]*\s*){1,6}[.:]\s+")


def _norm_ws(text: str) -> str:
    return flat(text).strip().lower()


def start_date(span: str) -> str:
    """The date ``span`` gives as when something was made, signed or took effect ("dated as of April 13, 2012"),
    not one it runs until; "" when it states none."""
    text = flat(span)
    own = own_dates(text)
    if own or AGREEMENT_DATE.search(text):  # dates with a cue decide: none of them this document's, none
        return own[0] if own else ""
    for d in DATE.finditer(text):  # no cue: the first date no end word nor other document comes just before
        before = text[max(0, d.start() - 120):d.start()]
        if not _END_BEFORE.search(before[-40:]) and not _OTHER_DOC_BEFORE.search(before):
            return d.group(0)
    return ""


def has_slot(slot: str, span: str) -> bool:
    span = flat(span)
    if slot == "jurisdiction":
        return bool(JURISDICTION.search(span))
    if slot == "duration":
        return bool(DURATION.search(span) or DATE.search(span))
    if slot == "amount":
        return bool(AMOUNT.search(span) or FIGURE.search(span))
    if slot == "date":
        return bool(own_dates(span))
    if slot == "parties":
        between = re.search(r"\b(between|among|entered into|by and)\b.{3,}\band\b", span, re.I | re.S)
        entities = len(NAMED_ENTITY.findall(span))
        roles = len(re.findall(r"[\"“][A-Z][^\"”]{1,40}[\"”]", span))
        return bool(between) and (entities >= 2 or (entities >= 1 and roles >= 1) or roles >= 2)
    return True


def span_answers(kind, question: str, span: str, heading: str = "") -> tuple[bool, str]:
    """(accepted, reason): does ``span`` state the clause of ``kind`` (a taxonomy ``ClauseKind``) and what its
    answer must state? A question of no known kind (None) must share its content words with the span.
    ``heading``: the headings the span stands under; a question about one provision of a clause ("how long do
    confidentiality obligations survive?") is answered by the sentence that states that provision under the
    clause's heading, though it does not repeat the clause's own wording (``ClauseKind.states_provision``)."""
    if not span.strip():
        return False, "empty span"
    if kind is None:
        return _shares_words(question, span)
    span = flat(span)
    body = HEADING_LEAD.sub("", span, count=1)
    if kind.slot not in ("parties", "date") and DEFINITION.search(body):
        return False, "a definition, not the clause"
    if not kind.states:  # a kind that says not how a clause states it (a playbook's): the question's words
        ok, why = _shares_words(question, span)
        if not ok or not kind.states_clause(span):  # what it says is not this clause still counts
            return False, why if not ok else f"not a {kind.name} clause"
    slot_stated = has_slot(kind.slot, span)
    if kind.states and not kind.states_clause(span) and not (kind.slot in ("date", "parties") and slot_stated) \
            and not (heading and kind.states_provision(question, span, heading)):
        return False, f"no {kind.name} wording"  # the opening of a contract states its date and parties many ways
    if not slot_stated:
        return False, f"no {kind.slot} stated"
    return True, "ok"


def _shares_words(question: str, span: str) -> tuple[bool, str]:
    q = content_words(question)
    shared = q & content_words(span)
    need = 1 if len(q) <= 2 else 2
    return len(shared) >= need, f"{len(shared)} of the question's content words"


def answer_in_span(answer: str, spans: list[str]) -> tuple[bool, list[str]]:
    """Every figure and capitalised name of ``answer`` occurs in one of ``spans`` (whitespace/case folded)."""
    joined = _norm_ws(" ".join(spans))
    figures = {f.replace(",", "").rstrip(".") for s in spans for f in FIGURE.findall(s)}
    missing = [f for f in FIGURE.findall(answer) if f.replace(",", "").rstrip(".") not in figures]
    missing += [n for n in NAME.findall(answer) if _norm_ws(n) not in joined]
    return not missing, missing


def verify(kind, question: str, answer: str, spans: list[str], heading: str = "") -> tuple[bool, str]:
    """The verdict on an answer resting on ``spans`` (quotes verbatim from the documents); ``kind``: the
    taxonomy's ``ClauseKind`` the question asks about, or None; ``heading``: the headings the spans stand under."""
    if not spans:
        return False, "no cited span"
    ok, why = span_answers(kind, question, " ".join(spans), heading)
    if not ok:
        return False, why
    ok, missing = answer_in_span(answer, spans)
    if not ok:
        return False, f"not in the cited text: {', '.join(missing[:5])}"
    return True, "ok"


TOKEN = re.compile(r"[a-z0-9]+")
FIGURE_KINDS = ("amount", "percent", "count")


def verify_text(ask, question: str, span: str, quote: str, weights: dict[str, float] | None = None,
                min_coverage: float = 0.5) -> tuple[bool, str]:
    """The verdict on an extracted answer ``span`` to a question over report text (``ask``: its
    ``text_spans.Ask``), resting on the sentence ``quote``:
    1. the span's words, figures and names occur in the quote;
    2. the quote carries the question's key terms (at least ``min_coverage`` of their IDF weight, and two of
       them when the question has two or more);
    3. a figure question asking for a computation (a % change, an average, a change, a sum: the operation words
       of vocabulary.yaml) is answered only by a quote that states that result, not by a figure that is merely an
       input;
    4. a figure asked for a year stands in a sentence that names that year; a sentence naming only other
       years answers another period."""
    if not span.strip() or not quote.strip():
        return False, "empty span"
    qtok = set(TOKEN.findall(_norm_ws(quote)))
    missing = [t for t in TOKEN.findall(span.lower()) if t not in qtok and t != "and"]
    if missing:
        return False, f"not in the quote: {', '.join(missing[:5])}"
    ok, missing = answer_in_span(span, [quote])
    if not ok:
        return False, f"not in the quote: {', '.join(missing[:5])}"
    key, words = ask.key, key_words(quote)
    shared = key & words
    weights = weights or {}
    total = sum(weights.get(k, 1.0) for k in key)
    cov = sum(weights.get(k, 1.0) for k in shared) / total if total else 0.0
    if key and (len(shared) < min(2, len(key)) or cov < min_coverage):
        return False, f"{len(shared)} of {len(key)} key terms of the question"
    # an average, a change, a sum, a percentage change, named by its word; a figure is asked ("what led to the
    # increase?" asks for a reason, no computation)
    if ask.kind in FIGURE_KINDS and operations_unstated(question, quote):
        return False, "asks for a computation the quote does not state"
    if ask.years:
        named = set(re.findall(r"(?<!\d)(?:19|20)\d{2}(?!\d)", quote))
        if not named & set(ask.years) and (named or ask.kind in FIGURE_KINDS):
            return False, "not the period asked"
    return True, "ok"


def verify_generated(question: str, draft: str, quotes: list[str], min_grounded: float = 0.8) -> tuple[bool, str]:
    """The verdict on a model-written answer: the general check (``verify``) and, since a small model echoes
    prompt scaffolding or paraphrases loosely, most of its content words (``min_grounded``) must be words of
    the cited sentences, and it must say something beyond the question's own words."""
    ok, why = verify(None, question, draft, quotes)
    if not ok:
        return False, why
    words = content_words(draft, drop_generic=False) - content_words(question, drop_generic=False)
    if len(words) < 2:
        return False, "says nothing beyond the question"
    known = content_words(" ".join(quotes), drop_generic=False)
    share = len(words & known) / len(words)
    if share < min_grounded:
        return False, f"only {share:.0%} of its words are in the cited text"
    return True, "ok"
