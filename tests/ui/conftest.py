"""Browser-test harness: the real app under uvicorn, one headless Chromium per module, failure screenshots.

Chromium is Debian's (``/usr/bin/chromium``, installed by ``scripts/test-services.sh``), driven by the
python ``playwright`` package; ``playwright install`` is never needed.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_harness import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS  # tests/ui/browser_harness.py


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item so fixtures can see whether the test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def save_screenshot(page, name: str) -> Path | None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".png")
    try:
        page.screenshot(path=str(path), full_page=True)
    except Exception:  # the page may be gone (browser crash); the test failure says why
        return None
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test-services.sh (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def screenshot_on_failure(request):
    """Register pages; after a failed test each is saved as tests/artifacts/<test>[-n].png."""
    pages = []
    yield pages.append
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for i, page in enumerate(pages):
            path = save_screenshot(page, request.node.name + (f"-{i}" if i else ""))
            if path:
                print(f"screenshot saved: {path}")
