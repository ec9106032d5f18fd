"""The HTML report in a real browser (headless Chromium): every acting verdict of `analyze --json`
is on the page at its run and step with its action and loop cost, a step opens on its content, the
keyboard moves between steps, and hostile strings in every field stay text: no element injected, no
script run, no request made."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from browser_support import assert_inert, screenshot
from html_report_support import CORPUS, CORPUS_QUIET, CORPUS_WITH_VERDICTS, HOSTILE, PAYLOADS, looping_run, write_traces

from otelguard.cli import main

pytestmark = pytest.mark.browser


def _analyze(files: list[str], page: Path, *extra: str) -> dict[str, Any]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["analyze", *files, "--json", "--html", str(page), *extra])
    assert code in (0, 1)
    return json.loads(out.getvalue())


def _open(browser: Any, path: Path, hash_: str = "") -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
            if message.type in ("error", "warning") else None)
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda request: problems.append(f"request: {request.url}")
            if request.url.split("#")[0] != path.as_uri() else None)
    page.goto(path.as_uri() + hash_)
    page.wait_for_selector("body[data-ready='1']")
    return page, problems


def test_every_acting_verdict_is_at_its_run_and_step_with_its_action_and_cost(browser: Any, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    document = _analyze([str(CORPUS / name) for name in (*CORPUS_WITH_VERDICTS, *CORPUS_QUIET)], report)
    page, problems = _open(browser, report)
    acting = [v for v in document["verdicts"] if v["action"] != "none"]
    assert acting
    for verdict in acting:
        # the run: its section holds the agent's key as text
        section = page.locator("section.run", has=page.get_by_text(verdict["agent_key"], exact=True))
        assert section.count() == 1
        item = section.locator(f"li.verdict[data-step='{verdict['step']}']")
        assert item.count() >= 1
        text = item.first.inner_text()
        assert verdict["action"].upper() in text.upper() and verdict["rule"] in text and f"step {verdict['step']}" in text
        agent = next(a for a in document["agents"] if a["key"] == verdict["agent_key"])
        loop = next(l for l in agent["loops"] if l["first_step"] <= verdict["step"] <= l["last_step"])
        assert f"{loop['input_tokens']:,} tokens in" in text
        assert f"${loop['cost_usd']:,.4f}".rstrip("0") in text or f"${loop['cost_usd']:,.2f}" in text
        assert re.search(r"stopped|continued", text)
        # its step: the link opens the timeline there, and the step opens on its arguments and result
        item.first.get_by_role("link", name=f"step {verdict['step']}").click()
        step = page.locator(f"details.step[open] >> text=#{verdict['step']}")
        assert step.count() == 1
        body = page.locator("details.step[open] .stepbody").first
        assert "arguments (" in body.inner_text() and "result (" in body.inner_text()
        first_evidence = verdict["evidence"][0]
        assert first_evidence["arguments_preview"].split('"')[3][:20] in body.inner_text()
    # the quiet run is in the index only
    quiet_rows = page.locator("#run-index tbody tr.index-only")
    assert quiet_rows.count() == len(document["agents"]) - len({v["agent_key"] for v in acting})
    # keyboard: j moves to the next step, Enter opens it
    page.locator("details.step > summary").first.focus()
    page.keyboard.press("j")
    focused = page.evaluate("document.activeElement.parentElement.id")
    assert re.fullmatch(r"run-\d+-s-\d+", focused)
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.parentElement.open")
    screenshot(page, "corpus-verdict")
    assert problems == []


def test_filter_and_sort_by_loop_cost(browser: Any, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    _analyze([str(CORPUS / name) for name in (*CORPUS_QUIET, *CORPUS_WITH_VERDICTS)], report)
    page, problems = _open(browser, report)
    rows = page.locator("#run-index tbody tr")
    assert rows.count() == 2 and "index-only" in (rows.first.get_attribute("class") or "")
    page.keyboard.press("s")  # sort by loop cost: the looping run first
    assert "has-timeline" in (page.locator("#run-index tbody tr").first.get_attribute("class") or "")
    page.keyboard.press("f")  # runs with loops only
    assert page.locator("#run-index tbody tr").count() == 1
    assert problems == []


def test_hostile_strings_run_nothing_and_inject_nothing(browser: Any, tmp_path: Path) -> None:
    arguments = json.dumps({"q": HOSTILE, "url": "javascript:window.__pwned = 11"})
    traces = write_traces(tmp_path / "hostile.jsonl", looping_run(
        agent=HOSTILE, tool=HOSTILE, arguments=arguments, result=HOSTILE, text=HOSTILE, conversation=HOSTILE,
        model=HOSTILE), scope=HOSTILE)
    named = tmp_path / "<img src=x onerror=window.__pwned=12>.jsonl"
    named.write_bytes(traces.read_bytes())
    report = tmp_path / "report.html"
    _analyze([str(traces), str(named)], report)
    page, problems = _open(browser, report)
    before = page.evaluate("document.querySelectorAll('script').length")
    # draw every timeline and open every step
    for button in page.locator("button.show").all():
        button.click()
    for summary in page.locator("details.step > summary").all():
        summary.click()
    page.locator("details.files > summary").click()
    assert page.locator("details.step[open]").count() >= 10
    assert_inert(page, before, PAYLOADS[:6])
    screenshot(page, "hostile")
    assert problems == []
