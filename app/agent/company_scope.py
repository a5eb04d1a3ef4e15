"""Companies a question names ("What is 3M's FY2018 capex?", "... inventories for Best Buy?", "... of JnJ")
and which documents are about them.

A mention is matched against each document's profile (file name + opening pages, read at ingest and stored
with the document: ``ingest.facts``, ``kbt.facts()``): the cover page of a filing names its company. A question that names a company no document in scope is about is
answered "not in the documents" (``scope.Scope.not_in_documents``); it is never answered from another company's table or text.

Mentions are read conservatively, because a false "not in the documents" hides a real answer:
- a capitalised possessive ("Adobe's", "Best Buy's", "AMCOR's"), not a generic one ("the Company's",
  "Board's"): a company by itself;
- a capitalised name after "for / of / did / does / at / to" ("for Microsoft", "did Costco have", "of JnJ")
  that is not a financial term (COGS, EBITDA, FY2019, Q2) and occurs nowhere in the documents in scope
  (a segment or product name such as "Software" is in the text).

Among the named company's documents, a question naming a period or a form ("Q2 of FY2024", "FY2023", "the
8-K dated ...") keeps only the filing that covers it (``filing_scope.narrow``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from app.agent.filing_scope import ask_of, narrow
from app.agent.vocabulary import auxiliaries, phrase_pattern, word_lists
from ingest.facts.profile import name_words

NAME = r"(?:[A-Z0-9][\w.&-]*|&)"
POSSESSIVE = re.compile(rf"(?<![\w'’])((?:{NAME}\s+){{0,3}}{NAME})['’]s?(?=\s|$|[,;:?.)])")
# the words read in a name are data (app/data/vocabulary.yaml `company_mentions`)
_WORDS = word_lists("company_mentions", ("generic", "terms", "question_words", "legal", "prepositions"))
_PREPOSITIONS = phrase_pattern(_WORDS["prepositions"], hyphens=False)  # "for Microsoft", "did Costco have"
PREPOSITIONAL = re.compile(rf"(?i:{_PREPOSITIONS})\s+({NAME}(?:\s+{NAME}){{0,3}})")
GENERIC = {w.lower() for w in _WORDS["generic"]}  # speak of a company without naming one ("the Company's", "Here's")
TERMS = {w.lower() for w in _WORDS["terms"]}  # financial terms and units written in capitals: never a company
DIGITS = re.compile(r"\d")
QUESTION_WORDS = tuple(w.lower() for w in _WORDS["question_words"])  # and the auxiliaries ("Has X's ...")


def _tokens(name: str) -> list[str]:
    return name_words(name)


def _is_term(tok: str) -> bool:
    """A financial term, a period ("fy2019", "q2", "2023") or a plain number: not a name ("3m" is one)."""
    return (tok in TERMS or bool(re.fullmatch(r"(?:fy|cy|q[1-4]|h[12])?\W?(?:\d{2,4}(?:[-/]\d{2,4})?)?", tok))
            or bool(re.fullmatch(r"[\d,.%$-]+|\d+-?[kq]", tok)))


@dataclass
class Mention:
    text: str
    tokens: list[str]  # the name words that identify it
    possessive: bool


def mentions(question: str) -> list[Mention]:
    """Company-like names in ``question`` (see the module doc)."""
    out: list[Mention] = []
    seen: set[tuple] = set()

    def add(text: str, possessive: bool) -> None:
        toks = [t for t in _tokens(text) if t not in GENERIC]
        while toks and _is_term(toks[-1]):  # "Microsoft FY2016": the name is before the term
            toks.pop()
        while toks and _is_term(toks[0]):  # "FY2016 Microsoft"
            toks.pop(0)
        if not toks or any(_is_term(t) for t in toks) or key(toks) in seen:
            return
        seen.add(key(toks))
        out.append(Mention(text.strip(), toks, possessive))

    def key(toks):
        return tuple(toks)

    for m in POSSESSIVE.finditer(question):
        before = question[:m.start()].split()
        if before and before[-1].lower() in ("the", "its", "our", "their", "this", "that", "a", "an"):
            continue  # "the Company's", "the Group's"
        words = m.group(1).split()
        # sentence-initial question words are not part of the name ("What Amazon's" never occurs, but "Is X's")
        while words and (words[0].lower() in QUESTION_WORDS or words[0].lower() in auxiliaries()):
            words = words[1:]
        if words:
            add(" ".join(words), True)
    for m in PREPOSITIONAL.finditer(question):
        words = m.group(1).split()
        if words and not re.search(r"['’]s?$", words[-1]):  # possessives were read above
            add(" ".join(words), False)
    return out


def without_companies(question: str, names: list[str]) -> str:
    """``question`` without the company ``names`` (those a document is about: "inventories for Best Buy" ->
    "inventories"): the names pick the documents, the rest names the line items ("for Appliances" stays)."""
    out = question
    for m in mentions(question):
        if m.text not in names:
            continue
        if m.possessive:
            out = re.sub(rf"{re.escape(m.text)}['’]s?(?=\W|$)", " ", out)
        else:
            out = re.sub(rf"(?i:{_PREPOSITIONS})\s+{re.escape(m.text)}\b", " ", out)
    return " ".join(out.split())


@dataclass
class CompanyScope:
    mentions: list[Mention] = field(default_factory=list)
    doc_ids: Optional[list[str]] = None  # documents about the named companies (None: nothing named/matched)
    missing: list[str] = field(default_factory=list)  # named companies no document in scope is about
    matched: list[str] = field(default_factory=list)  # mentions a document in scope is about
    filing: str = ""  # why doc_ids were narrowed to the filing (period, form) the question names, "" if not

    @property
    def out_of_scope(self) -> bool:
        return bool(self.missing) and not self.doc_ids


def _profile(f) -> set[str]:
    """The words that name a document (``ingest.facts.DocumentFacts``): its profile, the parts of a dotted name
    ("amazon.com" names Amazon), the initial pairs of its opening ("j&j") and its file name's words."""
    parts = {p for t in f.profile if "." in t for p in t.split(".") if p}
    return f.profile | parts | f.pairs | _file_words(f.filename)


