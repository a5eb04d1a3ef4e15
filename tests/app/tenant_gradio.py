"""Tenant b drives every event of the web UI through Gradio's own API (the routes the browser uses).

Every event listener of the Blocks must have an entry in :data:`EVENTS` (keyed by the element id of its
trigger and the trigger name, which stay put when handlers are added or renamed): a new listener without
one fails the route test. Each entry gives the values of the listener's non-state inputs, chosen to reach
for tenant a's data (a's thread id in the browser's remembered state, a's document id to delete, questions
about a's memo and ledger).
"""
from __future__ import annotations

import httpx

from tenant_world import KEY_B, THREAD, World  # tests/app/tenant_world.py

ASK_B = "What is the project code name and the settlement amount in the memo?"
BI_B = "What was the Kestrel revenue in 2024?"


def visit_reaching_for_a(w: World) -> dict:
    """A browser state that names a's thread as b's own (what b could craft in its localStorage)."""
    return {"api_key": "", "threads": {"b": [{"id": THREAD, "title": "x"}]}, "current": {"b": THREAD}}


EVENTS = {  # trigger -> (args of the non-state inputs, what b may see echoed because b sent it)
    "login-button.click": lambda w: ([KEY_B, visit_reaching_for_a(w)], (THREAD,)),
    "login-key.submit": lambda w: ([KEY_B, visit_reaching_for_a(w)], (THREAD,)),
    "load": lambda w: ([visit_reaching_for_a(w)], (THREAD,)),
    "chat-send.click": lambda w: ([ASK_B, "long", visit_reaching_for_a(w)], (THREAD,)),
    "chat-question.submit": lambda w: ([ASK_B, "rag", visit_reaching_for_a(w)], (THREAD,)),
    "chat-thread.input": lambda w: ([THREAD, visit_reaching_for_a(w)], (THREAD,)),
    "lib-upload.click": lambda w: ([[_b_file(w)]], ()),
    "lib-delete.click": lambda w: ([w.doc_ids[0]], (w.doc_ids[0],)),
    "lib-refresh.click": lambda w: ([], ()),
    "bi-ask.click": lambda w: ([BI_B, "auto"], ()),
    "bi-question.submit": lambda w: ([BI_B, "table"], ()),
    "bi-kind.input": lambda w: (["bar"], ()),
    "bi-kpi-refresh.click": lambda w: ([], ()),
    "engine-refresh.click": lambda w: ([], ()),
    "engine-live.change": lambda w: ([True], ()),
    "timer.tick": lambda w: ([], ()),
    "tab-engine.select": lambda w: ([], ()),
    "logout-button.click": lambda w: ([visit_reaching_for_a(w)], (THREAD,)),
}
LAST = ("logout-button.click",)  # logging out ends the session: after everything else


def _b_file(w: World):
    """b uploads a file of its own (the same-name case is the REST probe's)."""
    from gradio_client import handle_file

    path = w.settings.data_dir.parent / "b-notes.txt"
    path.write_text("Tenant b's own note about nothing in particular.\n")
    return handle_file(str(path))


def listeners(url: str) -> list[tuple[int, str, list[str]]]:
    """(fn_index, trigger key, input component types) of every event listener of the mounted Blocks."""
    cfg = httpx.get(f"{url}/ui/config", timeout=60).json()
    comps = {c["id"]: c for c in cfg["components"]}
    out = []
    for i, dep in enumerate(cfg["dependencies"]):
        for target, trigger in dep["targets"]:
            comp = comps.get(target, {})
            name = (comp.get("props") or {}).get("elem_id") or comp.get("type") or ""
            key = "load" if trigger == "load" else f"{name}.{trigger}"
            out.append((i, key, [comps.get(c, {}).get("type", "?") for c in dep["inputs"]]))
    return out


def drive_every_listener(w: World, allow_extra: tuple = ()) -> dict[str, str]:
    """Log in as b through the Gradio API and fire every listener; -> trigger key -> what came back."""
    from gradio_client import Client

    found = listeners(w.url)
    missing = sorted({key for _, key, _ in found} - set(EVENTS))
    assert not missing, (f"UI event listeners without a tenant rule in tests/app/tenant_gradio.py EVENTS: {missing}"
                         " (add what tenant b should send to reach for tenant a's data)")
    client = Client(f"{w.url}/ui/", verbose=False)
    seen: dict[str, str] = {}
    order = sorted(found, key=lambda f: (f[1] in LAST, not f[1].startswith("login")))
    for fn_index, key, _types in order:
        args, echoes = EVENTS[key](w)
        try:
            result = client.predict(*args, fn_index=fn_index)
        except Exception as exc:  # a refusal is fine; its message must not leak either
            result = f"error: {exc}"
        seen[key] = repr(result)
        w.assert_clean(seen[key], f"UI event {key} (fn {fn_index})", allow=echoes + allow_extra)
    return seen
