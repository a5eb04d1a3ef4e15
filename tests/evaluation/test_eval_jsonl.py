"""``lexicon eval`` end to end on a tiny user JSONL set: a generated contract PDF, real ingest, the agent's
real retriever; the rerun resumes from the journal; the CLI prints the table and writes JSON."""
from __future__ import annotations

import json

import pytest

CLAUSES = [
    ("1. Services", "The Supplier shall provide hosting and maintenance services for the Customer platform."),
    ("2. Fees", "The Customer shall pay a monthly fee of USD 12,500 within thirty days of each invoice."),
    ("3. Term", "This Agreement begins on the Effective Date and continues for three years unless terminated."),
    ("4. Confidentiality", "Each party shall keep the other party's confidential information secret."),
    ("5. Limitation of Liability", "The total liability of the Supplier shall not exceed the fees paid in the "
                                   "twelve months before the claim."),
    ("6. Governing Law", "This Agreement shall be governed by the laws of the State of Delaware."),
]


def write_contract(path):
    from reportlab.lib.pagesizes import letter
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    story = [Paragraph("Hosting Services Agreement between Acme Hosting Inc. and Beta Retail LLC", styles["Title"])]
    for i, (head, body) in enumerate(CLAUSES):
        story += [Paragraph(head, styles["Heading2"]), Paragraph(body, styles["BodyText"])]
        if i == 2:
            story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=letter).build(story)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("evalset")
    write_contract(root / "hosting.pdf")
    rows = [
        {"id": "law", "question": "Which state's law governs the agreement?", "doc": "hosting.pdf",
         "evidence": CLAUSES[5][1], "answer": "Delaware"},
        {"id": "cap", "question": "What is the cap on the supplier's liability?", "doc": "hosting.pdf",
         "evidence": [CLAUSES[4][1]], "page": 2},
        {"id": "fee", "question": "How much is the monthly fee?", "doc": "hosting.pdf",
         "evidence": CLAUSES[1][1], "answer": "12,500"},
    ]
    (root / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return root


def test_retrieval_only_run_and_resume(dataset, tmp_path, monkeypatch):
    from app.evaluation import command
    from app.evaluation.command import eval_command
    from app.evaluation.journal import journal_path
    from app.settings import Settings

    # pin the code fingerprints: other edits to the working tree during the test must not look like a new run
    monkeypatch.setattr(command, "ingest_fingerprint", lambda *a: "pinned-index")
    monkeypatch.setattr(command, "run_fingerprint", lambda *a: "pinned-run")
    settings = Settings(data_dir=tmp_path / "data")
    out = tmp_path / "res.json"
    res = eval_command(settings, dataset, retrieval_only=True, out=out, progress=False, quiet=True)
    summary = res["summary"]
    assert res["config"]["kind"] == "jsonl" and res["config"]["retriever"] == "agent retrieve node"
    assert summary["n_questions"] == 3 and summary["documents"]["ingested"] == 1
    ret = summary["retrieval"]
    assert ret["doc_hit@1"] == 1.0
    assert ret["recall@5"] == 1.0  # a one-document, six-clause contract: every clause is in the top 5
    assert ret["recall@1"] >= 1 / 3
    assert ret["latency_p50_s"] > 0
    data = json.loads(out.read_text())
    assert {r["id"] for r in data["records"]} == {"law", "cap", "fee"}
    assert all(r["rank"] is not None for r in data["records"])
    journal = journal_path(out)
    lines = journal.read_text().splitlines()
    assert len(lines) == 3
    again = eval_command(settings, dataset, retrieval_only=True, out=out, progress=False, quiet=True)
    assert journal.read_text().splitlines() == lines  # resumed: nothing asked again
    assert again["summary"]["retrieval"] == summary["retrieval"]


def test_bad_dataset_is_a_clear_error(tmp_path):
    from app.evaluation.command import eval_command
    from app.settings import Settings

    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a dataset folder"):
        eval_command(Settings(data_dir=tmp_path / "d"), tmp_path / "empty", progress=False, quiet=True)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "q.jsonl").write_text('{"question": "x?", "doc": "missing.pdf"}\n')
    with pytest.raises(ValueError, match="not found beside the JSONL"):
        eval_command(Settings(data_dir=tmp_path / "d"), bad, progress=False, quiet=True)


@pytest.mark.slow
def test_agent_answers_are_scored(dataset, tmp_path):
    """The real agent (embedded SmolLM2) answers; every metric of the answers block is computed."""
    from app.evaluation.command import eval_command
    from app.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", max_new_tokens=24, engine_max_model_len=4096,
                        engine_memory_gib=1.0, engine_max_num_seqs=4)
    res = eval_command(settings, dataset, mode="rag", out=tmp_path / "a.json", progress=False, quiet=True)
    ans = res["summary"]["answers"]
    assert ans["n"] == 3 and ans["errors"] == 0
    assert ans["latency_p50_s"] > 0 and 0 <= ans["supported_rate"] <= 1
    assert ans["accuracy"] is not None and ans["not_found_rate"] is not None
    if ans["citation_verbatim"] is not None:  # the agent quotes the ingested text verbatim
        assert ans["citation_verbatim"] == 1.0
    records = json.loads((tmp_path / "a.json").read_text())["records"]
    assert all("answer" in r for r in records)
