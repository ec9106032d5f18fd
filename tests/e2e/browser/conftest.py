"""Fixtures for the HTML report's browser tests: Debian's Chromium, driven by Playwright's Python API.

Real browser only: `/usr/bin/chromium` from Debian's `chromium` package (`.ci/run` installs it), launched
through `executable_path` (`playwright install` downloads a browser of its own and cannot work here),
headless, without network. A test handed `chromium` carries `@pytest.mark.browser`; under CI (CI=true)
a missing binary fails the test, elsewhere it is skipped with the install command (see
tests/support/external_support.py). Screenshots go to tests/e2e/browser/screenshots/ (git-ignored).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from external_support import binary

LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of Debian's Chromium."""
    return binary("browser", "chromium")


@pytest.fixture
def browser(chromium: str) -> Iterator[Any]:
    """A headless Chromium (one per test: a page's script cannot reach the next test's)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=LAUNCH_ARGS)
        try:
            yield launched
        finally:
            launched.close()
