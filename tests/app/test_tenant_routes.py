"""Every route of the real app, walked as tenant b while tenant a has one of everything: b gets nothing of a's.

The routes are enumerated from the FastAPI app itself (included routers, the /v1 engine routes and every
route of the mounted Gradio app). Each (method, path) needs a rule in :data:`RULES` saying how tenant b
reaches for a's data through it; **a route without a rule fails this test**, and so does a rule for a route
that no longer exists. Every new route needs an entry here (see docs/contracts.md).
"""
from __future__ import annotations

import re
import time
import uuid

import httpx
import pytest

from app_test_helpers import small_settings  # tests/app/app_test_helpers.py
from live_server import LiveServer, free_port  # tests/live_server.py
from tenant_gradio import drive_every_listener  # tests/app/tenant_gradio.py
from tenant_world import A, B, KEY_A, KEY_B, THREAD, World, build_world, wait_job

pytestmark = pytest.mark.slow


def app_routes(app) -> set[tuple[str, str]]:
    """(METHOD, full path) of every route, through included routers and mounts (HEAD only where alone)."""
    from starlette.routing import Mount

    found: dict[str, set[str]] = {}

    def add(path: str, route) -> None:
        methods = set(getattr(route, "methods", None) or {"WEBSOCKET" if "WebSocket" in type(route).__name__
                                                          else "ANY"})
        found.setdefault(path, set()).update(methods)

    def walk(routes, prefix: str) -> None:
        for r in routes:
            if hasattr(r, "effective_route_contexts"):  # FastAPI's included routers
                for ctx in r.effective_route_contexts():
                    add(prefix + ctx.path, ctx.original_route)
            elif isinstance(r, Mount):
                sub = getattr(r.app, "routes", None)
                walk(sub, prefix + r.path) if sub is not None else add(prefix + r.path, r)
            else:
                add(prefix + r.path, r)

    walk(app.routes, "")
    out = set()
    for path, methods in found.items():
        for m in methods:
            if m != "HEAD" or "GET" not in methods:
                out.add((m, path))
    return out


# ---- probes: each makes tenant b's requests through one route and checks what comes back --------------
def fill(template: str, **values) -> str:
    """Path parameters filled: the given values, else a harmless placeholder."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: str(values.get(m.group(1), "x")), template)


def public(w: World, method: str, path: str) -> None:
    """A route that needs no key: with and without b's key, its body holds nothing of a's."""
    url = fill(path, size="192", session_hash=uuid.uuid4().hex[:11], run="0", component_id="1", ext="ts",
               segment_id="0", event_id=uuid.uuid4().hex, api_name="lambda", key="x", endpoint="x",
               record_id="x", asset_id="x", id="x", environment="x", type="x", file_name="x", path="x",
               url_path="http://127.0.0.1:1/x")
    for headers in ({}, B):
        w.assert_clean(fetch(w, method, url, headers), f"{method} {path}")


def fetch(w: World, method: str, url: str, headers: dict, seconds: float = 3.0) -> str:
    """The body, or what an endless stream (heartbeat, queue, reload events) sent within ``seconds``."""
    body, deadline = b"", time.monotonic() + seconds
    try:
        with w.client.stream(method, url, headers=headers, json={} if method == "POST" else None,
                             timeout=httpx.Timeout(60, read=seconds)) as r:
            for chunk in r.iter_raw():
                body += chunk
                if time.monotonic() > deadline or len(body) > 4 << 20:
                    break
    except (httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError):
        pass  # an endless stream, or one the server broke off: what came before is the body
    return body.decode("utf-8", "replace")


def b_lists(w: World, method: str, path: str) -> None:
    r = w.client.request(method, path, headers=B)
    assert r.status_code == 200, (path, r.text)
    w.assert_clean(r.text, f"{method} {path}")
    assert w.client.request(method, path, headers={"X-API-Key": "nope"}).status_code == 401, path


def b_gets_a_item(w: World, method: str, path: str) -> None:
    """b names a's id (document, job, thread, batch job): 404, and the item is still a's."""
    ids = {"doc_id": w.doc_ids[0], "job_id": w.job_ids[0], "thread_id": THREAD}
    if "batch" in path:
        ids["job_id"] = w.batch_id
    url = fill(path, **ids)
    r = w.client.request(method, url, headers=B)
    assert r.status_code == 404, (method, url, r.status_code, r.text)
    w.assert_clean(r.text, f"{method} {path}", allow=tuple(ids.values()))
    if method in ("GET", "DELETE"):  # a still has it
        assert w.client.get(url if method == "GET" else "/api/documents", headers=A).status_code == 200


def b_uploads_a_name(w: World, method: str, path: str) -> None:
    """b uploads a file under a's document name: a new document of b's; nothing about a's version."""
    from tenant_world import MEMO

    from text_pdf import write_lines_pdf  # tests/text_pdf.py

    pdf = write_lines_pdf(w.settings.data_dir / "b-own.pdf", [["b's own text about gardening."]]).read_bytes()
    r = w.client.post(path, headers=B, files={"file": (MEMO, pdf, "application/pdf")})  # a real PDF: a .pdf
    assert r.status_code == 202, r.text
    assert not r.json().get("replaces"), r.json()  # a's document of that name is not b's to replace
    job = wait_job(w.client, B, r.json()["job_id"])
    assert job["documents"][0]["doc_id"] not in w.doc_ids
    w.assert_clean(r.text + repr(job), f"{method} {path}", allow=(MEMO,))
    assert [d["filename"] for d in w.client.get("/api/documents", headers=A).json()].count(MEMO) == 1


