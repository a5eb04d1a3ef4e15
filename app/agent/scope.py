"""Which documents a question is about, and what it asks once the names are taken out.

A question such as "Consider the Supply Agreement between Acme Corp. and Beta LLC; what is the governing
law?" names its document (title, parties, dates, document type) and then asks for a clause. Searching with
the names pulls every hit to the title page, so the two parts are split: the naming part is matched against
each document's profile (file name, title and first pages), rare shared words weighing most (IDF over the
tenant's documents); the asking part, with the names removed, is what the clause search looks for.
"""
from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional

PROFILE_CHARS = 2500  # the opening of a document: title, preamble, parties, date
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'.-]*[A-Za-z0-9]|[A-Za-z0-9]")
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
ENTITY_WORD = re.compile(r"\b(?:Inc|LLC|L\.L\.C|Ltd|Limited|Corp|Corporation|Company|Co|plc|LP|L\.P|LLP|GmbH|AG|S\.A|"
                         r"B\.V|N\.V|Bank|Trust|Partners)\b\.?")
DOC_PHRASE = re.compile(r"\bthe\s+((?:[A-Z0-9][\w&'.-]*\s+){0,8}(?:Agreement|Contract|Lease|License|Licence|NDA|"
                        r"Amendment|Plan|Note|Indenture|Memorandum))\b")
STOP = set("""a an and are as at be by can could did do does for from has have how i if in into is it its may of on
or our shall should so such than that the their them then there these they this those to was we were what when
where which who whom whose why will with would you your about any all each per between during please tell me give
show list many over here also consider regarding concerning under according respect""".split())
# words that say what is asked rather than which document: never taken for names
ASKING = set("""governing law laws govern governs governed term terms renewal renew expire expiration date dated
termination terminate convenience cause assignment assign consent change control liability cap limit limitation
license licence grant non-compete compete competition exclusivity exclusive audit rights insurance parties party
notice payment fees price warranty indemnification confidentiality confidential period days years months clause
section agreement contract document""".split())


def words(text: str) -> list[str]:
    return [w.lower().strip(".'") for w in WORD.findall(text)]


@dataclass
class Scope:
    doc_ids: list[str] | None  # None: every document of the tenant
    query: str  # the question with the naming part taken out (the question itself when nothing was taken)
    naming: str  # the part that named the document(s), "" if none
    scores: dict[str, float]


class DocCache:
    """A per-document value computed once, keyed by (tenant, doc_id, version, content hash): a new version of
    the document is a new key. ``limit``: entries kept before the cache is emptied (None: no bound)."""

    def __init__(self, compute: Callable, limit: Optional[int] = None):
        self._compute, self._limit = compute, limit
        self._lock = threading.Lock()
        self._values: dict[tuple, object] = {}

    def get(self, kb, tenant: str, doc):
        key = (tenant, doc.id, doc.version, doc.content_hash)
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = self._compute(kb, tenant, doc)
        with self._lock:
            if self._limit is not None and len(self._values) > self._limit:
                self._values.clear()
            self._values[key] = value
        return value


def opening_passages(kb, tenant: str, doc) -> list[str]:
    """The document's first passages, up to PROFILE_CHARS characters: title, preamble, parties, date."""
    out, n = [], 0
    for p in kb.document_passages(tenant, doc.id):
        out.append(p.text)
        n += len(p.text)
        if n >= PROFILE_CHARS:
            break
    return out


def _profile_tokens(kb, tenant: str, doc) -> set[str]:
    text = [re.sub(r"[_\-.]+", " ", doc.filename)] + opening_passages(kb, tenant, doc)
    return {w for w in words(" ".join(text)) if w not in STOP}


PROFILES = DocCache(_profile_tokens)  # per-document profile token sets


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
    """The documents the question is about; a company it names (``company_scope``) bounds the choice, and the
    period or form it names (``filing_scope``) picks among that company's filings. The query keeps the
    question's periods and topics; only the names of the chosen documents (file-name words, the company
    named) are taken out."""
    from app.agent.company_scope import company_scope, mentions, without_companies

    scope = _resolve(kb, tenant, question, doc_ids)
    try:
        cs = company_scope(kb, tenant, question, doc_ids)
    except Exception:  # never blocks a question: the name-profile scope stands
        return scope
    query = scope.query
    if cs.matched and cs.doc_ids:  # the company named, if the files are named after it (not a topic: "Kenvue")
        files: set[str] = set()
        for d in _docs(kb, tenant, cs.doc_ids):
            files |= _file_words(d.filename)
        own = [m.text for m in mentions(question) if m.text in cs.matched and _named_in(m.tokens, files)]
        stripped = without_companies(query, own) if own else query
        query = stripped if len(words(stripped)) >= 2 else query
    chosen = scope.doc_ids
    named = None if chosen else _named_by_file_names(kb, tenant, question, doc_ids)
    if not cs.filing:
        narrowed = _filing(kb, tenant, question, chosen or named, doc_ids)
        if chosen or narrowed != named:  # a name in the file names alone narrows nothing: the filing does
            chosen = narrowed
    if cs.doc_ids and not (scope.doc_ids and set(scope.doc_ids) <= set(cs.doc_ids)):
        chosen = list(cs.doc_ids)
    return Scope(chosen, _strip_file_names(kb, tenant, query, chosen or named), scope.naming, scope.scores)


def _docs(kb, tenant: str, doc_ids: list[str] | None) -> list:
    return [d for d in kb.list_documents(tenant) if d.status == "ingested" and (not doc_ids or d.id in doc_ids)]


