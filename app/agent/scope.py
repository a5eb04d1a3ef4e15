"""Which documents a question is about, and what it asks once the names are taken out.

A question such as "Consider the Supply Agreement between Acme Corp. and Beta LLC; what is the governing
law?" names its document (title, parties, dates, document type) and then asks for a clause. Searching with
the names pulls every hit to the title page, so the two parts are split: the naming part is matched against
each document's profile (file name, title and first pages), rare shared words weighing most (IDF over the
tenant's documents); the asking part, with the names removed, is what the clause search looks for.

``documents_for(kbt, question, doc_ids)`` is the one place that decides the documents in scope: it reads the
document facts stored at ingest (``kbt.facts``: profiles, filings) once and asks ``company_scope`` (companies
named) and ``filing_scope`` (the period or form named); neither of those imports this module.
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from app.agent.company_scope import (CompanyScope, _is_term, company_scope_of, mentions, not_in_documents_text,
                                     without_companies)
from app.agent.filing_scope import STRONG, FilingAsk, ask_of, narrow
from app.agent.vocabulary import agreement_names, phrase_pattern, row_kinds, word_lists
from ingest.facts.profile import STOP, WORD, words  # noqa: F401 (the profile's tokenizer, shared with ingest)

log = logging.getLogger(__name__)
LEAD = re.compile(r"^\s*(?:consider|regarding|concerning|re|in|under|for|about|with respect to|according to|"
                  r"looking at|reading|per|as to)\b", re.I)
NAMING_CUE = re.compile(r"\b(agreement|contract|between|dated|amendment|lease|license|licence|nda|plan|policy|"
                        r"report|filing|form|exhibit|memorandum|deed|charter|by-?laws|note|indenture|\.pdf|\.docx)\b",
                        re.I)
BETWEEN = re.compile(r"\b(?:by and )?between\b.+?(?=[;:?]|,\s*(?:what|which|who|when|where|how|is|are|does|do|can|"
                     r"may|shall|will|has|have)\b|$)", re.I)
PERIODS = re.compile(r"(?:by and )?between\s+(?:the\s+)?(?:end\s+of\s+(?:the\s+)?)?(?:(?:19|20)\d{2}\b|FY\s*'?\d{2,4}\b|"
                     r"Q[1-4]|fiscal\b|(?:first|second|third|fourth)\s+(?:fiscal\s+)?quarter|(?:January|February|March|April|"
                     r"May|June|July|August|September|October|November|December)\s+\d)", re.I)
# an entity's name ends here ("Acme Inc"): capitalised, so "the company's" stays a word of a period phrase
ENTITY_WORD = re.compile(rf"(?-i:(?=[A-Z])){phrase_pattern(word_lists('entity_names', ('suffixes',))['suffixes'])}\.?",
                         re.I)
DOC_PHRASE = re.compile(r"\bthe\s+((?:[A-Z0-9][\w&'.-]*\s+){0,8}(?:Agreement|Contract|Lease|License|Licence|NDA|"
                        r"Amendment|Plan|Note|Indenture|Memorandum))\b")
# words that say what is asked rather than which document: never taken for names
ASKING = set("""governing law laws govern governs governed term terms renewal renew expire expiration date dated
termination terminate convenience cause assignment assign consent change control liability cap limit limitation
license licence grant non-compete compete competition exclusivity exclusive audit rights insurance parties party
notice payment fees price warranty indemnification confidentiality confidential period days years months clause
section agreement contract document""".split())


@dataclass
class Scope:
    doc_ids: list[str] | None  # None: every document of the tenant
    query: str  # the question with the naming part taken out (the question itself when nothing was taken)
    naming: str  # the part that named the document(s), "" if none
    scores: dict[str, float]
    company: CompanyScope = field(default_factory=CompanyScope)  # the companies named, their documents
    asked: FilingAsk = field(default_factory=FilingAsk)  # the forms, fiscal years, quarters and dates named
    filing: str = ""  # why doc_ids were narrowed to the filing the question names, "" if not
    agreements: frozenset[str] | None = None  # documents read whose opening names parties; None: not read

    @property
    def out_of_scope(self) -> bool:
        """A company is named that no document in scope is about: nothing is answered from the others."""
        return self.company.out_of_scope

    @property
    def not_in_documents(self) -> str:
        return not_in_documents_text(self.company) if self.company.out_of_scope else ""


def split_naming(question: str) -> tuple[str, str]:
    """(naming part, asking part). The naming part is a leading clause that names a document ("Consider
    the X between A and B;") plus any "between A and B" phrase and "the X Agreement" phrases."""
    q = question.strip()
    naming, asking = [], q
    parts = re.split(r"(?<=[;:])\s+|(?<=,)\s+(?=(?:what|which|who|when|where|how|is|are|does|do|can|may|shall|will|"
                     r"has|have|please)\b)", q, maxsplit=1, flags=re.I)
    if len(parts) == 2 and (LEAD.match(parts[0]) or NAMING_CUE.search(parts[0])) and parts[1].strip():
        naming.append(parts[0])
        asking = parts[1]
    m = BETWEEN.search(asking)
    if m and PERIODS.match(m.group(0)) and not ENTITY_WORD.search(m.group(0)):
        m = None  # "between FY 2023 and Q2 of FY2024": two periods, not two parties
    if m and len(asking) - len(m.group(0)) > 10:
        naming.append(m.group(0))
        asking = (asking[:m.start()] + asking[m.end():]).strip()
    for m in list(DOC_PHRASE.finditer(asking)):
        naming.append(m.group(1))
    return " ".join(naming), re.sub(r"\s{2,}", " ", asking).strip()


def name_tokens(text: str, naming_part: bool) -> list[str]:
    """Tokens that may name a document: everything in a naming part; elsewhere capitalised words (not the
    first), acronyms, numbers and the word before "agreement"/"contract"."""
    if naming_part:
        return [w for w in words(text) if w not in STOP]
    out = []
    raw = WORD.findall(text)
    for i, w in enumerate(raw):
        lw = w.lower().strip(".'")
        if lw in STOP or lw in ASKING:
            continue
        nxt = raw[i + 1].lower() if i + 1 < len(raw) else ""
        if (i > 0 and w[0].isupper()) or (w.isupper() and len(w) > 1) or w[0].isdigit() or nxt in ("agreement", "contract"):
            out.append(lw)
    return out


def resolve(kb, tenant: str, question: str, doc_ids: list[str] | None = None) -> Scope:
    """``documents_for`` for ``kb.for_tenant(tenant)`` (callers that hold a knowledge base and a tenant)."""
    return documents_for(kb.for_tenant(tenant), question, doc_ids)


def documents_for(kbt, question: str, doc_ids: list[str] | None = None) -> Scope:
    """The documents of tenant-bound ``kbt`` (among ``doc_ids``) the question is about, from their stored facts
    (one read): the documents it names (profile), the company it names (``company_scope``) bounding the choice,
    and the period or form it names (``filing_scope``) picking among that company's filings. The query keeps
    the question's periods and topics; only the names of the chosen documents (file-name words, the company
    named) are taken out."""
    facts = kbt.facts(doc_ids)
    asked = ask_of(question)
    scope = _resolve(facts, question, doc_ids)
    scope.asked = asked
    scope.agreements = agreements = agreements_of(facts)
    try:
        cs = company_scope_of(kbt, question, doc_ids, facts)
    except Exception:  # never blocks a question: the name-profile scope stands
        log.exception("company scope failed")
        return scope
    query = scope.query
    if cs.matched and cs.doc_ids:  # the company named, if the files are named after it (not a topic: "Kenvue")
        files: set[str] = set()
        for d in cs.doc_ids:
            files |= _file_words(facts[d].filename)
        own = [m.text for m in mentions(question) if m.text in cs.matched and _named_in(m.tokens, files)]
        stripped = without_companies(query, own) if own else query
        query = stripped if len(words(stripped)) >= 2 else query
    chosen, filing = scope.doc_ids, cs.filing
    named = None if chosen else _named_by_file_names(facts, question)
    if not cs.filing:
        narrowed, why = _filing(facts, asked, chosen or named)
        if chosen or narrowed != named:  # a name in the file names alone narrows nothing: the filing does
            chosen, filing = narrowed, why
    if chosen is None and named and not cs.matched:  # "under the MSA": the file its words or initials name
        chosen = list(named)
    if cs.doc_ids and not (scope.doc_ids and set(scope.doc_ids) <= set(cs.doc_ids)):
        chosen, filing = list(cs.doc_ids), cs.filing
    return Scope(chosen, _strip_file_names(facts, query, chosen or named), scope.naming, scope.scores, cs, asked,
                 filing, agreements)


def agreements_of(facts: dict) -> frozenset[str]:
    """The documents of ``facts`` (doc_id -> stored facts) whose opening names their parties and calls itself a
    contract (``vocabulary.yaml agreement_names``): agreements. Ingest reads parties off any "between A and B" of
    an opening, so 7 of TAT-QA-dev's 278 report extracts had some ("CGD", "CMS based on their relative fair
    values"); 5 of them name no contract, as every one of 92 CUAD-dev contracts with parties does."""
    names = agreement_names()
    return frozenset(d for d, f in facts.items() if f.parties and names & set(f.profile or ()))


def _file_words(filename: str) -> set[str]:
    """The words of a file name, the initials of each pair ("JOHNSON_JOHNSON" -> "jnj", "j&j") and of the whole
    name ("master_services_agreement.pdf" -> "msa")."""
    fw = [w for w in re.split(r"[^a-z0-9&]+", re.sub(r"\.[a-z0-9]{2,5}$", "", filename.lower())) if w]
    pairs = {f"{a[0]}{j}{b[0]}" for a, b in zip(fw, fw[1:]) if a[0].isalpha() and b[0].isalpha() for j in ("n", "&")}
    lettered = [w for w in fw if w[0].isalpha()]
    whole = {"".join(w[0] for w in lettered)} if 3 <= len(lettered) <= 6 else set()
    return {w for w in fw if len(w) > 1} | pairs | whole


def _names(query: str):
    """(start, end, tokens) of the capitalised names of ``query``, question words at their head left out."""
    for m in FILE_NAME.finditer(query):
        parts = m.group(0).split()
        while parts and (words(parts[0]) or ["?"])[0] in STOP | ASKING_HEAD:  # "What Was AMCOR's": the name only
            parts = parts[1:]
        text = " ".join(parts)
        toks = [t for t in words(re.sub(r"['’]s?$", "", text)) if t not in STOP]
        if toks and not any(_period_or_term(t) for t in toks) and not set(toks) <= ASKING:
            yield (m.end() - len(text) if parts else m.end()), m.end(), toks


def _named_in(toks: list[str], files: set[str]) -> bool:
    return "".join(toks) in files or all(t in files for t in toks)


def _named_by_file_names(facts: dict, question: str) -> list[str] | None:
    """The documents whose file names carry a capitalised name of the question ("Northwind" for
    northwind-q2.pdf, "Best Buy" for BESTBUY_2023_10K.pdf), None if none does. A name followed by a kind of
    row ("the Services segment": data, ``vocabulary.yaml row_kinds``) names a part of a business, not a file."""
    if len(facts) < 2:
        return None
    kinds = row_kinds()
    names = [toks for _a, b, toks in _names(question)
             if not (m := re.match(r"\W*([a-z]+)", question[b:].lower())) or m.group(1) not in kinds]
    hit = [d for d, f in facts.items() if any(_named_in(toks, _file_words(f.filename)) for toks in names)]
    return hit or None


ASKING_HEAD = {"what", "which", "was", "were", "is", "are", "how", "did", "does", "do", "as", "for", "among"}
FILE_NAME = re.compile(r"\b[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*){0,3}")


def _strip_file_names(facts: dict, query: str, chosen: list[str] | None) -> str:
    """The query without capitalised names the chosen documents' file names carry ("Best Buy's" for
    BESTBUY_2023_10K.pdf): a name picks the document, it is no term a passage must contain."""
    if not chosen:
        return query
    files: set[str] = set()
    for d in chosen:
        if d in facts:
            files |= _file_words(facts[d].filename)
    out = query
    for start, end, toks in reversed(list(_names(query))):
        if _named_in(toks, files):
            out = out[:start] + out[end:]
    out = re.sub(r"\s{2,}", " ", out).strip()
    return out if len(words(out)) >= 2 else query


def _filing(facts: dict, asked: FilingAsk, chosen: list[str] | None) -> tuple[list[str] | None, str]:
    """Among several chosen documents, the filings for the period or form the question names; with none
    chosen (no name matched), only a filing the question names by its quarter or date ("Q2 of FY2024", "the
    8-K dated July 1, 2022"), since a year alone is shared by many companies' filings. (documents, why)."""
    if chosen is not None and len(chosen) < 2:
        return chosen, ""
    want = set(chosen or [])
    kept, why = narrow(asked, {d: f.filing for d, f in facts.items() if not want or d in want},
                       min_best=0.0 if chosen else STRONG)
    return (kept, why) if why else (chosen, "")


def _resolve(facts: dict, question: str, doc_ids: list[str] | None = None) -> Scope:
    """The documents the question names by their profiles (rare shared words weighing most)."""
    naming, asking = split_naming(question)
    tokens = set(name_tokens(naming, True)) | {t for t in name_tokens(asking, False) if not _period_or_term(t)}
    query = asking if naming else question
    if len(facts) <= 1 or not tokens:
        return Scope(list(doc_ids) if doc_ids else None, _strip_names(query, set()), naming, {})
    profiles = {d: f.profile for d, f in facts.items()}
    df = Counter(t for p in profiles.values() for t in tokens & p)
    n = len(facts)
    weight = {t: math.log((n + 1) / (df[t] + 0.5)) for t in tokens if df[t]}
    scores = {d: sum(weight.get(t, 0.0) for t in tokens & p) for d, p in profiles.items()}
    best = max(scores.values())
    # a name that is in a minority of documents: at least one word clearly rarer than "in half of them"
    if best < math.log((n + 1) / (n / 2 + 0.5)) + 0.5:
        return Scope(list(doc_ids) if doc_ids else None, _strip_names(query, set()), naming, scores)
    chosen = [d for d, s in sorted(scores.items(), key=lambda x: -x[1]) if s >= 0.75 * best][:5]
    chosen = _without_unnamed(chosen, profiles, set(name_tokens(naming, True)), df)
    # taken out of the query: the naming part's words, and words of the chosen documents' file names; not a
    # topic their opening pages happen to mention ("Kenvue", "Adjusted", "GAAP")
    files = set()
    for d in chosen:
        files |= set(words(re.sub(r"[_\-.]+", " ", facts[d].filename)))
    named = set(name_tokens(naming, True))
    names = {t for t in tokens if any(t in profiles[d] for d in chosen) and t not in ASKING
             and (t in named or t in files) and not _period_or_term(t)}
    return Scope(chosen, _strip_names(query, names), naming, scores)


RARE_NAME = 2  # a name word in at most this many documents names them, not a kind of document


def _without_unnamed(chosen: list[str], profiles: dict, named: set[str], df: Counter) -> list[str]:
    """The chosen documents without those that lack a rare name the naming part gives and the best one has
    ("... between M. D. Anderson, Adaptimmune LLC and Adaptimmune Limited": not the other strategic alliance
    agreement with M. D. Anderson that has no Adaptimmune)."""
    if len(chosen) < 2:
        return chosen
    names = {t for t in named & profiles[chosen[0]] if df[t] <= RARE_NAME and not _period_or_term(t)}
    return [d for d in chosen if names <= profiles[d]]


def _period_or_term(token: str) -> bool:
    """A period ("2023", "fy2024", "q2") or a financial term ("cash", "revenue"): it names no document."""
    return _is_term(token)


def _strip_names(query: str, names: set[str]) -> str:
    """The asking text without the name words of the chosen documents (a fallback to the whole text)."""
    if not names:
        return query
    kept = [w for w in re.split(r"(\s+)", query) if w.lower().strip(".,;:?'\"()") not in names]
    out = re.sub(r"\s{2,}", " ", "".join(kept)).strip()
    return out if len(words(out)) >= 2 else query
