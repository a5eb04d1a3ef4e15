"""Analyst questions as asked in practice carry instructions around the question: "Answer in USD millions.",
"Round your answer to two decimal places.", "Base your judgments on the information provided primarily in the
balance sheet.", "Considering the data in the balance sheet, what is ...", "Here's the question: ...", and
definitions: "Define working capital ratio as total current assets divided by total current liabilities."

``read(question)`` splits them: the question itself (what the planner parses), the statements named as the
source (balance sheet, income statement, cash flow statement) and a definition rewritten as an operation
the planner knows ("the ratio of A to B"), plus the usual definitions of common ratios.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.agent.bi.metrics import STATEMENT_NAMES, usual_ratios

INSTRUCTION = re.compile(
    r"^\s*(?:please\s+)?(?:answer|state|round|base|provide|address|calculate what|give|respond|report|express|"
    r"use|using|utili[sz]e|we want|we need|help us|assume|approach|note|show|only|do not|don't|compute|calculate)\b",
    re.I)
# "If gross margins are not a relevant metric for a company like this, then please state that and explain why."
CONDITIONAL = re.compile(r"^\s*if\b[^?]*\b(?:please|state|explain|say|note)\b", re.I)
LEADING = re.compile(r"^\s*(?:considering|using|based on|basing|according to|looking at)\b[^,?]*,\s*",
                     re.I)
HERE = re.compile(r"^.*\bhere(?:'|’)?s the question\s*:\s*", re.I | re.S)
# "Please answer the following question: what is ...?": the lead-in before a colon that the question follows
LEAD_IN = re.compile(r"^[^:?]*:\s*(?=(?:what|which|how|who|whom|when|where|why|is|was|are|were|does|did|do|has|"
                     r"have|had|can|could|should|would|will)\b)", re.I)
PAREN = re.compile(r"\((?:[^()]*\b(?:round|units?|usd|millions?|billions?|thousands?|percents?|decimal)\b[^()]*)\)",
                   re.I)
DEFINE = re.compile(r"\b(?:define|defining)\s+(?P<name>[^.?]+?)\s+as\s*:?\s*(?P<expr>[^.?]+)|"
                    r"\b(?P<name2>[A-Za-z][\w &/()-]{1,60}?)\s+(?:is|are)\s+defined\s+as\s*:?\s*(?P<expr2>[^?]+?)"
                    r"(?:\.\s|\.$|$)", re.I)
DIVIDED = re.compile(r"^\s*(?:the\s+)?(?P<a>.+?)\s+(?:divided by|over|/|to)\s+(?:the\s+)?(?P<b>.+?)\s*$", re.I)



@dataclass
class Read:
    question: str  # the question alone, rewritten when a definition says what to compute
    statements: list[str] = field(default_factory=list)  # statement kinds named as the source
    definition: str = ""  # the definition used, as read
    fallback: str = ""  # a common ratio's usual definition, tried when the question's own name grounds nothing
    conditional: str = ""  # "If gross margin is not a useful metric for a company like this, then state that ..."


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.?!])\s+(?=[A-Z(])", text.strip()) if s.strip()]


def _ratio_question(question: str, a: str, b: str, percent: bool) -> str:
    periods = " ".join(re.findall(r"\b(?:FY\s?'?\d{2,4}|fiscal (?:year )?\d{4}|(?:19|20)\d\d|Q[1-4]\s?(?:FY)?\s?"
                                  r"'?\d{2,4})\b", question, re.I))
    what = "percentage" if percent else "ratio"
    return f"What is the {what} of {a.strip()} to {b.strip()} {periods}?".replace("  ", " ")


def read(question: str) -> Read:
    text = " ".join(question.split())
    statements = [kind for kind, rx in STATEMENT_NAMES if rx.search(text)]  # data: metrics.yaml statements
    text = HERE.sub("", text)
    kept: list[str] = []
    definition = conditional = ""
    asked = False  # a sentence asking (with "?") came before
    for s in _sentences(text):
        m = DEFINE.search(s)
        if m:
            definition = f"{m['name'] or m['name2']} = {m['expr'] or m['expr2']}".strip()
            continue
        if (INSTRUCTION.match(s) or CONDITIONAL.match(s)) and "?" not in s:
            conditional = conditional or (s if CONDITIONAL.match(s) else "")
            continue
        if asked and "?" not in s:  # after the question, not of it ("Approach it as an investment banker would.")
            continue
        asked = asked or "?" in s
        kept.append(LEADING.sub("", LEAD_IN.sub("", s)))
    core = " ".join(kept) or text
    if any(re.search(r"percent|%", m.group(0), re.I) for m in PAREN.finditer(core)):
        core = re.sub(r"\b(change|growth|increase|decrease)\b", r"percentage \1", core, count=1, flags=re.I)
    core = PAREN.sub(" ", core)
    core = " ".join(core.split())
    if definition:
        name, _, expr = definition.partition(" = ")
        m = DIVIDED.match(expr)
        if m and not re.search(r"[*+()]|\baverage\b|\bchange\b", expr):
            return Read(_ratio_question(core, m["a"], m["b"], bool(re.search(r"%|percent", core, re.I))),
                        statements, definition, conditional=conditional)
    for names, name, a, b, percent in usual_ratios():  # the metric catalogue's (app/data/metrics.yaml)
        if names.search(core):
            return Read(core, statements, f"{name} = {a} / {b}", _ratio_question(core, a, b, percent), conditional)
    return Read(core, statements, definition, conditional=conditional)
