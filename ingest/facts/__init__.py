"""Document facts: what a document is, read once when it is ingested and stored with it (``lx_document_facts``).

- the profile that names it: file name and opening words, title, parties, dates, company (``profile``);
- the filing it is: form, fiscal year, quarter, period end, date of report (``filing``);
- its fiscal calendar and the periods of its tables' columns as the company names them (``calendar``);
- its section tree: headings with their numbers, pages and chunk ranges (``sections``);
- the words of its whole text and of its tables' headers and row labels (is a name anywhere in it?).

``compute`` reads them from a document's chunks and table catalogue entries, the same input at ingest
(``ingest.pipeline``) and for a document ingested before facts existed (``ingest.facts.store`` computes those on
their first read and stores them, once). The agent reads them through ``kb.for_tenant(t).facts()``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from typing import Optional

from ingest.facts import calendar as cal
from ingest.facts import profile
from ingest.facts.filing import Filing, dates_in, read_filing
from ingest.facts.sections import Section, section_tree

# what the stored facts were computed by: a stored row of another version is computed again on its next read
FACTS_VERSION = "3"


@dataclass
class DocumentFacts:
    doc_id: str
    filename: str
    version: int = 0
    company: str = ""  # a filing's registrant, else the first party named, else ""
    title: str = ""
    parties: list[str] = field(default_factory=list)
    dates: list[date] = field(default_factory=list)  # dates of the opening (the agreement's date, a cover's)
    profile: set[str] = field(default_factory=set)  # words of the file name and the opening (``profile.words``)
    pairs: set[str] = field(default_factory=set)  # initial pairs of the opening ("j&j")
    filing: Filing = field(default_factory=Filing)
    calendar: dict[date, tuple[int, int]] = field(default_factory=dict)  # a quarter's end -> (fiscal year, quarter)
    columns: dict[str, dict[str, tuple[int, Optional[int]]]] = field(default_factory=dict)  # re-read column periods
    table_words: set[str] = field(default_factory=set)
    sections_json: str = "[]"  # the section tree, parsed on first use (``sections``): most reads never need it

    @property
    def sections(self) -> list[Section]:
        if not hasattr(self, "_sections"):
            self._sections = [Section(**s) for s in json.loads(self.sections_json or "[]")]
        return self._sections

    def to_json(self) -> str:
        return json.dumps({
            "company": self.company, "title": self.title, "parties": self.parties,
            "dates": [d.isoformat() for d in self.dates], "profile": sorted(self.profile), "pairs": sorted(self.pairs),
            "filing": self.filing.to_dict(), "calendar": [[d.isoformat(), fy, q] for d, (fy, q) in self.calendar.items()],
            "columns": {t: {c: list(p) for c, p in cols.items()} for t, cols in self.columns.items()},
            "table_words": sorted(self.table_words)})

    @classmethod
    def from_json(cls, doc_id: str, filename: str, version: int, text: str, sections_json: str = "[]") -> "DocumentFacts":
        d = json.loads(text or "{}")
        return cls(doc_id, filename, version, d.get("company", ""), d.get("title", ""), list(d.get("parties", [])),
                   [date.fromisoformat(x) for x in d.get("dates", [])], set(d.get("profile", [])),
                   set(d.get("pairs", [])), Filing.from_dict(d.get("filing")),
                   {date.fromisoformat(e): (fy, q) for e, fy, q in d.get("calendar", [])},
                   {t: {c: (p[0], p[1]) for c, p in cols.items()} for t, cols in d.get("columns", {}).items()},
                   set(d.get("table_words", [])), sections_json or "[]")


@dataclass
class ChunkText:
    ord: int
    page: int
    section: str
    text: str


@dataclass
class TableColumns:
    """A table as its catalogue entry stores it: column entries and row entries (``lx_tables``)."""
    sql_name: str
    columns: list[dict]
    rows: list[dict]


def compute(doc_id: str, filename: str, version: int, chunks: list[ChunkText],
            tables: list[TableColumns]) -> tuple[DocumentFacts, set[str]]:
    """(the document's facts, the words of its whole text) from its chunks in order and its tables."""
    texts = [c.text for c in chunks]
    head = profile.opening(texts)
    head_text = "\n".join(head)
    filing = read_filing(filename, head, texts)
    parties = profile.parties(head_text)
    by_name = {t.sql_name: t.columns for t in tables}
    calendar = cal.calendar(by_name)
    facts = DocumentFacts(
        doc_id, filename, version, company=profile.registrant(head_text) or (parties[0] if parties else ""),
        title=profile.title(head, list(dict.fromkeys(c.section for c in chunks[:20]))), parties=parties,
        dates=dates_in(head_text)[:10], profile=profile.profile_tokens(filename, head),
        pairs=profile.initial_pairs(" ".join([filename.replace("_", " ")] + head)), filing=filing,
        calendar=calendar, columns=cal.column_periods(by_name, calendar),
        table_words=profile.table_words([(t.columns, t.rows) for t in tables]),
        sections_json=json.dumps([s.to_dict() for s in section_tree([(c.ord, c.page, c.section) for c in chunks])]))
    return facts, profile.vocabulary(texts)


def at_ingest(doc_id: str, filename: str, version: int, chunks: list, tables: list) -> tuple[DocumentFacts, set[str]]:
    """``compute`` for a version being committed: ``chunks`` (``ingest.chunker.TextChunk``) and ``tables``
    (``ingest.tables.typed.TypedTable``, in the order ``ingest.pipeline`` names and stores them)."""
    import json as _json

    from ingest.tables.typed import sql_table_name

    texts = [ChunkText(c.ord, c.page, c.section, c.text) for c in chunks]
    cols = [TableColumns(sql_table_name(t.title, doc_id, version, i), _json.loads(t.columns_json()),
                         list(_json.loads(t.meta_json()).get("rows") or [])) for i, t in enumerate(tables, start=1)]
    return compute(doc_id, filename, version, texts, cols)