def b_asks(w: World, method: str, path: str) -> None:
    """b asks about a's memo and ledger in every mode, names a's documents and a's thread id."""
    for body in ({"question": "What is the project code name in the memo?", "mode": "rag"},
                 {"question": "Summarize the whole memo.", "mode": "long"},
                 {"question": "What was the Kestrel revenue in 2024?", "mode": "bi"},
                 {"question": "What is the settlement amount?", "mode": "auto", "doc_ids": w.doc_ids},
                 {"question": "What did I ask before?", "mode": "rag", "thread_id": THREAD}):
        r = w.client.post(path, headers=B, json=body)
        assert r.status_code in (200, 404, 422), r.text
        w.assert_clean(r.text, f"POST {path} {body}", allow=(THREAD, *w.doc_ids))
    history = w.client.get(f"/api/threads/{THREAD}", headers=B).json()  # b's own thread of that name
    w.assert_clean(repr(history), "b's thread named like a's", allow=(THREAD,))
    assert "Summarize the whole memo." in repr(w.client.get(f"/api/threads/{THREAD}", headers=A).json())


def b_batches_a_docs(w: World, method: str, path: str) -> None:
    r = w.client.post(path, headers=B, json={"questions": ["What is the code name?"], "doc_ids": w.doc_ids})
    assert r.status_code in (202, 404), r.text
    w.assert_clean(r.text, f"POST {path}", allow=tuple(w.doc_ids))
    if r.status_code == 202:
        job_id = r.json().get("id") or r.json()["job_id"]
        w.assert_clean(w.client.get(f"/api/batch/{job_id}", headers=B).text, "b's batch rows",
                       allow=tuple(w.doc_ids))


def b_adds_a_kind_name(w: World, method: str, path: str) -> None:
    """b adds a clause kind under a's kind's name: b's own; a's kind (and its description) unchanged."""
    from tenant_world import PLAYBOOK_KIND

    mine = {**PLAYBOOK_KIND, "description": "b's own covenant about gardening."}
    r = w.client.post(path, headers=B, json=mine)
    assert r.status_code == 201, r.text
    w.assert_clean(r.text, f"POST {path}", allow=(PLAYBOOK_KIND["name"],))
    a_kinds = w.client.get(path, headers=A).json()["kinds"]
    assert [k["description"] for k in a_kinds] == [PLAYBOOK_KIND["description"]], a_kinds
    assert w.client.delete(f"{path}/{PLAYBOOK_KIND['name']}", headers=B).status_code == 200  # b's own copy
    assert len(w.client.get(path, headers=A).json()["kinds"]) == 1


def b_removes_a_kind(w: World, method: str, path: str) -> None:
    """b removes a's clause kind by name: 404, and a still has it."""
    from tenant_world import PLAYBOOK_KIND

    r = w.client.delete(fill(path, name=PLAYBOOK_KIND["name"]), headers=B)
    assert r.status_code == 404, r.text
    w.assert_clean(r.text, f"{method} {path}", allow=(PLAYBOOK_KIND["name"],))
    assert [k["name"] for k in w.client.get("/api/playbook", headers=A).json()["kinds"]] == [PLAYBOOK_KIND["name"]]


