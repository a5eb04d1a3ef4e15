"""Long-context reading: when the relevant documents fit the engine's context budget, read them whole.

The documents go into the system message and that message becomes an engine snapshot named after the
dossier (tenant + the documents' text), so a follow-up question on the same dossier reuses the prefilled
context instead of paying for it again.

What the user reads rests on the text: a clause question about the dossier is answered extractively
(``nodes_rag.extractive_answer`` over the dossier's documents, verified); a summary is generated under a loop
guard (``repetition.guarded`` stops the model once it repeats itself) and each of its sentences picks the
sentence of the documents that supports it (shared content words, every figure and name in that sentence):
the user reads that document sentence, cited, never the paraphrase (which can flip what the text says while
keeping its words). When no point survives, the summary is the documents' own opening sentence of each
section, each cited. A summary of one topic ("summarize the termination rights") is the documents' sentences
that name the topic, in order, or says that the documents read do not mention it.
"""
from __future__ import annotations

import hashlib
import re

from langchain_core.runnables import RunnableConfig

from app import prompts
from app.agent import scope as scope_mod
from app.agent.clause_search import find_passages
from app.agent.clauses.playbook import taxonomy_for
from app.agent.frame import QuestionFrame, read_question
from app.agent.grounding import clean_answer
from app.agent.nodes_rag import extractive_answer, not_found
from app.agent.quotes import quote_spans
from app.agent.repetition import dedupe_sentences, guarded
from app.agent.state import AgentDeps, AgentState, cancel_event, citation, passage_dict
from app.agent.text import WORD, content_words, stem
from app.agent.verify import answer_in_span
from ingest.sentences import sentence_spans
from engine.snapshot import owned_name

MAX_DOSSIER_DOCS = 3
MAX_POINTS = 8
HEADING_LINE = re.compile(r"^\s*\d+(?:\.\d+)*\.?\s+([A-Z][^.;:\n]{0,60})\n")  # "12. Term and Termination\n"
SUMMARY_WORDS = content_words("summarize summarise summary overview overall whole entire read full text dossier key "
                              "main points terms say says about describe explain document documents filing report annual "
                              "quarterly form")


def dossier_name(tenant: str, system_text: str) -> str:
    """The engine snapshot key: in the tenant's namespace (``/v1`` callers see ``dossier-<hash>``)."""
    return owned_name(tenant, f"dossier-{hashlib.sha1(system_text.encode()).hexdigest()[:16]}")


def make_long_node(deps: AgentDeps):
    def pick_documents(state: AgentState, frame: QuestionFrame) -> list[str]:
        if state.get("doc_ids"):
            return list(state["doc_ids"])[:MAX_DOSSIER_DOCS]
        previous = [m for m in (state.get("messages") or [])[:-1] if m["role"] == "assistant"]
        if previous and (previous[-1].get("answer") or {}).get("route") == "long" and state.get("dossier_docs"):
            return list(state["dossier_docs"])  # a follow-up on the same dossier
        if frame.doc_ids:  # the documents the question names
            return list(frame.doc_ids)[:MAX_DOSSIER_DOCS]
        ids: list[str] = []
        for p in deps.kb.search(state["tenant"], frame.query, k=deps.settings.retrieval_k):
            if p.doc_id not in ids:
                ids.append(p.doc_id)
        return ids[:MAX_DOSSIER_DOCS]

    def clause_in_dossier(state: AgentState, frame: QuestionFrame, doc_ids: list[str],
                          passages: list[dict]) -> dict | None:
        kind = taxonomy_for(deps.kb, state["tenant"]).get(frame.clause_kind) if frame.clause_kind else None
        if kind is None or frame.wants_long:
            return None
        scope = scope_mod.Scope(doc_ids, frame.query, "", {})
        hits = [passage_dict(p) for p in find_passages(deps.kb, state["tenant"], frame.query, k=5,
                                                         doc_ids=doc_ids, scope=scope, kind=kind.name)]
        out = extractive_answer(kind, frame.query, hits) or not_found(frame.query, kind, hits)
        return {**out, "route": "long", "dossier_docs": doc_ids, "passages": passages, "clause_type": kind.name}

    def read_long(state: AgentState, config: RunnableConfig) -> dict:
        tenant, model = state["tenant"], deps.chat_model()
        frame = QuestionFrame.from_state(state.get("frame")) or read_question(
            deps.kb.for_tenant(tenant), state["question"], state.get("doc_ids"), "long")  # run alone
        doc_ids = pick_documents(state, frame)
        found = [p for d in doc_ids for p in deps.kb.document_passages(tenant, d)]
        if not found:
            return {"route": "rag", "fallback": "no documents to read"}
        passages = [passage_dict(p) for p in found]
        answered = clause_in_dossier(state, frame, doc_ids, passages)
        if answered is not None:
            return answered
        docs: dict[str, list[str]] = {}
        for p in found:
            docs.setdefault(p.filename, []).append(p.text)
        system = prompts.long_system([(name, "\n\n".join(texts)) for name, texts in docs.items()])
        history = [{"role": m["role"], "content": m["content"]} for m in (state.get("messages") or [])[:-1]][-2:]
        messages = [system, *history, {"role": "user", "content": state["question"]}]
        budget = model.max_model_len - deps.settings.max_new_tokens
        if model.count_tokens(messages) > budget:
            return {"route": "rag", "fallback": f"dossier exceeds the context budget of {budget} tokens"}
        topic = topic_words(state["question"], passages)
        if topic:  # a summary of one topic ("the termination rights"): the documents' own sentences about it
            points = topic_sentences(passages, topic[0])  # (nothing generated: the model would only pick them)
            if not points:
                return {"answer": f"The documents read do not say anything about {asked(state['question'], topic[0])}.",
                        "citations": [], "supported": False, "related": [], "route": "long", "dossier_docs": doc_ids,
                        "passages": passages}
        else:
            deltas = model.stream(messages, deps.settings.max_new_tokens,
                                  snapshot_key=dossier_name(tenant, system["content"]), cancel=cancel_event(config))
            draft = dedupe_sentences(clean_answer("".join(guarded(deltas))))
            points = cited_points(draft, passages) or outline(passages)
        answer = "\n".join(f"- {text} [{i}]" for i, (text, _c) in enumerate(points, 1))
        return {"answer": answer, "citations": [c for _t, c in points], "supported": bool(points), "related": [],
                "route": "long", "dossier_docs": doc_ids, "passages": passages}

    return read_long


