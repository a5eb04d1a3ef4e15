"""Clause kinds as data: ``app/data/clause_kinds.yaml`` loaded once, validated, and merged with a tenant's
playbook kinds; ``Taxonomy.match`` names the kind a question asks about.

A kind is knowledge (its name, what the clause does, how contracts word it, which headings carry it, what an
answer must state), never code: the finder (``clauses.finder``) uses the same fields for every kind, so a kind
added as data works without code.

Matching is lexical and general: the question's content words (stemmed, stop words out) are compared with
each kind's name, synonyms and heading words as phrases: a phrase matches when its words occur in the
question in order with at most one word between them. The longest phrase wins (a name or synonym over a heading
word at equal length; more phrases of one kind break a tie), so "change of control ... assignment" reads as
change of control, not anti-assignment.
A kind named by one word only, whose data explains less than half of the question's words, holds only when the
embedder finds the question near the kind's description (``MIN_COSINE``); no phrase, no kind.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Optional

import yaml

from app.agent.clauses.connectors import ConnectorError, compile_expression, sentences
from app.agent.text import STOPWORDS, stem

DATA_FILE = Path(__file__).resolve().parents[2] / "data" / "clause_kinds.yaml"
SLOTS = ("jurisdiction", "duration", "amount", "parties", "date", "clause")
MAX_NAME = 80
MAX_TEXT = 600
MIN_COSINE = 0.55  # how near in meaning a weak reading that explains little of the question must be
STRONG = 2.5  # a match score from a phrase of two words or more; one word ("audit") is a weak reading
MIN_FIT = 0.5  # a weak reading holds only where the kind explains more than this share of the asking words (half
# is not enough: "payment terms" shares "term" with the expiration date, and "payment" says which terms)
# words that name no clause kind on their own (a question's frame: "what", "the agreement", "a party")
FRAME_WORDS = {"agreement", "agreements", "contract", "contracts", "party", "parties'", "clause", "clauses",
               "section", "sections", "provision", "provisions", "document", "say", "says", "state", "states"}
TOKEN = re.compile(r"[a-z0-9]+")


class TaxonomyError(ValueError):
    """A clause kind entry is invalid (the message names the entry and the field)."""


def stems(text: str) -> list[str]:
    """Content-word stems of ``text`` in order (the one tokenizer matching and the finder share)."""
    out = []
    for w in TOKEN.findall(text.lower().replace("-", " ")):
        if w in STOPWORDS or w in FRAME_WORDS or (len(w) < 3 and not w.isdigit()):
            continue
        out.append(stem(w))
    return out


def asked_words(question: str) -> set[str]:
    """The content-word stems of a question, figures aside (a year is a scope, not what is asked about)."""
    return {w for w in stems(question) if not w.isdigit()}


def share_stated(words: set[str], text: str) -> float:
    """The share of ``words`` (content-word stems) that ``text`` states; 0 for no words."""
    return len(words & set(stems(text))) / len(words) if words else 0.0


@dataclass(frozen=True)
class ClauseKind:
    name: str
    description: str
    wordings: tuple[str, ...]
    headings: tuple[str, ...]
    answer: str = "clause"  # the slot an answer must state (SLOTS)
    synonyms: tuple[str, ...] = field(default=())
    source: str = "built-in"  # built-in | playbook
    # phrases by which a contract states the value asked elsewhere too ("shall commence"): app/agent/clauses/restated.py
    stated_by: tuple[str, ...] = field(default=())
    # ways of the clause that exclude each other (arbitration, or the courts): a question that names one is not
    # answered by a clause that provides for another
    alternatives: tuple[tuple[str, ...], ...] = field(default=())
    # how an answering span states the clause, and what says a span is not it (terms and connectors: connectors.py)
    states: tuple[str, ...] = field(default=())
    not_this: tuple[str, ...] = field(default=())
    cues: tuple[str, ...] = field(default=())  # short phrases a sentence of the clause uses (quote ranking)

    @property
    def slot(self) -> str:  # the name the verifier reads
        return self.answer

    def query(self) -> str:
        """Dense-search text: what the clause does and how contracts word it."""
        return " ".join([self.description, *self.wordings])

    def sparse_query(self) -> str:
        """Sparse-search terms: names, headings and wordings (descriptions are prose, not the clause's words)."""
        return " ".join([self.name, *self.synonyms, *self.headings, *self.wordings])

    def phrases(self) -> tuple[tuple[list[str], float], ...]:
        """(stems, weight) of the phrases a question names this kind by: name and synonyms 1.0, headings 0.6
        (worked out once: the clause check reads them for every quote, ``heads``)."""
        return self._phrases

    @cached_property
    def _phrases(self) -> tuple[tuple[list[str], float], ...]:
        out = [(stems(p), 1.0) for p in (self.name, *self.synonyms)]
        out += [(stems(h), 0.6) for h in self.headings]
        return tuple((s, w) for s, w in out if s)

    def profile(self) -> frozenset[str]:
        """Stems that say this clause: its name, synonyms, headings, description and wordings (worked out once:
        the verifier asks for it for every candidate)."""
        return self._profile

    @cached_property
    def _profile(self) -> frozenset[str]:
        return frozenset(stems(" ".join([self.name, *self.synonyms, *self.headings, self.description,
                                         *self.wordings])))

    def fit(self, question: str) -> float:
        """The share of the question's content words this kind's data explains (name, synonyms, headings,
        description, wordings): 1.0 for "what is the governing law?", low where one shared word ("license")
        named the kind and the rest of the question asks about something else ("held in escrow")."""
        asked = asked_words(question)
        return len(asked & self.profile()) / len(asked) if asked else 0.0

    def rest(self, question: str) -> set[str]:
        """The question's content words this kind does not explain: what the answer must speak of itself."""
        return asked_words(question) - self.profile()

    def other_way(self, question: str, text: str) -> tuple[str, str] | None:
        """(the way the question names, another way ``text`` states) where the kind's ``alternatives`` exclude
        each other and ``text`` states only another than the one asked ("where will disputes be arbitrated?" of
        "the courts of New York have exclusive jurisdiction"), else None. Phrases are matched whole, small words
        too: "for cause" is not "without cause"."""
        if not self.alternatives:
            return None
        asked = [i for i, ways in enumerate(self._ways) if ways.search(question)]
        stated = [i for i, ways in enumerate(self._ways) if ways.search(text)]
        if len(asked) != 1 or not stated or asked[0] in stated:
            return None
        return self.alternatives[asked[0]][0], self.alternatives[stated[0]][0]  # each way by its first phrase

    def heads(self, heading: str) -> bool:
        """Whether ``heading`` (a section's title or heading path) names this kind: its name, a synonym or a heading
        phrase in order ("11. Confidentiality", "ARTICLE 8 - INDEMNIFICATION")."""
        words = stems(heading)
        return bool(words) and any(_contains(words, p) for p, _w in self.phrases())

    def states_provision(self, question: str, span: str, heading: str) -> bool:
        """``span`` states the provision of this clause the question asks about ("how long do confidentiality
        obligations survive?"): ``heading`` names the kind and the span states at least half (one at the least)
        of the question's words the kind does not explain ("obligations", "survive")."""
        rest = self.rest(question)
        return bool(rest) and self.heads(heading) and share_stated(rest, span) >= 0.5

    def states_clause(self, text: str) -> bool:
        """Whether ``text`` has a sentence that states this clause: one of ``states`` matches it (any sentence
        where the kind gives none) and none of ``not_this`` ("no license is granted" is no license grant)."""
        return any(self._states_in(sent) for sent in sentences(text))

    def _states_in(self, sent) -> bool:
        if any(e.matches(sent) for e in self._not_this):
            return False
        return not self._states or any(e.matches(sent) for e in self._states)

    def cue_score(self, text: str) -> float:
        """0..3: how much ``text`` reads like this clause: the distinct ``cues`` it has (without cues, the content
        words of the kind's wordings it uses), each ``states`` expression that matches counting two more (four make
        the most); 0 for a text that says it is not this clause."""
        return self._cue_score(text, sentences(text))

    def quote_score(self, text: str) -> float:
        """``cue_score``, one more where ``text`` states the clause (a kind with ``states`` only): how a sentence
        of a passage ranks as the quote, its sentences read once for both."""
        split = sentences(text)
        stated = bool(self._states) and any(self._states_in(sent) for sent in split)
        return self._cue_score(text, split) + (1.0 if stated else 0.0)

    def _cue_score(self, text: str, split) -> float:
        if self._not_this and any(e.matches(sent) for sent in split for e in self._not_this) \
                and not any(self._states_in(sent) for sent in split):
            return 0.0
        if self._cues:
            hits = sum(1 for e in self._cues if any(e.matches(sent) for sent in split))
        else:
            hits = len(set(stems(text)) & self._wording_stems)
        hits += 2.0 * sum(1 for e in self._states if any(e.matches(sent) for sent in split))
        return min(hits, 4.0) / 4.0 * 3.0

    @cached_property
    def _states(self) -> tuple:
        return tuple(compile_expression(e) for e in self.states)

    @cached_property
    def _not_this(self) -> tuple:
        return tuple(compile_expression(e) for e in self.not_this)

    @cached_property
    def _cues(self) -> tuple:
        return tuple(compile_expression(e) for e in self.cues)

    @cached_property
    def _wording_stems(self) -> frozenset[str]:
        return frozenset(stems(" ".join(self.wordings)))

    @cached_property
    def _ways(self) -> list:
        from app.agent.vocabulary import phrase_regex

        return [phrase_regex(way, plural=True) for way in self.alternatives]

    def to_dict(self) -> dict:
        d = {"name": self.name, "description": self.description, "wordings": list(self.wordings),
             "headings": list(self.headings), "answer": self.answer}
        if self.synonyms:
            d["synonyms"] = list(self.synonyms)
        if self.stated_by:
            d["stated_by"] = list(self.stated_by)
        if self.alternatives:
            d["alternatives"] = [list(g) for g in self.alternatives]
        for key in ("states", "not_this", "cues"):
            if getattr(self, key):
                d[key] = list(getattr(self, key))
        return d


def _strings(entry: dict, key: str, where: str, required: bool) -> tuple[str, ...]:
    value = entry.get(key)
    if value is None:
        if required:
            raise TaxonomyError(f"{where}: '{key}' is missing (a list of plain phrases)")
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TaxonomyError(f"{where}: '{key}' must be a list of non-empty strings")
    if required and not value:
        raise TaxonomyError(f"{where}: '{key}' is empty")
    for v in value:
        if len(v) > MAX_TEXT:
            raise TaxonomyError(f"{where}: a '{key}' entry is longer than {MAX_TEXT} characters")
    return tuple(" ".join(v.split()) for v in value)


def kind_from_dict(entry, where: str = "clause kind", source: str = "built-in") -> ClauseKind:
    """A validated ``ClauseKind`` from a mapping; ``TaxonomyError`` says which field is wrong and why."""
    if not isinstance(entry, dict):
        raise TaxonomyError(f"{where}: expected a mapping with name, description, wordings, headings, answer")
    unknown = set(entry) - {"name", "description", "wordings", "headings", "answer", "synonyms", "stated_by",
                            "alternatives", "states", "not_this", "cues"}
    if unknown:
        raise TaxonomyError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TaxonomyError(f"{where}: 'name' is missing or empty")
    name = " ".join(name.lower().split())
    where = f"{where} {name!r}"
    if len(name) > MAX_NAME:
        raise TaxonomyError(f"{where}: 'name' is longer than {MAX_NAME} characters")
    if not stems(name):
        raise TaxonomyError(f"{where}: 'name' has no content word (only words such as 'the', 'clause')")
    desc = entry.get("description")
    if not isinstance(desc, str) or not desc.strip():
        raise TaxonomyError(f"{where}: 'description' is missing (one or two sentences: what the clause does)")
    if len(desc) > MAX_TEXT:
        raise TaxonomyError(f"{where}: 'description' is longer than {MAX_TEXT} characters")
    answer = str(entry.get("answer") or "clause").strip().lower()
    if answer not in SLOTS:
        raise TaxonomyError(f"{where}: 'answer' is {answer!r}; expected one of {', '.join(SLOTS)}")
    return ClauseKind(name=name, description=" ".join(desc.split()),
                      wordings=_strings(entry, "wordings", where, True),
                      headings=_strings(entry, "headings", where, False),
                      answer=answer, synonyms=_strings(entry, "synonyms", where, False), source=source,
                      stated_by=_strings(entry, "stated_by", where, False),
                      alternatives=_alternatives(entry, where),
                      states=_expressions(entry, "states", where), not_this=_expressions(entry, "not_this", where),
                      cues=_expressions(entry, "cues", where))


def _expressions(entry: dict, key: str, where: str) -> tuple[str, ...]:
    """Terms-and-connectors expressions, each compiled once here so that a malformed one is refused by name."""
    out = _strings(entry, key, where, False)
    for e in out:
        try:
            compile_expression(e)
        except ConnectorError as exc:
            raise TaxonomyError(f"{where}: '{key}': {exc}") from exc
    return out


def _alternatives(entry: dict, where: str) -> tuple[tuple[str, ...], ...]:
    value = entry.get("alternatives")
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) < 2 or not all(isinstance(g, list) for g in value):
        raise TaxonomyError(f"{where}: 'alternatives' must be a list of two or more lists of phrases (one per way)")
    return tuple(_strings({"way": g}, "way", f"{where} alternatives", True) for g in value)


