"""What the browser tests share: where screenshots go, and the check that a page drew hostile input
as text alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paths import TESTS

SCREENSHOTS = TESTS / "e2e" / "browser" / "screenshots"  # git-ignored
# Elements and attributes a payload would need to do anything: none may come from the input.
_INERT_COUNTS = """() => ({
    injected: document.querySelectorAll('img, svg, iframe, object, embed, frame, base, link, form, meta[http-equiv=refresh]').length,
    handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
    hrefs: [...document.querySelectorAll('[href]')].map(e => e.getAttribute('href')).filter(h => !/^#run-\\d+(-[vs]-\\d+)?$/.test(h)),
    runnable: [...document.querySelectorAll('script')].filter(s => s.type !== 'application/json').length,
})"""


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


def assert_inert(page: Any, scripts_before: int, payloads: list[str]) -> None:
    """No payload ran (`window.__pwned` unset) or added a script, element, handler or link; each of
    `payloads` is on the page as text."""
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('script').length") == scripts_before
    assert page.evaluate(_INERT_COUNTS) == {"injected": 0, "handlers": 0, "hrefs": [], "runnable": 1}
    text = page.inner_text("body")
    for payload in payloads:
        assert payload in text, "shown as text"
