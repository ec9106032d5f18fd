"""The live page of `otelguard serve` in a real browser (headless Chromium): looping runs sent by the
OTel SDK's OTLP/HTTP exporter to a running service appear on `/` while it is open, with their verdicts
and loop cost; with a token the page asks for it once and keeps it in an HttpOnly, SameSite=Strict
cookie, never in a URL; a paused session shows as paused; hostile strings arriving while the page is
open stay text: no element injected, no script run, no request but the page's own."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from browser_support import assert_inert, screenshot
from html_report_support import HOSTILE, PAYLOADS
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otelguard.engine.pricing import wait_until_loaded
from service_support import running_service

pytestmark = pytest.mark.browser
# The report's hostile strings, less the lone surrogate: OTLP's protobuf strings are UTF-8, which has none
# (the report's own tests carry it through OTLP/JSON; the page's JSON escapes it alike, `json_for_html`).
HOSTILE = HOSTILE.replace("\ud800", "")


@pytest.fixture(autouse=True, scope="module")
def _price_table() -> None:
    """The price table loaded before the runs come (the service never waits for it: a loop judged
    before it has loaded is shown as not priced, and says so)."""
    assert wait_until_loaded(timeout=30)

TOKEN = "live-page-token-0123456789"
WAIT_MS = 20_000  # the page polls every 2 s; the judge judges a trace within a tick or two of its root


def send_looping_run(service: Any, *, agent: str, conversation: str, tool: str = "lookup",
                     arguments: str = '{"q": "same"}', result: str = "nothing new", text: str = "Let me look again.",
                     model: str = "gpt-4o", calls: int = 5, token: str | None = None, scope: str = "agent") -> None:
    """One agent run through the SDK's OTLP/HTTP exporter: `calls` rounds of a model call asking for
    `tool` with the same arguments and the tool answering `result` (reminded at the 3rd and 5th)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    provider = TracerProvider(resource=Resource.create({"service.name": "live-page-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces",
                                                                     headers=headers)))
    tracer = provider.get_tracer(scope)
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": conversation}):
        for call in range(calls):
            output = [{"role": "assistant", "parts": [
                {"type": "text", "content": text},
                {"type": "tool_call", "id": f"c{call}", "name": tool, "arguments": json.loads(arguments)}]}]
            with tracer.start_as_current_span(f"chat {model}", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.response.model": model,
                    "gen_ai.usage.input_tokens": 1000 + call, "gen_ai.usage.output_tokens": 50,
                    "gen_ai.output.messages": json.dumps(output)}):
                pass
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": f"c{call}",
                    "gen_ai.tool.call.arguments": arguments, "gen_ai.tool.call.result": result}):
                pass
    provider.shutdown()


def _watch(browser: Any, origin: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
            if message.type in ("error", "warning") and "401" not in message.text else None)
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda request: problems.append(f"request: {request.url}")
            if not request.url.startswith(origin + "/") else None)
    return context, page, problems


def _section_of(page: Any, name: str) -> Any:
    return page.locator("section.run", has=page.locator(".run-name", has_text=name))


def test_runs_sent_over_otlp_appear_with_verdicts_and_cost_after_logging_in_with_the_token(browser: Any) -> None:
    with running_service(token=TOKEN) as service:
        context, page, problems = _watch(browser, service.http_url)
        page.goto(service.http_url + "/")
        # the token is asked for once, by a form; a wrong one is refused
        page.fill("#token", "not-the-token")
        page.click("#login button")
        assert page.locator("#login-failed").count() == 1
        page.fill("#token", TOKEN)
        page.click("#login button")
        page.wait_for_selector("body[data-ready='1']", timeout=WAIT_MS)
        assert TOKEN not in page.url and "token" not in page.url
        [cookie] = context.cookies()
        assert (cookie["httpOnly"], cookie["sameSite"], cookie["secure"], cookie["path"]) == (True, "Strict", False, "/")
        assert TOKEN not in cookie["value"]
        assert page.evaluate("document.cookie") == ""  # not readable by the page's script
        assert page.locator("section.run").count() == 0

        # runs arrive while the page is open
        send_looping_run(service, agent="billing-bot", conversation="conv-billing", token=TOKEN)
        send_looping_run(service, agent="search-bot", conversation="conv-search", tool="search", token=TOKEN)
        assert service.flush()
        for name in ("billing-bot", "search-bot"):
            section = _section_of(page, name)
            section.locator("li.verdict").nth(1).wait_for(timeout=WAIT_MS)
            items = section.locator("li.verdict")
            assert items.count() == 2
            for at, step in enumerate((6, 10)):  # the 3rd and 5th tool call (model and tool steps alternate)
                text = items.nth(at).inner_text()
                assert "REMIND" in text.upper() and "repeat-threshold" in text and f"step {step}" in text
                assert "tokens in" in text and "$" in text, text  # the loop's spend, priced (gpt-4o)
        rows = page.locator("#run-index tbody tr")
        assert rows.count() == 2
        assert all("$" in rows.nth(at).inner_text() for at in range(2))

        # a timeline opens on a step's content
        section = _section_of(page, "billing-bot")
        section.locator("li.verdict").first.get_by_role("link", name="step 6").click()
        body = page.locator("details.step[open] .stepbody").first
        body.wait_for(timeout=WAIT_MS)
        assert "arguments (" in body.inner_text() and "nothing new" in body.inner_text()

        # pausing a session (the API, with the bearer token) shows on the page
        request = urllib.request.Request(service.http_url + "/v1/sessions/conv-search/pause", data=b"", method="POST",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert json.loads(answer.read())["paused"] is True
        _section_of(page, "search-bot").locator(".badge.paused").wait_for(timeout=WAIT_MS)
        assert _section_of(page, "billing-bot").locator(".badge.paused").count() == 0
        assert page.locator("#run-index tr.is-paused").count() == 1
        screenshot(page, "live-page")
        assert problems == []
        context.close()


def test_hostile_strings_arriving_while_the_page_is_open_inject_nothing(browser: Any) -> None:
    arguments = json.dumps({"q": HOSTILE, "url": "javascript:window.__pwned = 11"})
    with running_service() as service:
        context, page, problems = _watch(browser, service.http_url)
        page.goto(service.http_url + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=WAIT_MS)
        before = page.evaluate("document.querySelectorAll('script').length")
        send_looping_run(service, agent=HOSTILE, conversation=HOSTILE, tool=HOSTILE, arguments=arguments, result=HOSTILE,
                         text=HOSTILE, model=HOSTILE, scope=HOSTILE)
        send_looping_run(service, agent="calm-bot", conversation="calm")  # the page goes on updating after it
        assert service.flush()
        _section_of(page, "calm-bot").locator("li.verdict").nth(1).wait_for(timeout=WAIT_MS)
        page.locator("section.run li.verdict").nth(3).wait_for(timeout=WAIT_MS)
        for button in page.locator("button.show").all():
            button.click()
        for summary in page.locator("details.step > summary").all():
            summary.click()
        assert page.locator("details.step[open]").count() >= 20
        page.wait_for_timeout(2500)  # a poll more, redrawing the open timelines
        assert_inert(page, before, PAYLOADS[:6])
        screenshot(page, "live-hostile")
        assert problems == []
        context.close()