def b_uses_a_snapshot(w: World, method: str, path: str) -> None:
    """/v1 with ``snapshot`` = a's name (as a sees it) or a's store key: the same 404 as a name never seen."""
    body = {"max_tokens": 4, **({"messages": [{"role": "user", "content": "Go on."}]} if "chat" in path
                                else {"prompt": "Repeat the memo:"})}
    unknown = w.client.post(path, headers=B, json={**body, "snapshot": "no-such-snapshot"})
    assert unknown.status_code == 404, unknown.text
    for name in (*w.snapshot_names, *w.snapshot_keys):
        for stream in (False, True):
            r = w.client.post(path, headers=B, json={**body, "snapshot": name, "stream": stream})
            assert r.status_code == 404, (path, name, r.status_code, r.text)
            assert r.json()["detail"].replace(repr(name), "N") == \
                unknown.json()["detail"].replace(repr("no-such-snapshot"), "N")
    own = w.client.post(path, headers=A, json={**body, "snapshot": w.snapshot_names[0]})
    assert own.status_code == 200, own.text  # the name is right: a reaches its own snapshot
    w.assert_clean(w.client.post(path, headers=B, json=body).text, f"POST {path} without snapshot")


def a_files(w: World, method: str, path: str) -> None:
    """Gradio's file routes asked for a's original uploads (absolute paths): nothing comes back."""
    for f in w.upload_files:
        for p in (str(f), str(f).lstrip("/")):
            r = w.client.request(method, fill(path, path_or_url=p, path=p, url_path=p), headers=B)
            assert r.status_code != 200 or not r.content or "kestrel" not in r.text.lower(), (path, p)
            w.assert_clean(r.text, f"{method} {path} for {p}", allow=(str(f), p))


def gradio_events(w: World, method: str, path: str) -> None:
    """The routes that run UI events (queue, call, run, stream): b fires every listener of the UI through
    them (once per module); the same route anonymously gets nothing either."""
    if not getattr(w, "ui_events_done", False):
        drive_every_listener(w)
        w.ui_events_done = True
    public(w, method, path)


