"""Helpers for the browser tests: Chromium launch settings and the app served under uvicorn in a thread."""
from __future__ import annotations

from pathlib import Path

from live_server import LiveServer, free_port  # noqa: F401  (tests/live_server.py)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