def _file_words(filename: str) -> set[str]:
    """The words of a file name and the initials of each pair ("JOHNSON_JOHNSON" -> "jnj", "j&j")."""
    fw = [w for w in re.split(r"[^a-z0-9&]+", filename.lower()) if w]
    pairs = {f"{a[0]}{j}{b[0]}" for a, b in zip(fw, fw[1:]) if a[0].isalpha() and b[0].isalpha() for j in ("n", "&")}
    return {w for w in fw if len(w) > 1} | pairs


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


def _named_by_file_names(kb, tenant: str, question: str, doc_ids: list[str] | None) -> list[str] | None:
    """The documents whose file names carry a capitalised name of the question ("Northwind" for
    northwind-q2.pdf, "Best Buy" for BESTBUY_2023_10K.pdf), None if none does."""
    docs = _docs(kb, tenant, doc_ids)
    if len(docs) < 2:
        return None
    names = [toks for _a, _b, toks in _names(question)]
    hit = [d.id for d in docs if any(_named_in(toks, _file_words(d.filename)) for toks in names)]
    return hit or None


ASKING_HEAD = {"what", "which", "was", "were", "is", "are", "how", "did", "does", "do", "as", "for", "among"}
FILE_NAME = re.compile(r"\b[A-Z][\w&.'’-]*(?:\s+[A-Z][\w&.'’-]*){0,3}")


def _strip_file_names(kb, tenant: str, query: str, chosen: list[str] | None) -> str:
    """The query without capitalised names the chosen documents' file names carry ("Best Buy's" for
    BESTBUY_2023_10K.pdf): a name picks the document, it is no term a passage must contain."""
    if not chosen:
        return query
    files: set[str] = set()
    for d in _docs(kb, tenant, chosen):
        files |= _file_words(d.filename)
    out = query
    for start, end, toks in reversed(list(_names(query))):
        if _named_in(toks, files):
            out = out[:start] + out[end:]
    out = re.sub(r"\s{2,}", " ", out).strip()
    return out if len(words(out)) >= 2 else query


def _filing(kb, tenant: str, question: str, chosen: list[str] | None, doc_ids: list[str] | None):
    """Among several chosen documents, the filings for the period or form the question names; with none
    chosen (no name matched), only a filing the question names by its quarter or date ("Q2 of FY2024", "the
    8-K dated July 1, 2022"), since a year alone is shared by many companies' filings."""
    from app.agent.filing_scope import STRONG, narrow

    if chosen is not None and len(chosen) < 2:
        return chosen
    want = set(chosen or doc_ids or [])
    docs = [d for d in kb.list_documents(tenant) if d.status == "ingested" and (not want or d.id in want)]
    try:
        kept, why = narrow(kb, tenant, question, docs, min_best=0.0 if chosen else STRONG)
    except Exception:
        return chosen
    return [d.id for d in kept] if why else chosen


def _resolve(kb, tenant: str, question: str, doc_ids: list[str] | None = None) -> Scope:
    naming, asking = split_naming(question)
    tokens = set(name_tokens(naming, True)) | {t for t in name_tokens(asking, False) if not _period_or_term(t)}
    docs = [d for d in kb.list_documents(tenant) if d.status == "ingested" and (not doc_ids or d.id in doc_ids)]
    query = asking if naming else question
    if len(docs) <= 1 or not tokens:
        return Scope(list(doc_ids) if doc_ids else None, _strip_names(query, set()), naming, {})
    profiles = {d.id: PROFILES.get(kb, tenant, d) for d in docs}
    df = Counter(t for p in profiles.values() for t in tokens & p)
    n = len(docs)
    weight = {t: math.log((n + 1) / (df[t] + 0.5)) for t in tokens if df[t]}
    scores = {d: sum(weight.get(t, 0.0) for t in tokens & p) for d, p in profiles.items()}
    best = max(scores.values())
    # a name that is in a minority of documents: at least one word clearly rarer than "in half of them"
    if best < math.log((n + 1) / (n / 2 + 0.5)) + 0.5:
        return Scope(list(doc_ids) if doc_ids else None, _strip_names(query, set()), naming, scores)
    chosen = [d for d, s in sorted(scores.items(), key=lambda x: -x[1]) if s >= 0.75 * best][:5]
    # taken out of the query: the naming part's words, and words of the chosen documents' file names; not a
    # topic their opening pages happen to mention ("Kenvue", "Adjusted", "GAAP")
    files = set()
    for d in docs:
        if d.id in chosen:
            files |= set(words(re.sub(r"[_\-.]+", " ", d.filename)))
    named = set(name_tokens(naming, True))
    names = {t for t in tokens if any(t in profiles[d] for d in chosen) and t not in ASKING
             and (t in named or t in files) and not _period_or_term(t)}
    return Scope(chosen, _strip_names(query, names), naming, scores)


def _period_or_term(token: str) -> bool:
    """A period ("2023", "fy2024", "q2") or a financial term ("cash", "revenue"): it names no document."""
    from app.agent.company_scope import _is_term

    return _is_term(token)


def _strip_names(query: str, names: set[str]) -> str:
    """The asking text without the name words of the chosen documents (a fallback to the whole text)."""
    if not names:
        return query
    kept = [w for w in re.split(r"(\s+)", query) if w.lower().strip(".,;:?'\"()") not in names]
    out = re.sub(r"\s{2,}", " ", "".join(kept)).strip()
    return out if len(words(out)) >= 2 else query
