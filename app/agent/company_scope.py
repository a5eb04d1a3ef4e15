"""Companies a question names ("What is 3M's FY2018 capex?", "... inventories for Best Buy?", "... of JnJ")
and which documents are about them.

A mention is matched against each document's profile (file name + opening pages, ``scope.PROFILES``): the
cover page of a filing names its company. A question that names a company no document in scope is about is
answered "not in the documents" (``graph.route``); it is never answered from another company's table or text.

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

from app.agent.filing_scope import narrow
from app.agent.scope import PROFILES, DocCache, opening_passages

NAME = r"(?:[A-Z0-9][\w.&-]*|&)"
POSSESSIVE = re.compile(rf"(?<![\w'’])((?:{NAME}\s+){{0,3}}{NAME})['’]s?(?=\s|$|[,;:?.)])")
PREPOSITIONAL = re.compile(rf"\b(?i:for|of|did|does|do|at|to|by|from)\s+({NAME}(?:\s+{NAME}){{0,3}})")
GENERIC = set("""the a an its our their this that these those company companies company's group board management
bank firm registrant corporation entity segment segments year years quarter quarters fund trust partnership
government customer customers auditor auditors today tomorrow yesterday parent subsidiary subsidiaries business
consumer consumers u.s us usa america american world global international national north south east west
inc inc. corp corp. co co. ltd ltd. plc llc l.p lp holdings group's it they we here there what that let who
where how""".split())  # also the contractions "Here's", "Let's", "What's"
# financial terms and units written in capitals: never a company
TERMS = set("""fy q1 q2 q3 q4 h1 h2 ytd ttm ltm gaap non-gaap ebit ebitda ebitdar cogs capex opex sg&a r&d eps dpo dso
dio roa roe roic roce fcf cfo usd eur gbp jpy cny mn bn cagr yoy qoq pp&e d&a ppe nopat wacc ev p&l it ai ceo cfo
coo cto vp svp sec ifrs us-gaap ir pe ps pb net total gross operating cash revenue revenues sales income profit
adjusted adj unadjusted inventories inventory assets liabilities equity capital expenditure expenditures debt
working ratio margin margins dividend dividends payout quick current days payable receivable receivables
balance sheet statement statements flow flows consolidated note notes table item part section page million
millions billion billions thousand thousands percent percentage answer please round base define using
considering consider provide use what which how when where who why is was are were the a an in on fx
january february march april may june july august september october november december jan feb mar apr jun jul
aug sep sept oct nov dec 10-k 10k 10-q 10q 8-k 8k""".split())
DIGITS = re.compile(r"\d")


def _tokens(name: str) -> list[str]:
    return [t for t in (w.lower().strip(".'’-") for w in re.findall(r"[A-Za-z0-9][\w.&'’-]*", name)) if t]


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
        while words and words[0].lower() in ("what", "is", "was", "how", "did", "does", "which", "were", "are"):
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
            out = re.sub(rf"\b(?i:for|of|did|does|do|at|to|by|from)\s+{re.escape(m.text)}\b", " ", out)
    return " ".join(out.split())


def _initial_pairs(text: str) -> set[str]:
    """"Johnson & Johnson" -> {"j&j", "jnj"}: the usual short forms of two-name companies."""
    out = set()
    for m in re.finditer(r"\b([A-Za-z])[A-Za-z]+\s+(?:&|and)\s+([A-Za-z])[A-Za-z]+", text):
        a, b = m.group(1).lower(), m.group(2).lower()
        out |= {f"{a}&{b}", f"{a}n{b}", f"{a}and{b}"}
    return out


def _full_text_words(kb, tenant: str, doc) -> set[str]:
    """The words of the whole ingested text (is a name anywhere in the document?)."""
    text = " ".join(p.text for p in kb.document_passages(tenant, doc.id))
    return {t for t in _tokens(text)} | _initial_pairs(text)


def _opening_pairs(kb, tenant: str, doc) -> set[str]:
    return _initial_pairs(" ".join([doc.filename.replace("_", " ")] + opening_passages(kb, tenant, doc)))


FULL_TEXT = DocCache(_full_text_words, limit=500)
OPENING_PAIRS = DocCache(_opening_pairs, limit=2000)


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


def _profile(kb, tenant: str, doc) -> set[str]:
    toks = set(PROFILES.get(kb, tenant, doc))
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", doc.filename or "")
    parts = {p for t in toks if "." in t for p in t.split(".") if p}  # "amazon.com" names Amazon
    return toks | parts | OPENING_PAIRS.get(kb, tenant, doc) | {t.lower() for t in re.split(r"[^A-Za-z0-9&]+", stem) if t}


def _file_words(filename: str) -> set[str]:
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", filename or "")
    return {t.lower() for t in re.split(r"[^A-Za-z0-9&]+", stem) if t}


def _table_words(kb, tenant: str, doc_ids: set[str]) -> set[str]:
    """Words of the row labels and column headers of the documents' tables."""
    out: set[str] = set()
    try:
        tables = kb.list_tables(tenant)
    except Exception:
        return out
    for t in tables:
        if t.doc_id not in doc_ids:
            continue
        texts = [c.label or c.name for c in t.columns]  # not the title: it often names the company
        texts += [f"{r.label} {r.parent}" for r in (getattr(t, "rows", None) or [])]
        out |= set(_tokens(" ".join(texts)))
    return out


