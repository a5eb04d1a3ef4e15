"""The agent's word lists, loaded once from ``app/data/vocabulary.yaml`` (data, not code)."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

import yaml

PATH = Path(__file__).resolve().parents[1] / "data" / "vocabulary.yaml"


@lru_cache(maxsize=1)
def vocabulary() -> dict:
    data = yaml.safe_load(PATH.read_text(encoding="utf-8")) or {}
    if not isinstance(data.get("document_types"), list):
        raise ValueError(f"{PATH}: document_types must be a list of words")
    return data


def document_types() -> tuple[str, ...]:
    return tuple(str(w).lower() for w in vocabulary()["document_types"])


def plurals(word: str) -> tuple[str, ...]:
    """``word`` and its plural ("country", "countries"; "business", "businesses"; "lease", "leases")."""
    w = word.lower()
    if w.endswith("y") and w[-2:-1] not in "aeiou":
        return w, w[:-1] + "ies"
    return (w, w + "es") if w.endswith(("s", "x", "ch", "sh")) else (w, w + "s")


def row_kinds() -> dict[str, str]:
    """Every spelling of a row kind (singular and plural) -> the kind."""
    return {v: str(w).lower() for w in vocabulary().get("row_kinds") or () for v in plurals(str(w))}


def contract_words() -> frozenset[str]:
    """The words (singular and plural) by which a question speaks of a contract."""
    return frozenset(v for w in vocabulary().get("contract_words") or () for v in plurals(str(w)))


def agreement_names() -> frozenset[str]:
    """The words by which a contract's opening names itself ("agreement", "lease")."""
    return frozenset(str(w).lower() for w in vocabulary().get("agreement_names") or ())


def number_words() -> dict[str, int]:
    """How a number is spelt, with its value ("twelve" -> 12)."""
    return {str(w).lower(): int(v) for w, v in (vocabulary().get("number_words") or {}).items()}


def expand_phrase(phrase: str) -> list[str]:
    """The plain phrases a data phrase stands for: ``(a|b)`` one of, ``[a]`` optional, in the order written
    ("[accounts] (payable|payables)" -> "accounts payable", "accounts payables", "payable", "payables")."""
    phrase = phrase.strip()
    i = next((k for k, ch in enumerate(phrase) if ch in "(["), None)
    if i is None:
        return [" ".join(phrase.split())] if phrase.strip() else [""]
    close = {"(": ")", "[": "]"}[phrase[i]]
    depth, j = 0, i
    for j in range(i, len(phrase)):
        depth += phrase[j] in "(["
        depth -= phrase[j] in ")]"
        if depth == 0:
            break
    if phrase[j] != close:
        raise ValueError(f"unbalanced {phrase[i]} in {phrase!r}")
    inner, head, tail = phrase[i + 1:j], phrase[:i], phrase[j + 1:]
    options = _split_top(inner) + ([""] if close == "]" else [])
    out = []
    for opt in options:
        for o in expand_phrase(opt) if opt else [""]:
            for t in expand_phrase(tail):
                out.append(" ".join(f"{head} {o} {t}".split()))
    return list(dict.fromkeys(out))


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def phrase_pattern(phrases, plural: bool = False, hyphens: bool = True) -> str:
    """``phrase_regex``'s pattern as text, one group: to place data phrases inside a pattern whose shape is code
    ("<percent word> of" -> ``rf"{phrase_pattern(words)}\\s+of\\b"``)."""
    between = r"[\s,\-]+" if hyphens else r"\s+"
    alts = []
    for p in phrases:
        for plain in expand_phrase(p):
            words = plain.split()
            if not words:
                continue
            body = between.join(re.escape(w) for w in words)
            lead = r"(?<!\w)" if re.match(r"\w", plain) else ""
            trail = r"(?!\w)" if re.search(r"\w$", plain) else ""
            if plural and trail:
                trail = r"(?:s|es)?" + trail
            alts.append(f"{lead}{body}{trail}")
    return f"(?:{'|'.join(alts)})" if alts else r"(?!x)x"


def phrase_regex(phrases, plural: bool = False, hyphens: bool = True) -> re.Pattern:
    """One pattern for data phrases: whole words, case-insensitive; spaces, hyphens and commas between words are
    alike; the alternatives tried in the order written. ``plural``: the last word may take an "s" ("margins").
    ``hyphens=False``: only spaces join the words (the words that ask for an operation: "higher-than-expected" is a
    compound, not "higher than"; a hyphenated form is written as such, "year-on-year")."""
    return re.compile(phrase_pattern(phrases, plural, hyphens), re.I)