def _sentences(passages: list[dict]):
    for p in passages:
        for a, b in quote_spans(p["text"]):
            yield p, p["text"][a:b].strip()


def topic_words(question: str, passages: list[dict]) -> list[str]:
    """What the question adds to "summarize these documents" (its topic, stemmed, in the question's order; the
    first is the key: "termination" in "termination rights", "arbitration" in "arbitration rules"): empty for a
    whole-document summary. Summary words, the documents' file names and names the question capitalizes that
    the documents contain (the company, "NDA": the subject, not a topic) are not a topic."""
    titles = content_words(" ".join({re.sub(r"[_\-.]+", " ", p["filename"]) for p in passages}))
    names = content_words(" ".join(re.findall(r"(?<!^)\b[A-Z][A-Za-z]*", question.strip())))
    if names:
        names &= content_words(" ".join(p["text"] for p in passages))
    keep = content_words(question) - SUMMARY_WORDS - titles - names
    out: list[str] = []
    for w in WORD.findall(question.lower()):
        s = stem(w)
        if s in keep and not s.isdigit() and s not in out:
            out.append(s)
    return out


def asked(question: str, key: str) -> str:
    """The question's own word for a topic key word (``topic_words`` found it there)."""
    return next(question[m.start():m.end()] for m in WORD.finditer(question.lower()) if stem(m.group()) == key)


def topic_sentences(passages: list[dict], key: str) -> list[tuple[str, dict]]:
    """The documents' own sentences that name the topic's key word, in document order (verbatim quotes, cited);
    a section heading at the start of a quote does not count (it names the section, not the sentence)."""
    points: list[tuple[str, dict]] = []
    for p, quote in _sentences(passages):
        section = (p.get("section") or "").strip()
        body = quote[len(section):] if section and quote.startswith(section) else _drop_heading(quote)
        if key in content_words(body) and all(quote != q for q, _c in points):
            points.append((quote, citation(p, quote)))
            if len(points) >= MAX_POINTS:
                break
    return points


def _drop_heading(quote: str) -> str:
    """A quote without its leading numbered heading line in title case ("12. Term and Termination")."""
    m = HEADING_LINE.match(quote)
    if m and all(w[0].isupper() for w in re.findall(r"[A-Za-z]{4,}", m.group(1))):
        return quote[m.end():]
    return quote


def cited_points(draft: str, passages: list[dict]) -> list[tuple[str, dict]]:
    """The document sentences that support a generated summary's sentences: (the document's sentence, its
    citation). The generated sentence only picks them: a paraphrase can flip what the text says ("starts" ->
    "ends") while keeping its words and figures, so the user reads the text itself."""
    source = list(_sentences(passages))
    points: list[tuple[str, dict]] = []
    for a, b in sentence_spans(draft):
        sentence = draft[a:b].strip()
        words = content_words(sentence)
        if len(words) < 3:
            continue
        best, best_overlap = None, 0
        for p, quote in source:
            overlap = len(words & content_words(quote))
            if overlap > best_overlap:
                best, best_overlap = (p, quote), overlap
        if best is None or best_overlap < max(3, len(words) // 2):
            continue
        ok, _missing = answer_in_span(sentence, [best[1]])
        if ok and all(best[1] != q for q, _c in points):
            points.append((best[1], citation(best[0], best[1])))
        if len(points) >= MAX_POINTS:
            break
    return points


def outline(passages: list[dict]) -> list[tuple[str, dict]]:
    """The documents' own opening sentence of each section (each a verbatim quote, cited)."""
    points, seen = [], set()
    for p in passages:
        key = (p["doc_id"], p.get("section") or "")
        if key in seen:
            continue
        seen.add(key)
        spans = quote_spans(p["text"])
        if spans:
            quote = p["text"][spans[0][0]:spans[0][1]].strip()
            points.append((quote, citation(p, quote)))
        if len(points) >= MAX_POINTS:
            break
    return points