def _file_words(filename: str) -> set[str]:
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", filename or "")
    return {t.lower() for t in re.split(r"[^A-Za-z0-9&]+", stem) if t}


LEGAL = frozenset(w.lower() for w in _WORDS["legal"])  # words of a registrant's name no short form keeps


def short_forms(company: str) -> set[str]:
    """How analysts shorten a registrant's name ("American Express Company": "amex", "ae", ...; "JPMorgan Chase
    & Co.": "jpm"; "Advanced Micro Devices": "amd"): a prefix (1-4 letters) of each of its first two or three
    words joined, or the first 3-4 letters of a long first word; three letters at least."""
    words = [w for w in name_words(company) if w.isalpha() and w not in LEGAL]
    out: set[str] = set()
    if words and len(words[0]) >= 6:
        out |= {words[0][:3], words[0][:4]}
    forms = [""]
    for w in words[:3]:
        forms = [f + w[:n] for f in forms for n in range(1, min(4, len(w)) + 1)]
        out |= {f for f in forms if len(f) >= 3 and f != w}
    return out


def _abbreviation(m: Mention) -> bool:
    """A one-word name written with two capitals or more ("AMEX", "JPM", "JnJ"): it may be a short form."""
    return len(m.tokens) == 1 and sum(ch.isupper() for ch in m.text) >= 2


def _named_by(m: Mention, words: set[str]) -> bool:
    """Every name word is in ``words`` (a one-word name) or most of them are (a longer one); a name written
    as one word in file names ("Best Buy" ~ "BESTBUY", "American Water Works" ~ "AMERICANWATERWORKS", its generic
    words included) counts."""
    if len(m.tokens) > 1 and "".join(m.tokens) in words:
        return True
    whole = name_words(m.text)
    if len(whole) > 1 and "".join(whole) in words:
        return True
    hits = sum(t in words for t in m.tokens)
    return hits == len(m.tokens) or (len(m.tokens) >= 3 and hits >= len(m.tokens) - 1)


def company_scope(kb, tenant: str, question: str, doc_ids: Optional[list[str]] = None) -> CompanyScope:
    """``company_scope_of`` for ``kb.for_tenant(tenant)`` (callers that hold a knowledge base and a tenant)."""
    if kb is None:
        return CompanyScope(mentions(question))
    return company_scope_of(kb.for_tenant(tenant), question, doc_ids)


def company_scope_of(kbt, question: str, doc_ids: Optional[list[str]] = None,
                     facts: Optional[dict] = None) -> CompanyScope:
    """The companies ``question`` names and the documents of tenant-bound ``kbt`` about them (``facts``: the
    stored document facts in scope, ``kbt.facts(doc_ids)``, when the caller has read them)."""
    found = mentions(question)
    if not found or kbt is None:
        return CompanyScope(found)
    facts = facts if facts is not None else kbt.facts(doc_ids)
    if not facts:
        return CompanyScope(found)
    profiles = {d: _profile(f) for d, f in facts.items()}
    items: set[str] = set().union(*(f.table_words for f in facts.values()))
    # "revenue of Software": a name the tables of the documents carry is a line item, not a company, unless
    # a file is named after it ("inventories for Best Buy" with BESTBUY_2019_10K.pdf)
    files = {d: _file_words(f.filename) for d, f in facts.items()}
    short = {d: short_forms(f.company) for d, f in facts.items()}  # "AMEX": a registrant's name shortened
    found = [m for m in found if m.possessive or not _named_by(m, items)
             or any(_named_by(m, w) for w in files.values())
             or (_abbreviation(m) and any(m.tokens[0] in sf for sf in short.values()))]
    matched: list[str] = []
    missing: list[str] = []
    names: list[str] = []
    for m in found:
        ids = [d for d, words in profiles.items() if _named_by(m, words)]
        if not ids and _abbreviation(m):  # "AMEX": a short form of the registrant's name
            ids = [d for d in facts if m.tokens[0] in short[d]]
        if ids:
            matched += [d for d in ids if d not in matched]
            names.append(m.text)
            continue
        if m.possessive or not _in_any_text(kbt, m, list(facts)):
            missing.append(m.text)
    filing = ""
    if matched:  # the company's filing for the period or form the question names (filing_scope)
        kept, filing = narrow(ask_of(question), {d: facts[d].filing for d in matched})
        if filing:
            return CompanyScope(found, kept, missing, names, filing)
    if matched and len(matched) == len(facts) and not missing:  # every document is about it: nothing narrowed
        return CompanyScope(found, None, [], names)
    return CompanyScope(found, matched or None, missing, names)


def _in_any_text(kbt, m: Mention, doc_ids: list[str]) -> bool:
    """Is the name anywhere in the text of one of the documents (a segment or product: "Software")?"""
    joined = "".join(m.tokens)
    hits = kbt.docs_with_words(list(m.tokens) + ([joined] if len(m.tokens) > 1 else []), doc_ids)
    return any(_named_by(m, {w for w, ds in hits.items() if d in ds}) for d in doc_ids)


def not_in_documents_text(cs: CompanyScope) -> str:
    names = ", ".join(dict.fromkeys(cs.missing))
    return (f"The documents do not contain information about {names}: no document in scope is about "
            f"{'this company' if len(cs.missing) == 1 else 'these companies'}, so nothing is answered from another "
            f"company's documents.")