def load_kinds(path: Path = DATA_FILE) -> list[ClauseKind]:
    """Every entry of a taxonomy file, validated; names must be unique."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"{path}: cannot read the clause kinds: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("kinds")
    if not isinstance(data, list) or not data:
        raise TaxonomyError(f"{path}: expected a non-empty list of clause kinds")
    kinds, seen = [], set()
    for i, entry in enumerate(data, 1):
        kind = kind_from_dict(entry, f"{path.name} entry {i}")
        if kind.name in seen:
            raise TaxonomyError(f"{path.name} entry {i}: duplicate name {kind.name!r}")
        seen.add(kind.name)
        kinds.append(kind)
    return kinds


def _contains(q: list[str], phrase: list[str]) -> bool:
    """``phrase`` occurs in ``q`` in order, at most one other word between two of its words."""
    for start in (i for i, w in enumerate(q) if w == phrase[0]):
        pos, ok = start, True
        for w in phrase[1:]:
            nxt = next((j for j in range(pos + 1, min(pos + 3, len(q))) if q[j] == w), None)
            if nxt is None:
                ok = False
                break
            pos = nxt
        if ok:
            return True
    return False


class Taxonomy:
    """The kinds a tenant's questions are read against: built-ins, with playbook kinds merged over them."""

    def __init__(self, kinds: Iterable[ClauseKind]):
        self.kinds: dict[str, ClauseKind] = {}
        for k in kinds:
            self.kinds[k.name] = k  # a later kind (the tenant's) replaces a built-in of the same name
        self._phrases = {k.name: k.phrases() for k in self.kinds.values()}
        self._vectors = None
        self._lock = threading.Lock()

    def __iter__(self):
        return iter(self.kinds.values())

    def __len__(self) -> int:
        return len(self.kinds)

    def get(self, name: Optional[str]) -> Optional[ClauseKind]:
        return self.kinds.get(" ".join(name.lower().split())) if name else None

    def merged(self, extra: Iterable[ClauseKind]) -> "Taxonomy":
        return Taxonomy([*self.kinds.values(), *extra])

    def match_scores(self, question: str) -> list[tuple[float, ClauseKind]]:
        """(score, kind) for every kind a phrase of which the question contains, best first; of kinds named by
        phrases as long, the one that explains more of the question ("how long do confidentiality obligations
        last?" is about confidentiality, not the term the word "last" names)."""
        q = stems(question)
        out = []
        for kind in self.kinds.values():
            found = [len(p) + w for p, w in self._phrases[kind.name] if _contains(q, p)]
            if found:  # the longest phrase; more phrases of the kind break a tie
                best = max(found) + 0.1 * (len(found) - 1)
                out.append((best + (0.5 if kind.source == "playbook" else 0.0), kind))
        return sorted(out, key=lambda x: (-x[0], -x[1].fit(question)))

    def named_besides(self, kind: ClauseKind, question: str) -> set[str]:
        """The question's words that ``kind`` does not explain and that name another kind ("renewal" in "what
        notice is required to terminate renewal?" read as the notice period): what the answer must speak of."""
        others = {w for k in self.kinds.values() if k.name != kind.name for w in stems(k.name)}
        return {w for w in kind.rest(question) if w in others}

    def match(self, question: str, embedder=None) -> Optional[ClauseKind]:
        """The kind ``question`` (its asking part) asks about, or None."""
        kind, _ = self.reading(question, embedder)
        return kind

    def reading(self, question: str, embedder=None) -> tuple[Optional[ClauseKind], bool]:
        """(the kind asked about or None, whether the reading is strong: named by a phrase of two words or
        more). One word ("What were the audit fees?") may name a kind or be a line item's word; the caller
        weighs a weak reading against what else answers the question. A weak reading whose kind's data explains
        no more than ``MIN_FIT`` of the question's words is no reading unless the embedder finds the question near
        the kind in meaning (``MIN_COSINE``): "is source code held in escrow for the licensee?" shares only
        "license" with the license grant; "how long do confidentiality obligations last?" is about
        confidentiality though most of its words are not."""
        scored = self.match_scores(question)
        if not scored:
            return None, False
        kind, strong = scored[0][1], scored[0][0] >= STRONG
        if strong or kind.fit(question) > MIN_FIT:
            return kind, strong
        if embedder is not None and self.cosine(question, kind, embedder) >= MIN_COSINE:
            return kind, False
        return None, False

    def cosine(self, question: str, kind: ClauseKind, embedder) -> float:
        """The embedder's cosine of the question and the kind's name and description."""
        import numpy as np

        with self._lock:
            if self._vectors is None:
                kinds = list(self.kinds.values())
                vecs = np.asarray(embedder.encode([f"{k.name}: {k.description}" for k in kinds]))
                self._vectors = {k.name: v / (np.linalg.norm(v) + 1e-9) for k, v in zip(kinds, vecs)}
        v = np.asarray(embedder.encode([question]))[0]
        return float(self._vectors[kind.name] @ v / (np.linalg.norm(v) + 1e-9))


_BUILT_IN: Optional[Taxonomy] = None
_BUILT_IN_LOCK = threading.Lock()


def built_in() -> Taxonomy:
    """The shipped kinds (read once per process: the file is code-side data, not a document fact)."""
    global _BUILT_IN
    with _BUILT_IN_LOCK:
        if _BUILT_IN is None:
            _BUILT_IN = Taxonomy(load_kinds())
        return _BUILT_IN


def get_taxonomy(tenant_kinds: Optional[Iterable[ClauseKind]] = None) -> Taxonomy:
    """The built-in kinds with ``tenant_kinds`` (a playbook) merged over them by name."""
    base = built_in()
    return base.merged(tenant_kinds) if tenant_kinds else base
