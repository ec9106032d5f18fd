"""Helpers for tests of `otelguard serve`: a service on ephemeral ports, and its metrics read back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

from otelguard.service import GuardService, JudgeOptions, ServiceOptions

ANY_PORT = ("127.0.0.1", 0)


@contextmanager
def running_service(config: Any = None, *, grpc: bool = False, forward: str | None = None,
                    judge: JudgeOptions | None = None, **kwargs: Any) -> Iterator[GuardService]:
    """A started service on free ports (gRPC only when asked), stopped on exit. Keyword arguments
    naming a `ServiceOptions` field (token, tls, ...) set it; the others go to `GuardService`."""
    fields = {key: kwargs.pop(key) for key in list(kwargs) if key in ServiceOptions.__dataclass_fields__}
    options = ServiceOptions(http=ANY_PORT, grpc=ANY_PORT if grpc else None, metrics=ANY_PORT, forward=forward,
                             judge=judge or JudgeOptions(tick_s=0.05), **fields)
    service = GuardService(config, options, **kwargs)
    service.start()
    try:
        yield service
    finally:
        service.stop()


@contextmanager
def serving(server: Any) -> Iterator[Any]:
    """A `socketserver` server (a test's own HTTP endpoint) serving on a thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_command(*args: str) -> Iterator[tuple[subprocess.Popen, str]]:
    """`otelguard serve ARGS` as a process: yields it and the first line it printed (what it listens
    on); `stopped(process)` ends it as SIGTERM does. Killed on exit if still running."""
    process = subprocess.Popen([sys.executable, "-m", "otelguard", "serve", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        yield process, process.stdout.readline()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def stopped(process: subprocess.Popen) -> tuple[str, str]:
    """SIGTERM, then what the process printed (stdout, stderr) once it exited."""
    process.send_signal(signal.SIGTERM)
    return process.communicate(timeout=30)


def scrape(service: GuardService) -> dict[str, list[Any]]:
    """The service's /metrics as Prometheus parses it: metric family name -> samples."""
    with urllib.request.urlopen(service.metrics_url, timeout=5) as answer:
        text = answer.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def verdict_counts(service: GuardService, service_name: str | None = None) -> Counter[tuple[str, str, str]]:
    """(guard, rule, action) -> verdicts counted in /metrics, for one sender or all."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for sample in scrape(service).get("otelguard_verdicts", []):
        if not sample.name.endswith("_total"):
            continue
        labels = sample.labels
        if service_name is not None and labels.get("service_name") != service_name:
            continue
        if sample.value:
            counts[labels["otelguard_guard"], labels["otelguard_rule"], labels["otelguard_action"]] += int(sample.value)
    return counts


def post(service: GuardService, path: str, body: bytes, content_type: str = "application/x-protobuf",
         **headers: str) -> tuple[int, bytes, dict[str, str]]:
    """POST to the service's HTTP receiver; (status, body, headers), errors included."""
    request = urllib.request.Request(service.http_url + path, data=body, method="POST",
                                     headers={"Content-Type": content_type, **headers})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


# --- what an agent sends the service ------------------------------------------------------------------

REMIND = ("repeat-tool-reminder", "repeat-threshold", "remind")
COUNTING = ("repeat-tool-reminder", "repeat-threshold", "none")


def tool_loop(tracer, calls: int = 5) -> None:
    """An agent run calling the same tool with the same arguments `calls` times."""
    with tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
        for _ in range(calls):
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": '{"city": "Paris"}'}):
                pass


def send_with(exporter, service_name: str, calls: int = 5) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tool_loop(provider.get_tracer("agent"), calls)
    provider.shutdown()


def _request_json(spans: list[dict]) -> bytes:
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-agent"}}]},
        "scopeSpans": [{"scope": {"name": "hand"}, "spans": spans}]}]}).encode()


def _tool_span(span_id: str, trace_id: str = "5b8efff798038103d269b633813fc60c") -> dict:
    return {"traceId": trace_id, "spanId": span_id, "name": "execute_tool lookup",
            "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                           {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}}]}


def sender(resource) -> str | None:
    return {entry.key: entry.value.string_value for entry in resource.attributes}.get("service.name")


TOKEN = "api-token"


def _get(service, query: str, token: str | None = TOKEN) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"{service.http_url}/v1/verdicts{query}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {}


def _codex_session(service, conversation: str, calls: int) -> None:
    provider = LoggerProvider(resource=Resource.create({"service.name": "codex_exec"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(
        endpoint=service.http_url + "/v1/logs", headers={"Authorization": f"Bearer {TOKEN}"})))
    logger = provider.get_logger("codex_otel.log_only")
    for index in range(calls):
        logger.emit(LogRecord(attributes={
            "event.name": "codex.tool_result", "conversation.id": conversation, "tool_name": "exec_command",
            "call_id": f"{conversation}-{index}", "arguments": '{"cmd": "ls -la"}', "success": "true"}))
    provider.shutdown()
