"""Structure-aware chunking with exact provenance.

A page is cut into paragraphs (blank lines) and headings (explicit heading spans from the parser,
Markdown ``#`` lines, numbered clauses such as ``14.2 Change of Control``, short ALL-CAPS lines; the labels
they give, never a body sentence, come from ``ingest.headings``). A
heading starts a new section and a new chunk; an enumerated item ("(a)", "b)", "(iv)") starts a new
paragraph; paragraphs of one section are packed up to the token budget; a paragraph longer than the budget
is cut at sentence ends (``ingest.sentences``: "U.S.", "Inc.", "No. 5" are not ends), so a clause is never
split mid-sentence; only a single sentence longer than the budget is cut into windows that overlap by
``overlap`` tokens. A definition ("“Term” means ...") is one paragraph, so it stays with its term.
Chunks never cross a page, so every chunk has one page. ``text`` is always exactly
``document_text[char_start:char_end]`` — numbering such as "14.2" is kept verbatim.
Tokens are word/punctuation pieces (close to, slightly under, the embedder's WordPiece count).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.headings import MARKDOWN_HEADING, heading_label  # noqa: F401 - heading_label: part of this API
from ingest.parsers import Page
from ingest.sentences import sentence_ends

CHUNKER_VERSION = 3  # bump when chunk boundaries change: part of the ingest fingerprint, so files re-chunk

TOKEN = re.compile(r"\w+|[^\w\s]")
ENUMERATED = re.compile(r"^\s*(?:\([a-zA-Z0-9]{1,4}\)|[a-z]{1,2}\)|[ivx]{1,5}\.|\d{1,2}\))\s+\S")
PAGE_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class ChunkConfig:
    max_tokens: int = 256
    overlap: int = 32


@dataclass
class TextChunk:
    ord: int
    page: int
    section: str
    text: str
    char_start: int
    char_end: int
    n_tokens: int


@dataclass
class _Para:
    start: int  # offsets within the page text
    end: int
    heading: str | None  # the section label this paragraph opens, if it is a heading/clause


def document_text(pages: list[Page]) -> str:
    return PAGE_SEPARATOR.join(p.text for p in pages)


def _paragraphs(page: Page) -> list[_Para]:
    explicit = {start for start, _ in page.headings}
    paras: list[_Para] = []
    pos, text = 0, page.text
    cur: _Para | None = None
    prev: str | None = None  # the line before, in the same block
    lines = text.splitlines(keepends=True)
    for k, line in enumerate(lines):
        start, end = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        if not line.strip():
            cur, prev = None, None
            continue
        lead = len(line) - len(line.lstrip())
        nxt = lines[k + 1] if k + 1 < len(lines) and lines[k + 1].strip() else None
        label = heading_label(line, explicit=(start + lead) in explicit or start in explicit, prev=prev, nxt=nxt)
        prev = line
        if label is not None or cur is None or ENUMERATED.match(line):
            cur = _Para(start + lead, end, label)
            paras.append(cur)
            if label is not None and (start + lead) in explicit or label and MARKDOWN_HEADING.match(line):
                cur = None  # a stand-alone heading line: the body starts a new paragraph
        else:
            cur.end = end
    return paras


def _has_body(para: _Para, text: str) -> bool:
    """A clause line such as "14.2 Change of Control. If either party..." carries body text itself."""
    line = text[para.start:para.end]
    return len(TOKEN.findall(line)) > len(TOKEN.findall(para.heading or "")) + 3


def _last_cut(cuts: list[int], lo: int, hi: int) -> int | None:
    """The last cut point in (lo + a quarter of the window, hi], or None."""
    import bisect

    idx = bisect.bisect_right(cuts, hi) - 1
    if idx >= 0 and cuts[idx] > lo + (hi - lo) // 4:
        return cuts[idx]
    return None


def chunk_pages(pages: list[Page], config: ChunkConfig) -> list[TextChunk]:
    chunks: list[TextChunk] = []
    base = 0
    section = ""
    for page in pages:
        section = _chunk_page(page, base, section, config, chunks)
        base += len(page.text) + len(PAGE_SEPARATOR)
    return chunks


def _chunk_page(page: Page, base: int, section: str, config: ChunkConfig, out: list[TextChunk]) -> str:
    text = page.text
    toks = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
    if not toks:
        return section
    starts = [s for s, _ in toks]
    import bisect

    def tok_index(offset: int) -> int:
        return bisect.bisect_left(starts, offset)

    pending: tuple[int, int] | None = None  # token range [i, j) being packed
    pending_section = section

    def flush() -> None:
        nonlocal pending, has_body
        if pending and pending[1] > pending[0]:
            i, j = pending
            emit(i, j, pending_section)
        pending, has_body = None, False

    def emit(i: int, j: int, sec: str) -> None:
        cs, ce = toks[i][0], toks[j - 1][1]
        out.append(TextChunk(len(out), page.number, sec, text[cs:ce], base + cs, base + ce, j - i))

    budget, overlap = config.max_tokens, min(config.overlap, config.max_tokens // 2)
    paras = _paragraphs(page)
    # token positions where a chunk may end: sentence ends and paragraph starts
    cuts = sorted({tok_index(e) for e in sentence_ends(text)} | {tok_index(p.start) for p in paras})
    has_body = False  # a pending chunk of headings only is merged forward, never emitted alone
    for para in paras:
        i, j = tok_index(para.start), tok_index(para.end)
        if j <= i:
            continue
        if para.heading is not None:
            if has_body:
                flush()
            section = para.heading
            pending_section = section
        if pending and has_body and pending[1] - pending[0] + (j - i) > budget:
            flush()
        start = pending[0] if pending else i
        if pending is None:
            pending_section = section
        if j - start > budget:  # a long paragraph: cut at sentence ends, windows only inside a long sentence
            k = start
            while j - k > budget:
                cut = _last_cut(cuts, k, k + budget)
                if cut is not None:
                    emit(k, cut, pending_section)
                    k = cut
                else:
                    emit(k, k + budget, pending_section)
                    k += budget - overlap
            pending = (k, j)
        else:
            pending = (start, j)
        has_body = has_body or para.heading is None or _has_body(para, text)
        if pending is None:
            has_body = False
    flush()
    return section
