"""The CLI beside a running server: find it, and do ``ingest`` / ``ask`` / ``batch`` through its REST API.

``lexicon serve`` writes ``DATA_DIR/server.json`` (its URL and pid) and removes it on exit. A CLI command on
the same data dir finds the file, checks that the process lives and that ``/health`` answers, and then talks
to that server instead of opening the stores itself (the embedded vector store belongs to one process).
``LEXICON_SERVER_URL`` names a server explicitly. The API key: ``--api-key``, else ``LEXICON_API_KEY``, else
the settings' key for the chosen tenant.
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import httpx

SERVER_FILE = "server.json"
POLL_S = 0.5


class RemoteError(RuntimeError):
    """A problem talking to the server, with the message to print."""


def server_file(settings) -> Path:
    return Path(settings.data_dir) / SERVER_FILE


def write_server_file(settings, host: str, port: int) -> Path:
    path = server_file(settings)
    connect = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    path.write_text(json.dumps({"url": f"http://{connect}:{port}", "pid": os.getpid(),
                                "started_at": datetime.now(timezone.utc).isoformat()}))
    return path


def remove_server_file(settings) -> None:
    path = server_file(settings)
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError, TypeError):
        return False


def healthy(url: str, timeout: float = 3.0) -> bool:
    try:
        r = httpx.get(url.rstrip("/") + "/health", timeout=timeout)
        return r.status_code == 200 and r.json().get("status") == "ok"
    except (httpx.HTTPError, ValueError):
        return False


def find_server(settings) -> Optional[str]:
    """The URL of the server using this data dir (or ``LEXICON_SERVER_URL``), None when none runs.

    Raises RemoteError when a server holds the data dir but does not answer."""
    explicit = os.environ.get("LEXICON_SERVER_URL", "").strip()
    if explicit:
        if not healthy(explicit):
            raise RemoteError(f"LEXICON_SERVER_URL={explicit} does not answer /health; start it or unset the variable")
        return explicit.rstrip("/")
    path = server_file(settings)
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not _alive(info.get("pid")):
        return None  # a stale file from a server that was killed
    url = str(info.get("url") or "")
    if healthy(url):
        return url
    raise RemoteError(f"a lexicon server (pid {info.get('pid')}) holds {settings.data_dir} but {url}/health does "
                      "not answer; wait for it to finish starting, or stop it, then run this command again")


def api_key(settings, tenant: str, explicit: Optional[str] = None) -> str:
    key = explicit or os.environ.get("LEXICON_API_KEY", "").strip()
    if key:
        return key
    for k, t in settings.api_keys.items():
        if t == tenant:
            return k
    raise RemoteError(f"no API key for tenant {tenant!r}: pass --api-key or set LEXICON_API_KEY")


class Client:
    def __init__(self, url: str, key: str, timeout: float = 600.0):
        self.url = url
        self.http = httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kw) -> httpx.Response:
        """A request, waiting out 429s (Retry-After) up to 10 minutes; errors become RemoteError."""
        deadline = time.monotonic() + 600
        while True:
            try:
                r = self.http.request(method, path, **kw)
            except httpx.HTTPError as exc:
                raise RemoteError(f"the server at {self.url} did not answer {method} {path}: {exc}") from exc
            if r.status_code == 429 and time.monotonic() < deadline:
                time.sleep(min(30.0, float(r.headers.get("retry-after") or 5)))
                continue
            if r.status_code == 401:
                raise RemoteError(f"the server at {self.url} refused the API key (pass --api-key or set LEXICON_API_KEY)")
            if r.status_code >= 400:
                try:
                    detail = r.json().get("detail")
                except ValueError:
                    detail = r.text[:300]
                raise RemoteError(f"{method} {path}: {r.status_code} {detail}")
            return r

    # ---- documents --------------------------------------------------------------------------------
    def upload(self, path: Path, name: str) -> dict:
        with open(path, "rb") as f:
            return self.request("POST", "/api/documents", files={"file": (name, f)}).json()

    def wait_job(self, job_id: str) -> dict:
        while True:
            job = self.request("GET", f"/api/jobs/{job_id}").json()
            if job["status"] not in ("pending", "running"):
                return job
            time.sleep(POLL_S)


def ingest_files(client: Client, paths: list[Path], console) -> list[dict]:
    """Upload every file (folders expanded) and wait for each ingestion; one result dict per file."""
    from ingest.jobs import expand_paths

    from app.batch import progress_bar

    files = expand_paths([Path(p) for p in paths])
    results = []
    with progress_bar(console) as bar:
        task = bar.add_task("files", total=len(files))
        for path, name in files:
            bar.update(task, description=name)
            if not path.is_file():
                results.append({"filename": name, "status": "failed", "error": "no such file"})
            else:
                job = client.wait_job(client.upload(path, name)["job_id"])
                doc = (job.get("documents") or [{}])[0]
                results.append({"filename": name, "status": doc.get("status", job["status"]),
                                "error": doc.get("error"), "doc_id": doc.get("doc_id"), "pages": doc.get("pages"),
                                "chunks": doc.get("chunks"), "tables": doc.get("tables")})
            bar.update(task, advance=1)
    return results


def remote_ingest(client: Client, paths: list[Path], console) -> int:
    from rich.table import Table

    results = ingest_files(client, paths, console)
    if not results:
        console.print("[red]no files to ingest[/red]")
        return 2
    table = Table("file", "status", "pages", "chunks", "tables", "error", title=f"ingested through {client.url}")
    for r in results:
        table.add_row(r["filename"], r["status"], *(str(r.get(k) or "") for k in ("pages", "chunks", "tables")),
                      r.get("error") or "")
    console.print(table)
    return 1 if any(r["status"] == "failed" for r in results) else 0


def remote_ask(client: Client, question: str, mode: str, thread: Optional[str], console) -> int:
    from app.ask_command import print_final

    body = {"question": question, "mode": mode, "stream": True, **({"thread_id": thread} if thread else {})}
    final, streamed = None, []
    try:
        with client.http.stream("POST", "/api/ask", json=body) as r:
            if r.status_code != 200:
                r.read()
                try:
                    detail = r.json().get("detail")
                except ValueError:
                    detail = r.text[:300]
                console.print(f"[red]{r.status_code}: {detail}[/red]", highlight=False)
                return 2 if r.status_code == 422 else 1
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if event["type"] == "token":
                    streamed.append(event["text"])
                    console.print(event["text"], end="", markup=False, highlight=False)
                elif event["type"] == "error":
                    console.print(f"\n[red]{event['message']}[/red]", highlight=False)
                    return 1
                elif event["type"] == "final":
                    final = event["answer"]
    except httpx.HTTPError as exc:
        raise RemoteError(f"the server at {client.url} did not answer: {exc}") from exc
    if final is None:
        console.print("[red]the answer stream ended without a final answer[/red]")
        return 1
    console.print()
    print_final(console, final, "".join(streamed))
    return 0


def remote_batch(client: Client, docs: Path, questions: list[dict], out: Path, console) -> int:
    from app.batch import PartialOutput, job_key, progress_bar, write_output

    results = ingest_files(client, [docs], console)
    for r in results:
        if r["status"] == "failed":
            console.print(f"[yellow]skipped {r['filename']}: {r.get('error')}[/yellow]")
    doc_ids = [r["doc_id"] for r in results if r["status"] != "failed" and r.get("doc_id")]
    if not doc_ids:
        console.print("[red]no document of the folder could be ingested[/red]")
        return 1
    job = client.request("POST", "/api/batch", json={"questions": questions, "doc_ids": doc_ids,
                                                     "key": job_key(docs, out)}).json()
    partial = PartialOutput(out)
    try:
        with progress_bar(console) as bar:
            task = bar.add_task("questions", total=job["total"])
            while True:
                job = client.request("GET", f"/api/batch/{job['id']}", params={"rows": False}).json()
                bar.update(task, completed=job["done"] + job["failed"], total=job["total"])
                if job["status"] not in ("pending", "running"):
                    break
                if partial.due(job["done"] + job["failed"]):  # the rows so far, in case the server dies
                    partial.write(client.request("GET", f"/api/batch/{job['id']}").json())
                time.sleep(POLL_S)
        job = client.request("GET", f"/api/batch/{job['id']}").json()
    except RemoteError as exc:
        kept = f"the {partial.written} rows answered before are in {out}" if partial.written > 0 else \
            f"no row was answered yet, {out} is not written"
        raise RemoteError(f"{exc}\n{kept}; the job {job['id']} is kept on the server and resumes when it starts "
                          "again: run the same command then to finish it") from exc
    write_output(out, job)
    failed = f", {job['failed']} failed (see their error column)" if job["failed"] else ""
    console.print(f"{job['done']} answered{failed} ({job['total']} pairs) in {out} [dim]· through {client.url}[/dim]")
    return 0 if job["status"] == "done" else 1