def with_plurals(phrases) -> list[str]:
    """Every plain form of ``phrases`` and, after each, its plural ("product line", "product lines"; "category",
    "categories"): a list of kinds written in the singular."""
    return list(dict.fromkeys(v for p in phrases for plain in expand_phrase(p) for v in plurals(plain)))


def word_lists(section: str, names=(), data: Optional[dict] = None) -> dict[str, list[str]]:
    """Section ``section`` of the vocabulary (``data``: the file's), a mapping of names to lists of words or
    phrases, checked: ``names`` are the lists the caller needs. An error names the section and the entry (YAML
    reads an unquoted yes / no / on / off as true / false and a number as a number: quote them)."""
    lists = (vocabulary() if data is None else data).get(section)
    where = f"{PATH.name}: {section}"
    if not isinstance(lists, dict):
        raise ValueError(f"{where} must map names to lists of words, not {type(lists).__name__}")
    out = {}
    for name, words in lists.items():
        if not isinstance(words, list) or not words:
            raise ValueError(f"{where}.{name} must be a list of words, not {words!r}")
        bad = [w for w in words if not isinstance(w, str) or not w.strip()]
        if bad:
            raise ValueError(f"{where}.{name}: {bad[0]!r} is not a word (quote yes, no, on, off and numbers)")
        for w in words:
            try:
                expand_phrase(w)
            except ValueError as e:
                raise ValueError(f"{where}.{name}: {e}") from None
        out[str(name)] = [" ".join(w.split()) for w in words]
    missing = [n for n in names if n not in out]
    if missing:
        raise ValueError(f"{where} needs the word lists {', '.join(missing)}")
    return out


@lru_cache(maxsize=8)
def _word_keys(section: str) -> dict[str, str]:
    return {str(w).lower(): key for key, words in (vocabulary().get(section) or {}).items() for w in words or ()}


def _keys_in(section: str, text: str) -> list[str]:
    """The keys of ``section`` whose words ``text`` holds, in the order they first occur."""
    keys = _word_keys(section)
    return list(dict.fromkeys(keys[w] for w in re.findall(r"[a-z]+", text.lower()) if w in keys))


@lru_cache(maxsize=1)
def base_forms() -> dict[str, str]:
    """Irregular form -> the word itself ("paid" -> "pay"; ``word_forms``, one word each)."""
    out = {}
    for base, forms in word_lists("word_forms").items():
        for w in (base, *forms):
            if len(w.split()) != 1:
                raise ValueError(f"{PATH.name}: word_forms.{base}: {w!r} is not one word")
        out.update({f.lower(): base.lower() for f in forms})
    return out


def auxiliaries() -> frozenset[str]:
    """The words that open a yes/no question ("is", "has", "does", ...)."""
    return frozenset(str(w).lower() for w in vocabulary().get("auxiliaries") or ())


def asks_yes_no(question: str) -> bool:
    """The question starts with an auxiliary ("Has ...", "Does ...", "Was there ..."): it asks yes or no."""
    first = (re.findall(r"[a-z]+", question.lower()) or [""])[0]
    return first in auxiliaries()


def directions_asked(question: str) -> list[str]:
    """The ways the asking sentence (before any "?") asks a figure moved, in its order: up | down | better |
    worse | change."""
    return _keys_in("directions", question.split("?")[0])


def asked_direction(question: str) -> Optional[str]:
    """Which way the question asks a figure moved (the first such word), or None."""
    return next(iter(directions_asked(question)), None)


def asks_which_way(question: str) -> bool:
    """"Has it improved or declined?": two ways asked, so the answer is the way it went, not yes or no."""
    return len(directions_asked(question)) >= 2


def asks_comparison(question: str) -> bool:
    """The asking sentence (before any "?") sets figures side by side: "how does X compare to ...", "X versus Y"."""
    return bool(_keys_in("comparisons", question.split("?")[0]))


def asked_sign(question: str) -> Optional[str]:
    """positive | negative when the question asks whether a figure is above or below zero, else None."""
    return next(iter(_keys_in("sign_words", question)), None)


def asks_relevance(sentence: str) -> bool:
    """"If gross margin is not a useful metric for a company like this, ...": a negated relevance word (data:
    ``relevance`` words and ``negations``) in the sentence."""
    words = set(re.findall(r"[a-z]+", sentence.lower().replace("n't", " not")))
    lists = word_lists("relevance", ("words", "negations"))
    return bool(words & set(lists["words"])) and bool(words & set(lists["negations"]))