UI = "/ui/gradio_api"
RULES = {
    ("GET", "/openapi.json"): public, ("GET", "/docs"): public, ("GET", "/docs/oauth2-redirect"): public,
    ("GET", "/redoc"): public, ("GET", "/health"): public, ("GET", "/metrics"): public,
    ("POST", "/api/documents"): b_uploads_a_name,
    ("GET", "/api/documents"): b_lists,
    ("DELETE", "/api/documents/{doc_id}"): b_gets_a_item,
    ("GET", "/api/documents/{doc_id}/versions"): b_gets_a_item,
    ("GET", "/api/jobs"): b_lists,
    ("GET", "/api/jobs/{job_id}"): b_gets_a_item,
    ("POST", "/api/ask"): b_asks,
    ("GET", "/api/threads"): b_lists,
    ("GET", "/api/threads/{thread_id}"): b_gets_a_item,
    ("POST", "/api/batch"): b_batches_a_docs,
    ("GET", "/api/batch"): b_lists,
    ("GET", "/api/batch/{job_id}"): b_gets_a_item,
    ("GET", "/api/batch/{job_id}/xlsx"): b_gets_a_item,
    ("GET", "/api/playbook"): b_lists,
    ("POST", "/api/playbook"): b_adds_a_kind_name,
    ("DELETE", "/api/playbook/{name}"): b_removes_a_kind,
    ("GET", "/v1/models"): b_lists,
    ("POST", "/v1/chat/completions"): b_uses_a_snapshot,
    ("POST", "/v1/completions"): b_uses_a_snapshot,
    # the mounted Gradio app: pages, assets and metadata hold no tenant data ...
    **{("GET", "/ui" + p): public for p in (
        "/openapi.json", "/logout", "/svelte/{path:path}", "/", "/config", "/config/", "/static/{path:path}",
        "/assets/{path:path}", "/favicon.ico", "/theme.css", "/robots.txt", "/pwa_icon/{size}", "/pwa_icon",
        "/manifest.json", "/monitoring", "/monitoring/summary", "/monitoring/{key}")},
    ("POST", "/ui/login"): public, ("POST", "/ui/login/"): public,
    **{("GET", UI + p): public for p in (
        "/deep_link", "/user", "/user/", "/login_check", "/login_check/", "/token", "/token/", "/app_id",
        "/app_id/", "/dev/reload", "/info", "/info/", "/openapi.json",
        "/custom_component/{id}/{environment}/{type}/{file_name}", "/heartbeat/{session_hash}",
        "/queue/status", "/upload_progress", "/startup-events", "/theme.css", "/vibe-code", "/vibe-code/",
        "/runs", "/runs/")},  # run history is off (app/server.py): the page says so, nothing is recorded
    **{("POST", UI + p): public for p in (
        "/reset", "/reset/", "/component_server", "/component_server/", "/upload", "/process_recording",
        "/vibe-edit", "/vibe-edit/", "/undo-vibe-edit", "/undo-vibe-edit/", "/vibe-code", "/vibe-code/",
        "/vibe-starter-queries", "/vibe-starter-queries/", "/cancel")},
    # ... the file routes never serve a's originals ...
    ("GET", UI + "/file={path_or_url:path}"): a_files,
    ("GET", UI + "/file/{path:path}"): a_files,
    ("GET", UI + "/proxy={url_path:path}"): a_files,
    # ... and the event routes run the UI's listeners, each of which b fires (tests/app/tenant_gradio.py)
    **{(m, UI + p): gradio_events for m, p in (
        ("POST", "/queue/join"), ("GET", "/queue/data"), ("POST", "/api/{api_name}"), ("POST", "/api/{api_name}/"),
        ("POST", "/run/{api_name}"), ("POST", "/run/{api_name}/"), ("POST", "/call/{api_name}"),
        ("POST", "/call/{api_name}/"), ("POST", "/call/v2/{api_name}"), ("POST", "/call/v2/{api_name}/"),
        ("GET", "/call/{api_name}/{event_id}"), ("GET", "/call/v2/{api_name}/{event_id}"),
        ("POST", "/stream/{event_id}"), ("POST", "/stream/{event_id}/close"),
        ("GET", "/stream/{session_hash}/{run}/{component_id}/playlist.m3u8"),
        ("GET", "/stream/{session_hash}/{run}/{component_id}/{segment_id}.{ext}"),
        ("GET", "/stream/{session_hash}/{run}/{component_id}/playlist-file"))},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from app.server import create_app

    settings = small_settings(tmp_path_factory.mktemp("tenants") / "data", keep_uploads=True,
                              api_keys={KEY_A: "a", KEY_B: "b"})
    app = create_app(settings)
    server = LiveServer(app, free_port()).start()
    with httpx.Client(base_url=server.url, timeout=600) as client:
        w = build_world(client, server.url, app.state.service, settings, tmp_path_factory.mktemp("a-files"))
        w.app = app
        yield w
    server.stop()


def test_every_route_has_a_tenant_rule(world):
    routes = app_routes(world.app)
    missing = sorted(routes - set(RULES))
    assert not missing, ("routes without a tenant rule in tests/app/test_tenant_routes.py RULES (say how tenant "
                         f"b reaches for tenant a's data through them): {missing}")
    stale = sorted(set(RULES) - routes)
    assert not stale, f"rules for routes the app no longer has (remove them): {stale}"
    spec = {p for p in world.app.openapi()["paths"]}
    assert spec <= {p for _, p in routes}, "the route walk missed documented routes"


@pytest.mark.parametrize("method,path", sorted(RULES), ids=lambda v: v)
def test_tenant_b_gets_nothing_of_a(world, method, path):
    if (method, path) not in app_routes(world.app):
        pytest.skip("route not in this app (test_every_route_has_a_tenant_rule says so)")
    RULES[(method, path)](world, method, path)


def test_a_still_has_everything(world):
    """The probes above reached for a's data; a's documents, tables, thread and snapshot are all still there."""
    docs = world.client.get("/api/documents", headers=A).json()
    assert sorted(d["id"] for d in docs if d["id"] in world.doc_ids) == sorted(world.doc_ids)
    assert world.client.get(f"/api/threads/{THREAD}", headers=A).status_code == 200
    assert [t.sql_name for t in world.service.kb.list_tables("a")] == world.table_names
