"""Login by API key: the same key -> tenant map as the REST API (``service.tenant_for_key``).

The tenant lives in a per-session ``gr.State`` on the server, so a browser can never pick its tenant; every
handler gets it through :func:`require_tenant`. The key itself is remembered in the browser's
localStorage (``gr.BrowserState``, encrypted) so a returning visitor is logged in again and finds their
threads.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import gradio as gr

from app.schemas import MAX_QUESTION_CHARS

VISIT_STORAGE_KEY = "lexicon-visit"


def empty_visit() -> dict:
    """What the browser remembers: the API key and, per tenant, its threads (newest first)."""
    return {"api_key": "", "threads": {}, "current": {}}


def browser_secret(service: Any) -> str:
    """A per-deployment secret for encrypting the browser's stored state, stable across restarts.

    Kept in ``data_dir/ui_secret`` so a restarted server can still read what it stored; falls back to a
    per-process secret when the service exposes no settings (visitors then log in again after a restart).
    """
    settings = getattr(service, "settings", None)
    data_dir = getattr(settings, "data_dir", None)
    if data_dir is None:
        return secrets.token_urlsafe(24)
    path = Path(data_dir) / "ui_secret"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        secret = secrets.token_urlsafe(24)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secret)
        return secret
    except FileExistsError:  # another process wrote it between our read and create
        return path.read_text().strip()


def login(service: Any, api_key: str) -> tuple[dict | None, str]:
    """(session, message): session is ``{"tenant", "api_key"}`` when the key is known, else None."""
    key = (api_key or "").strip()
    if not key:
        return None, "Enter your API key."
    tenant = service.tenant_for_key(key)
    if not tenant:
        return None, "Unknown API key — access refused."
    return {"tenant": tenant, "api_key": key}, f"Logged in as tenant **{tenant}**."


def require_tenant(session: dict | None) -> str:
    """The logged-in tenant, or a visible error in the page."""
    if not session or not session.get("tenant"):
        raise gr.Error("Please log in with your API key first.")
    return session["tenant"]


def too_long_message(question: str, limit: int = MAX_QUESTION_CHARS) -> str:
    """A friendly note for a question over the length limit (the same limit as the REST API)."""
    return (f"Your question is {len(question):,} characters long; questions are limited to {limit:,} characters. "
            "Please shorten it (ask about one clause or figure at a time) and try again.")


def ask_limit(service: Any) -> int | None:
    """How many questions the UI answers at once (the REST API's limit); more wait in Gradio's queue."""
    settings = getattr(service, "settings", None)
    return getattr(settings, "ask_max_active", None)
