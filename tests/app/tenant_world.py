"""Two tenants on one real server, tenant a with one of everything (shared by the tenant-isolation tests).

Tenant a (key-a) owns: a PDF memo with a code word, a CSV ledger (-> a SQL table), their ingestion jobs,
a conversation thread, a long-mode answer (-> an engine snapshot of the memo), a batch job with a row,
and (``keep_uploads``) the original upload files on disk. Tenant b (key-b) owns nothing at first.
Every identifier and every piece of content of a's is unusual enough that finding it in a response can
only mean a leak: :meth:`World.assert_clean` looks for all of them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from text_pdf import write_lines_pdf  # tests/text_pdf.py

KEY_A, KEY_B = "key-a", "key-b"
A, B = {"X-API-Key": KEY_A}, {"X-API-Key": KEY_B}
CODE_WORD = "QZX7731KESTREL"
AMOUNT = "77319811"
MEMO = "aq7731-kestrel-memo.pdf"
LEDGER = "aq7731-kestrel-ledger.csv"
THREAD = "athread7731kestrel"
LEDGER_CSV = f"Line item,2023,2024\nKestrel revenue,{AMOUNT},77319822\nKestrel cost,77319833,77319844\n"


def write_memo_pdf(path: Path) -> Path:
    return write_lines_pdf(path, [[
        "CONFIDENTIAL SETTLEMENT MEMORANDUM", f"The project code name is {CODE_WORD}.",
        f"The settlement amount agreed with the counterparty is {AMOUNT} dollars.",
        "This memorandum is privileged and must not be shared outside the matter team."]])


def wait_job(client: httpx.Client, headers: dict, job_id: str, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}", headers=headers).json()
        if job["status"] == "done":
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} not done after {timeout} s")


@dataclass
class World:
    url: str
    client: httpx.Client
    service: object
    settings: object
    doc_ids: list[str] = field(default_factory=list)
    job_ids: list[str] = field(default_factory=list)
    table_names: list[str] = field(default_factory=list)
    batch_id: str = ""
    snapshot_names: list[str] = field(default_factory=list)  # as tenant a sees them (without namespace)
    snapshot_keys: list[str] = field(default_factory=list)  # the engine's store keys
    upload_files: list[Path] = field(default_factory=list)

    def secrets(self) -> list[str]:
        out = [CODE_WORD, AMOUNT, "77319822", "kestrel", "aq7731", THREAD, *self.doc_ids, *self.job_ids,
               *self.table_names, *self.snapshot_names, *self.snapshot_keys, *map(str, self.upload_files)]
        if self.batch_id:
            out.append(self.batch_id)
        out += [n.split("-", 1)[-1] for n in self.snapshot_names]  # the dossier hash alone
        return [s for s in out if s]

    def assert_clean(self, text, where: str, allow: tuple = ()) -> None:
        """``text`` (a response body) holds nothing of tenant a's; ``allow``: ids b itself sent (echoes)."""
        body = text if isinstance(text, str) else repr(text)
        low = body.lower()
        for secret in self.secrets():
            if secret in allow or any(secret in a or a in secret for a in allow if len(a) >= 8):
                continue
            assert secret.lower() not in low, f"{where}: tenant b sees {secret!r} of tenant a:\n{body[:2000]}"


PLAYBOOK_KIND = {"name": "kestrel covenant", "description": "The aq7731 covenant of the Kestrel project.",
                 "wordings": ["shall keep the kestrel covenant"], "headings": ["kestrel"], "answer": "clause"}


def build_world(client: httpx.Client, url: str, service, settings, tmp: Path) -> World:
    w = World(url, client, service, settings)
    memo = write_memo_pdf(tmp / MEMO)
    for name, data, mime in ((MEMO, memo.read_bytes(), "application/pdf"),
                             (LEDGER, LEDGER_CSV.encode(), "text/csv")):
        r = client.post("/api/documents", headers=A, files={"file": (name, data, mime)})
        assert r.status_code == 202, r.text
        job = wait_job(client, A, r.json()["job_id"])
        assert job["documents"][0]["status"] == "ingested", job
        w.job_ids.append(job["job_id"])
        w.doc_ids.append(job["documents"][0]["doc_id"])
    w.table_names = [t.sql_name for t in service.kb.list_tables("a")]
    assert w.table_names, "the ledger gave no SQL table"
    # a thread whose answer reads the whole memo: an engine snapshot of a's text
    r = client.post("/api/ask", headers=A, json={"question": "Summarize the whole memo.", "mode": "long",
                                                 "thread_id": THREAD, "doc_ids": [w.doc_ids[0]]})
    assert r.status_code == 200 and r.json()["route"] == "long", r.text
    w.snapshot_names = list(service.engine_stats("a")["snapshot_names"])
    w.snapshot_keys = [k for k in service.llm.stats()["snapshot_names"]]
    assert w.snapshot_names and w.snapshot_keys, "the long answer left no snapshot"
    r = client.post("/api/batch", headers=A, json={"questions": ["What is the project code name?"],
                                                   "doc_ids": [w.doc_ids[0]]})
    assert r.status_code == 202, r.text
    w.batch_id = r.json().get("id") or r.json()["job_id"]
    deadline = time.monotonic() + 600
    while client.get(f"/api/batch/{w.batch_id}", headers=A).json()["status"] in ("queued", "pending", "running"):
        assert time.monotonic() < deadline, "batch job did not finish"
        time.sleep(0.3)
    w.upload_files = [p for p in (settings.data_dir / "uploads").rglob("*") if p.is_file()]
    assert len(w.upload_files) == 2, w.upload_files  # keep_uploads: the originals stay while the docs do
    r = client.post("/api/playbook", headers=A, json=PLAYBOOK_KIND)  # a clause kind of a's own
    assert r.status_code == 201, r.text
    return w