def _named_by(m: Mention, words: set[str]) -> bool:
    """Every name word is in ``words`` (a one-word name) or most of them are (a longer one); a name written
    as one word in file names ("Best Buy" ~ "BESTBUY") counts."""
    if len(m.tokens) > 1 and "".join(m.tokens) in words:
        return True
    hits = sum(t in words for t in m.tokens)
    return hits == len(m.tokens) or (len(m.tokens) >= 3 and hits >= len(m.tokens) - 1)


def company_scope(kb, tenant: str, question: str, doc_ids: Optional[list[str]] = None) -> CompanyScope:
    found = mentions(question)
    if not found or kb is None:
        return CompanyScope(found)
    docs = [d for d in kb.list_documents(tenant) if d.status == "ingested" and (not doc_ids or d.id in doc_ids)]
    if not docs:
        return CompanyScope(found)
    profiles = {d.id: _profile(kb, tenant, d) for d in docs}
    items = _table_words(kb, tenant, {d.id for d in docs})
    # "revenue of Software": a name the tables of the documents carry is a line item, not a company, unless
    # a file is named after it ("inventories for Best Buy" with BESTBUY_2019_10K.pdf)
    files = {d.id: _file_words(d.filename) for d in docs}
    found = [m for m in found if m.possessive or not _named_by(m, items)
             or any(_named_by(m, w) for w in files.values())]
    matched: list[str] = []
    missing: list[str] = []
    names: list[str] = []
    for m in found:
        ids = [d for d, words in profiles.items() if _named_by(m, words)]
        if ids:
            matched += [d for d in ids if d not in matched]
            names.append(m.text)
            continue
        if m.possessive or not any(_named_by(m, FULL_TEXT.get(kb, tenant, d)) for d in docs):
            missing.append(m.text)
    filing = ""
    if matched:  # the company's filing for the period or form the question names (filing_scope)
        by_id = {d.id: d for d in docs}
        kept, filing = narrow(kb, tenant, question, [by_id[d] for d in matched])
        if filing:
            return CompanyScope(found, [d.id for d in kept], missing, names, filing)
    if matched and len(matched) == len(docs) and not missing:  # every document is about it: nothing narrowed
        return CompanyScope(found, None, [], names)
    return CompanyScope(found, matched or None, missing, names)


def not_in_documents_text(cs: CompanyScope) -> str:
    names = ", ".join(dict.fromkeys(cs.missing))
    return (f"The documents do not contain information about {names}: no document in scope is about "
            f"{'this company' if len(cs.missing) == 1 else 'these companies'}, so nothing is answered from another "
            f"company's documents.")
