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
    """The documents the question is about; a company it names (``company_scope``) bounds the choice."""
    scope = _resolve(kb, tenant, question, doc_ids)
    from app.agent.company_scope import company_scope

    try:
        cs = company_scope(kb, tenant, question, doc_ids)
    except Exception:  # never blocks a question: the name-profile scope stands
        return scope
    if cs.doc_ids and not (scope.doc_ids and set(scope.doc_ids) <= set(cs.doc_ids)):
        return Scope(list(cs.doc_ids), scope.query, scope.naming, scope.scores)
    return scope


def _resolve(kb, tenant: str, question: str, doc_ids: list[str] | None = None) -> Scope:
    naming, asking = split_naming(question)
    tokens = set(name_tokens(naming, True)) | set(name_tokens(asking, False))
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
    names = {t for t in tokens if any(t in profiles[d] for d in chosen) and t not in ASKING}
    return Scope(chosen, _strip_names(query, names), naming, scores)


def _strip_names(query: str, names: set[str]) -> str:
    """The asking text without the name words of the chosen documents (a fallback to the whole text)."""
    if not names:
        return query
    kept = [w for w in re.split(r"(\s+)", query) if w.lower().strip(".,;:?'\"()") not in names]
    out = re.sub(r"\s{2,}", " ", "".join(kept)).strip()
    return out if len(words(out)) >= 2 else query
