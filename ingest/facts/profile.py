"""What names a document: its profile (file name and opening: title, preamble, parties, dates), the words of its
whole text and of its tables' headers and row labels. Read once at ingest (``ingest.facts``); the agent matches
a question's names against them (``app.agent.scope``, ``app.agent.company_scope``) with the same tokenizers.
"""
from __future__ import annotations

import re

PROFILE_CHARS = 2500  # the opening of a document: title, preamble, parties, date
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'.-]*[A-Za-z0-9]|[A-Za-z0-9]")
NAME_WORD = re.compile(r"[A-Za-z0-9][\w.&'’-]*")
STOP = set("""a an and are as at be by can could did do does for from has have how i if in into is it its may of on
or our shall should so such than that the their them then there these they this those to was we were what when
where which who whom whose why will with would you your about any all each per between during please tell me give
show list many over here also consider regarding concerning under according respect""".split())
PARTIES = re.compile(r"\b(?:by\s+and\s+)?(?:between|among)\s+(.{3,500})", re.I | re.S)
# where a preamble's list of parties ends: a paragraph break, the recitals, or a new sentence ("... LLC. The Parties")
PARTIES_END = re.compile(r"\n\s*\n|\b(?:WHEREAS|RECITALS?|WITNESSETH|BACKGROUND)\b|\.\s+[A-Z][a-z]+\s+[a-z]")
PARTY_SPLIT = re.compile(r",?\s+and\s+|;\s*", re.I)
DOC_TYPE = re.compile(r"\b(?:agreement|contract|lease|licen[cs]e|plan|note|indenture|amendment|memorandum|charter|"
                      r"by-?laws|policy|report|statement|release|form\s+\d)", re.I)
EXHIBIT = re.compile(r"^\s*(?:exhibit|schedule|annex|appendix)\b[\s\d.()a-z-]*$", re.I)
REGISTRANT = re.compile(r"([^\n(]{3,120}?)\s*\(\s*Exact name of registrant", re.I)


def words(text: str) -> list[str]:
    """The profile tokenizer: lower-cased words, dots and apostrophes at their ends dropped."""
    return [w.lower().strip(".'") for w in WORD.findall(text)]


def name_words(text: str) -> list[str]:
    """The company-name tokenizer ("amazon.com", "j&j", "3m"), lower-cased."""
    return [t for t in (w.lower().strip(".'’-") for w in NAME_WORD.findall(text)) if t]


def opening(texts: list[str]) -> list[str]:
    """The first passages, up to PROFILE_CHARS characters: title, preamble, parties, date."""
    out, n = [], 0
    for t in texts:
        out.append(t)
        n += len(t)
        if n >= PROFILE_CHARS:
            break
    return out


def profile_tokens(filename: str, opening_texts: list[str]) -> set[str]:
    text = [re.sub(r"[_\-.]+", " ", filename)] + opening_texts
    return {w for w in words(" ".join(text)) if w not in STOP}


def initial_pairs(text: str) -> set[str]:
    """"Johnson & Johnson" -> {"j&j", "jnj", "jandj"}: the usual short forms of two-name companies."""
    out = set()
    for m in re.finditer(r"\b([A-Za-z])[A-Za-z]+\s+(?:&|and)\s+([A-Za-z])[A-Za-z]+", text):
        a, b = m.group(1).lower(), m.group(2).lower()
        out |= {f"{a}&{b}", f"{a}n{b}", f"{a}and{b}"}
    return out


def vocabulary(texts: list[str]) -> set[str]:
    """Every name word of the whole text and its initial pairs (is a name anywhere in the document?)."""
    text = " ".join(texts)
    return set(name_words(text)) | initial_pairs(text)


def table_words(tables: list[tuple[list[dict], list[dict]]]) -> set[str]:
    """Words of the tables' column headers and row labels (with their section), not their titles (a title often
    names the company). ``tables``: (columns, rows) as the catalogue stores them."""
    out: set[str] = set()
    for columns, rows in tables:
        texts = [c.get("label") or c.get("name", "") for c in columns]
        texts += [f"{r.get('label', '')} {r.get('parent', '')}" for r in rows]
        out |= set(name_words(" ".join(texts)))
    return out


def title(opening_texts: list[str], headings: list[str]) -> str:
    """The document's title: the first of its first headings that names a kind of document ("Services
    Agreement", "FORM 10-Q"), else the first that is no exhibit label, else its first short line."""
    heads = [" ".join(h.split()) for h in headings[:6] if h and h.strip()]
    for h in heads:
        if DOC_TYPE.search(h) and len(h) <= 150:
            return h[:200]
    for h in heads:
        if not EXHIBIT.match(h):
            return h[:200]
    for line in "\n".join(opening_texts).splitlines():
        s = " ".join(line.split())
        if 3 <= len(s) <= 150 and any(c.isalpha() for c in s) and not EXHIBIT.match(s):
            return s
    return heads[0][:200] if heads else ""


def parties(opening_text: str) -> list[str]:
    """The parties a preamble names ("by and between Acme Corp., a Delaware corporation, and Beta LLC"): the
    name before each party's description."""
    m = PARTIES.search(opening_text[:PROFILE_CHARS])
    if not m:
        return []
    text = m.group(1)
    end = PARTIES_END.search(text)
    text = " ".join((text[:end.start() + 1] if end else text).split())
    out = []
    for part in PARTY_SPLIT.split(text):
        name = re.split(r",|\(|\s+an?\s+|\s+(?:dated|effective)\b", part, maxsplit=1)[0].strip(" .\"“”")
        if 2 <= len(name) <= 100 and name[0].isupper() and name not in out:
            out.append(name)
    return out[:6]


def registrant(opening_text: str) -> str:
    """A filing's company: the name above "(Exact name of registrant as specified in its charter)"."""
    m = REGISTRANT.search(opening_text[:6000])
    return " ".join(m.group(1).split()).strip(" .,") if m else ""
