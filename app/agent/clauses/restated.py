"""A value a contract states in more than one place: a date answer read off one sentence (the preamble's "dated as
of April 13, 2012") is contradicted when another sentence of the same contract states the value asked otherwise
("The term of this Agreement shall commence on the first day of the Warranty Period", "“Commencement Date” means
16 October 2005").

The phrases that state a value are data: a clause kind's ``stated_by`` (``app/data/clause_kinds.yaml``). They
apply to a question that speaks of them ("on what date does this agreement become effective?"), not to one that
asks for the kind's own value only ("what is the date of this agreement?"). A sentence states the value when it
holds such a phrase in plain words with the contract or its term as the subject ("The term of this Agreement
shall commence"), or as a term being defined ("(the “Effective Date”)", "... means"); a sentence that uses the
term as a reference ("commence on the Effective Date"), points back to the contract's own date or signing
("effective as of the date first written above", "upon execution"), or is a blank form states nothing new. The
verifier gates an answer whose date a statement contradicts (``app.agent.verifier``).
"""
from __future__ import annotations

import re

from app.agent.clauses.definitions import CROSS_REFERENCE, defined_at
from app.agent.clauses.taxonomy import ClauseKind, stems
from app.agent.text import flat, sentences
from app.agent.verify import DATE, start_date
from app.agent.vocabulary import phrase_pattern, word_lists

_ROLES = word_lists("date_roles", ("this_document", "subjects", "subordinators"))
_THIS_DATE = re.compile(phrase_pattern(_ROLES["this_document"]), re.I)
_CONTRACT = re.compile(phrase_pattern(_ROLES["subjects"], plural=True), re.I)
_QUOTE_CLOSE = re.compile(r"\s*[\"“”']?\s*")
_SUBORDINATE = re.compile(rf"{phrase_pattern(_ROLES['subordinators'])}\s+(?:this|the|such)?\s*$", re.I)
_OF_BEFORE = re.compile(r"\bof\s+(?:this|the|such|that)?\s*$", re.I)
_OF_AFTER = re.compile(r"^\s*of\b", re.I)  # "the effective date of such termination": another thing's date
_BLANK = re.compile(r"_{3,}|,\s*,|\[\s*\]")  # a form left blank states nothing
# what a contract calls itself: its title's words before "Agreement" ("This Promotion shall begin on June 1") and
# a one-word short name its opening defines ('(the "JSMA")')
_TITLE = re.compile(r"((?:[A-Z][\w&'-]*\s+){1,3})(?:AGREEMENT|Agreement|CONTRACT|Contract)\b")
_SHORT_NAME = re.compile(r"\(\s*(?:(?:herein|hereinafter)\s+(?:referred\s+to\s+as\s+)?)?(?:the\s+)?[\"\u201c]"
                         r"([A-Z][\w-]{1,24})[\"\u201d]\s*\)")
OPENING = 1500  # the characters of a contract's opening that name it
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def asked_phrases(kind: ClauseKind | None, question: str) -> tuple[str, ...]:
    """The kind's ``stated_by`` phrases when the question speaks of them (a word of theirs that is not a word of
    the kind's name: "effective" of "become effective" for the kind "agreement date"), else ()."""
    if kind is None or not kind.stated_by:
        return ()
    own = set(stems(kind.name))
    words = {w for p in kind.stated_by for w in stems(p)} - own
    return kind.stated_by if words & set(stems(question)) else ()


def _is_term(text: str) -> bool:
    return all(w[:1].isupper() for w in text.split())


def _states(sentence: str, pattern: re.Pattern, names: re.Pattern | None = None) -> bool:
    """The sentence states the value: a term being defined ("(the “Effective Date”)", "“Commencement Date”
    means"), or a phrase in plain words whose subject is the contract or its term ("The term of this Agreement
    shall commence on ..."; not "The Parties shall commence performance"), and no term used as a reference."""
    stated = defined = used = False
    for m in pattern.finditer(sentence):
        before, after = sentence[:m.start()], sentence[m.end():]
        if _is_term(m.group(0)):
            if CROSS_REFERENCE.match(after, _QUOTE_CLOSE.match(after).end()):
                return False  # "“Effective Date” has the meaning set forth in Section 3.1": stated there
            if defined_at(sentence, m.start(), m.end()):
                defined = True
            else:
                used = True  # "shall commence on the Effective Date": the term used, not stated
        elif not _OF_AFTER.search(after) and _subject_before(before, names):
            stated = True
    return defined or (stated and not used)


