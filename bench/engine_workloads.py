"""Prompts for the engine benchmark (bench/bench_engine.py): the synthetic clause list, RAG-shaped questions
over passages of real contracts, and a long dossier.

The real text is CUAD's contracts in ``../shared/eval/cuad-dev/txt``, read at run time (never copied into the
repository); without that folder the RAG and dossier workloads are skipped with a message.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

CUAD_TXT = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "cuad-dev" / "txt"
TOPICS = ["a supply contract", "a quarterly balance sheet", "a lease agreement", "an audit report",
          "a loan covenant", "a merger agreement", "an insurance policy", "a cash-flow statement"]
# (question, words that mark a passage as retrieved for it)
QUESTIONS = [("Which law governs this agreement, and where are disputes resolved?", ("governed", "law", "court")),
             ("How can a party terminate this agreement?", ("terminat", "notice", "breach")),
             ("What must be paid, and when?", ("pay", "fee", "invoice", "days")),
             ("What does the agreement say about confidential information?", ("confidential", "disclos")),
             ("Who are the parties to this agreement?", ("between", "party", "parties", "company")),
             ("How long does the agreement last, and does it renew?", ("term", "renew", "year", "expir")),
             ("Is any party's liability limited?", ("liab", "damages", "indemn")),
             ("Can a party assign this agreement?", ("assign", "transfer", "consent"))]
SYSTEM = ("You answer questions about contracts using only the passages given. Quote the passage text that "
          "answers the question word for word, in quotation marks, and name its passage number.")


def synthetic_prompts(tokenizer, n: int, prompt_tokens: int) -> list[list[int]]:
    """Repeated numbered clauses (high prompt-lookup acceptance: the continuation is in the prompt)."""
    prompts = []
    for i in range(n):
        text = f"Document {i}: {TOPICS[i % len(TOPICS)]}. " + " ".join(
            f"Clause {j}: the party {chr(65 + (i + j) % 26)} pays {100 + 7 * j + i} EUR on day {j % 28 + 1}."
            for j in range(400))
        prompts.append(tokenizer.encode(text)[:prompt_tokens])
    return prompts


def contracts(min_chars: int = 20_000) -> list[tuple[str, str]]:
    """(name, text) of the CUAD dev contracts with at least ``min_chars`` characters, sorted by name."""
    if not CUAD_TXT.is_dir():
        return []
    out = []
    for p in sorted(CUAD_TXT.glob("*.txt")):
        text = re.sub(r"\s+", " ", p.read_text(encoding="utf-8", errors="replace")).strip()
        if len(text) >= min_chars:
            out.append((p.stem, text))
    return out


def passages(text: str, size: int = 600) -> list[str]:
    """The text cut at sentence ends into passages of about ``size`` characters."""
    out, cur = [], ""
    sentences = []
    for sent in re.split(r"(?<=[.;:])\s+", text):  # a run-on "sentence" (a table, a list) is cut at words
        words = sent.split(" ")
        while len(" ".join(words)) > size:
            n = next(i for i in range(1, len(words) + 1) if len(" ".join(words[:i])) > size)
            sentences.append(" ".join(words[:max(1, n - 1)]))
            words = words[max(1, n - 1):]
        sentences.append(" ".join(words))
    for sent in sentences:
        if cur and len(cur) + len(sent) > size:
            out.append(cur)
            cur = ""
        cur = f"{cur} {sent}".strip()
    if cur:
        out.append(cur)
    return out


def retrieve(chunks: list[str], words: tuple[str, ...], k: int) -> list[str]:
    """The k passages where the question's words occur most (a stand-in for hybrid retrieval), in text order."""
    scored = sorted(range(len(chunks)), key=lambda i: -sum(chunks[i].lower().count(w) for w in words))[:k]
    return [chunks[i] for i in sorted(scored)]


def rag_prompts(tokenizer, n: int, prompt_tokens: int) -> Optional[list[list[int]]]:
    """n chat prompts: a question over passages of a real contract retrieved for it, about
    ``prompt_tokens`` tokens each (passages are added while they fit). None without the CUAD folder."""
    docs = contracts()
    if not docs:
        return None
    prompts = []
    for i in range(n):
        name, text = docs[(3 * i) % len(docs)]
        question, words = QUESTIONS[i % len(QUESTIONS)]
        chunks = passages(text)
        chosen: list[str] = []
        ids: list[int] = []
        for k in range(1, len(chunks) + 1):
            picked = retrieve(chunks, words, k)
            body = "\n\n".join(f"[{j + 1}] {p}" for j, p in enumerate(picked))
            msgs = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": f"Passages from {name}:\n\n{body}\n\nQuestion: {question}"}]
            cand = tokenizer.apply_chat_template(msgs, add_generation_prompt=True)
            if len(cand) > prompt_tokens and ids:
                break
            chosen, ids = picked, cand
        prompts.append(ids)
    return prompts


def dossier(tokenizer, tokens: int) -> Optional[tuple[list[int], list[int], list[int]]]:
    """(full prompt, snapshot prefix, continuation) of a dossier of about ``tokens`` tokens: real contracts in
    the system message (the part a snapshot keeps, as app/llm_client.py does) and a question after it."""
    docs = contracts()
    if not docs:
        return None
    parts: list[str] = []
    for name, text in docs:
        parts.append(f"## {name}\n{text}")
        if len(tokenizer.encode("\n\n".join(parts))) > tokens:
            break
    body = "\n\n".join(parts)
    ids = tokenizer.encode(body)[:tokens - 120]
    system = {"role": "system", "content": "You review this dossier of contracts.\n\n" + tokenizer.decode(ids)}
    user = {"role": "user", "content": "Summarize the governing law and the termination rights of each contract."}
    full = tokenizer.apply_chat_template([system, user], add_generation_prompt=True)
    prefix = tokenizer.apply_chat_template([system], add_generation_prompt=False)
    if full[:len(prefix)] != prefix:
        raise RuntimeError("the chat template does not render the system message as a prefix")
    return full, prefix, full[len(prefix):]
