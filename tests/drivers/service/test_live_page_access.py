"""The live page of a running `otelguard serve`, over HTTP: what `/` and its data answer, with the
report's Content-Security-Policy as a header; with a token, who may read them (the bearer header or
the page's cookie, set by the login form: HttpOnly, SameSite=Strict, Secure under TLS) and what the
cookie does not open; sessions the page forgets are counted in the metrics."""

from __future__ import annotations

import http.client
import json
import re
import ssl
import urllib.parse
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from html_report_support import csp_of
from service_support import running_service, scrape
from tls_support import self_signed

TOKEN = "page-token-0123456789"


def _tool_loop(service: Any, conversation: str, *, token: str | None = None, calls: int = 5) -> None:
    """An agent run of the same tool call `calls` times, through the SDK's OTLP/HTTP exporter."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    exporter = OTLPSpanExporter(endpoint=service.http_url + "/v1/traces", headers=headers)
    provider = TracerProvider(resource=Resource.create({"service.name": "page-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
            "gen_ai.conversation.id": conversation}):
        for _ in range(calls):
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": '{"city": "Paris"}', "gen_ai.tool.call.result": "sunny"}):
                pass
    provider.shutdown()


def _request(service: Any, method: str, path: str, body: bytes | None = None, context: ssl.SSLContext | None = None,
             **headers: str) -> tuple[int, dict[str, str], bytes]:
    address = urllib.parse.urlsplit(service.http_url)
    connection = (http.client.HTTPSConnection(address.hostname, address.port, context=context, timeout=5) if context
                  else http.client.HTTPConnection(address.hostname, address.port, timeout=5))
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, {name.lower(): value for name, value in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def _login(service: Any, token: str, context: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], bytes]:
    return _request(service, "POST", "/login", urllib.parse.urlencode({"token": token}).encode(), context,
                    **{"Content-Type": "application/x-www-form-urlencoded"})


def test_the_page_carries_the_reports_policy_as_a_header_and_its_data_shows_the_loop() -> None:
    with running_service() as service:
        _tool_loop(service, "conv-1")
        assert service.flush()
        status, headers, body = _request(service, "GET", "/")
        assert status == 200 and headers["content-type"].startswith("text/html")
        meta = csp_of(body.decode())
        assert headers["content-security-policy"] == meta + "; frame-ancestors 'none'"
        assert "default-src 'none'" in meta and "connect-src 'self'" in meta and "form-action 'none'" in meta
        assert re.search(r"script-src 'nonce-[A-Za-z0-9_-]+'", meta)
        assert (headers["cache-control"], headers["x-content-type-options"], headers["x-frame-options"]) == (
            "no-store", "nosniff", "DENY")
        status, headers, body = _request(service, "GET", "/live/data")
        assert status == 200 and headers["content-type"] == "application/json"
        index = json.loads(body)
        [row] = index["runs"]
        # [number, label, key, runs, model, tool, acting, flagged, loops, ..., session, version, paused]
        assert (row[1], row[3], row[5], row[6], row[8], row[16], row[18]) == ("planner", 1, 5, 2, 1, "conv-1", False)
        status, _, body = _request(service, "GET", f"/live/runs/{row[0]}")
        run = json.loads(body)
        assert [(v[2], v[7], v[6]) for v in run["verdicts"]] == [(3, "remind", "repeat-threshold"),
                                                                 (5, "remind", "repeat-threshold")]
        assert [step[0] for step in run["steps"]] == [1, 2, 3, 4, 5]
        assert _request(service, "GET", "/live/runs/999")[0] == 404


def test_with_a_token_the_page_asks_for_it_and_its_cookie_opens_the_page_and_nothing_else() -> None:
    with running_service(token=TOKEN) as service:
        _tool_loop(service, "conv-1", token=TOKEN)
        assert service.flush()
        status, headers, body = _request(service, "GET", "/")
        assert status == 401 and b'<form method="post" action="/login"' in body and b"nonce" not in body.split(b"<form")[1]
        assert "form-action 'self'" in headers["content-security-policy"]
        assert _request(service, "GET", "/live/data")[0] == 401
        assert _request(service, "GET", f"/live/data?token={TOKEN}")[0] == 401  # never from a URL
        assert _request(service, "GET", "/live/data", Authorization=f"Bearer {TOKEN}")[0] == 200
        assert _login(service, "wrong")[0] == 401
        status, headers, _ = _login(service, TOKEN)
        assert status == 303 and headers["location"] == "/"
        cookie = headers["set-cookie"]
        name_value, *attributes = [part.strip() for part in cookie.split(";")]
        assert TOKEN not in name_value
        assert {attribute.lower() for attribute in attributes} == {"httponly", "path=/", "samesite=strict"}
        assert _request(service, "GET", "/", Cookie=name_value)[0] == 200
        assert _request(service, "GET", "/live/data", Cookie=name_value)[0] == 200
        assert _request(service, "GET", "/live/runs/1", Cookie=name_value)[0] == 200
        # the cookie opens no receiver, API or hook route
        assert _request(service, "GET", "/v1/verdicts?session=conv-1", Cookie=name_value)[0] == 401
        assert _request(service, "POST", "/v1/sessions/conv-1/pause", b"", Cookie=name_value)[0] == 401
        assert _request(service, "POST", "/v1/traces", b"", Cookie=name_value,
                        **{"Content-Type": "application/x-protobuf"})[0] == 401
        assert _request(service, "GET", "/live/data", Cookie=name_value[:-1] + "0")[0] == 401
        refused = {s.labels["reason"]: s.value for s in scrape_with_token(service)["otelguard_service_refused_requests"]
                   if s.name.endswith("_total")}
        assert refused["unauthenticated"] >= 7


def scrape_with_token(service: Any) -> dict[str, list[Any]]:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    request = urllib.request.Request(service.metrics_url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        text = answer.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_a_login_form_with_more_fields_than_the_token_is_read() -> None:
    """A form is read whatever other fields it carries (a browser extension's, a password manager's):
    the right token signs in, a wrong one is refused, neither is a server error."""
    form = {"user": "me", "remember": "1", "a": "x", "b": "y", "token": TOKEN, "c": "z"}
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    with running_service(token=TOKEN) as service:
        assert _request(service, "POST", "/login", urllib.parse.urlencode(form).encode(), **headers)[0] == 303
        form["token"] = "wrong"
        assert _request(service, "POST", "/login", urllib.parse.urlencode(form).encode(), **headers)[0] == 401


def test_under_tls_the_cookie_is_secure(tmp_path: Path) -> None:
    from otelguard.service.access import TlsFiles

    certificate = self_signed(tmp_path)
    context = ssl.create_default_context(cafile=str(certificate.cert))
    with running_service(token=TOKEN, tls=TlsFiles(str(certificate.cert), str(certificate.key))) as service:
        status, headers, _ = _login(service, TOKEN, context)
        assert status == 303
        assert "secure" in {part.strip().lower() for part in headers["set-cookie"].split(";")}


def test_sessions_the_page_forgets_are_counted_in_the_metrics() -> None:
    with running_service(page_sessions=2) as service:
        for conversation in ("a", "b", "c"):
            _tool_loop(service, conversation, calls=2)
        assert service.flush()
        index = json.loads(_request(service, "GET", "/live/data")[2])
        assert [row[16] for row in index["runs"]] == ["b", "c"] and index["head"]["counts"]["evicted"] == 1
        evictions = {(s.labels["otelguard_state"], s.labels["reason"]): s.value
                     for s in scrape(service)["otelguard_state_evictions"] if s.name.endswith("_total")}
        assert evictions[("page_sessions", "capacity")] == 1 and evictions[("page_sessions", "bytes")] == 0


def test_without_the_page_slash_is_not_found() -> None:
    with running_service(page_sessions=0) as service:
        assert _request(service, "GET", "/")[0] == 404
        assert _request(service, "GET", "/live/data")[0] == 404