def own_names(opening: str) -> re.Pattern | None:
    """"this" and a word the contract calls itself by in its ``opening``: the words of its title before
    "Agreement" ("Promotion" of "Promotion Agreement"), a one-word short name it defines ("JSMA"); None if none."""
    words = {w for m in _TITLE.finditer(opening) for w in m.group(1).split()} | set(_SHORT_NAME.findall(opening))
    words = {w for w in words if stems(w)}  # "This", "THE": no name
    return re.compile(rf"\bthis\s+{phrase_pattern(sorted(words))}", re.I) if words else None


def _subject_before(before: str, names: re.Pattern | None = None) -> bool:
    """The contract or its term is the subject of the phrase that follows ``before``: a subject word (or "this"
    and one of the contract's ``names``) at most two words before it, and not the object of another noun ("No
    assignment of this Agreement shall be effective"; "The term of this Agreement shall commence" is its term)."""
    subjects = sorted(list(_CONTRACT.finditer(before)) + (list(names.finditer(before)) if names else []),
                      key=lambda m: m.end())
    if not subjects:
        return False
    last = subjects[-1]
    if len(re.findall(r"[A-Za-z]+", before[last.end():])) > 2:
        return False
    head = before[:last.start()]
    if _SUBORDINATE.search(head):  # "... disclosed before this Agreement commences": not what it states
        return False
    of = _OF_BEFORE.search(head)
    if of:  # "the term of this Agreement": the noun before "of" is the subject
        noun = re.search(r"([A-Za-z]+)\W*$", head[:of.start()])
        return bool(noun and _CONTRACT.fullmatch(noun.group(1)))
    return True


def statements(phrases: tuple[str, ...], texts: list[str]) -> list[tuple[str, str]]:
    """(sentence, the date it states or "" for an event) for each sentence of ``texts`` that states the value."""
    if not phrases:
        return []
    pattern = re.compile(phrase_pattern(phrases, plural=True), re.I)
    opening = ""
    for text in texts:  # the documents' first passages, as far as the opening reaches
        opening = f"{opening} {text}"
        if len(opening) >= OPENING:
            break
    names = own_names(flat(opening)[:OPENING])
    out = []
    for text in texts:
        for s in sentences(flat(text)):
            if pattern.search(s) and _states(s, pattern, names) and not _THIS_DATE.search(s) and not _BLANK.search(s):
                m = DATE.search(s)
                out.append((s, start_date(s) or (m.group(0) if m else "")))
    return out


def date_key(text: str) -> tuple:
    """(year, month, day) of a date as contracts print it ("the 15th day of January 2018", "1/15/2018")."""
    low = text.lower()
    year = re.search(r"\b(1[89]\d\d|20\d\d)\b", low)
    month = next((i + 1 for i, m in enumerate(_MONTHS) if re.search(rf"\b{m}", low)), None)
    nums = [int(n) for n in re.findall(r"\b(\d{1,2})(?:st|nd|rd|th)?\b", low)]
    if month is None and len(nums) >= 2:  # 1/15/2018
        month, nums = nums[0], nums[1:]
    return (int(year.group(1)) if year else None, month, nums[0] if nums else None)


def contradiction(answer_date: str, quote: str, stated: list[tuple[str, str]]) -> str:
    """The first statement, outside ``quote``, whose date differs from ``answer_date`` or that states an event;
    "" when none does."""
    here, want = flat(quote), date_key(answer_date)
    for sentence, when in stated:
        if sentence in here or here in sentence:
            continue
        if not when or date_key(when) != want:
            return sentence
    return ""
