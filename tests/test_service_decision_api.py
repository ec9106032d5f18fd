"""The decision API on the --http port: `GET /v1/verdicts?session=ID` answers a session's recent
verdicts (here a Codex CLI session sent as log records by the SDK's OTLP/HTTP log exporter), behind
the same token as the receivers, bounded in sessions and in verdicts per session."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

from otelguard.service.sessions import RecentVerdicts
from service_support import running_service

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


def test_a_sessions_recent_verdicts_are_answered() -> None:
    with running_service(token=TOKEN) as service:
        _codex_session(service, "conversation-1", 5)
        _codex_session(service, "conversation/2 ?&", 3)
        assert service.flush()
        status, answer = _get(service, "?session=conversation-1")
        assert status == 200 and answer["session"] == "conversation-1"
        verdicts = answer["verdicts"]
        assert [(v["action"], v["repeat_count"]) for v in verdicts] == [("none", 2), ("remind", 3), ("none", 4),
                                                                       ("remind", 5)]
        assert {v["session"] for v in verdicts} == {"conversation-1"}
        # Each with the steps that made it (the session's calls: its CLI's tool calls), none paused.
        assert [[entry["step"] for entry in v["evidence"]] for v in verdicts] == [[1, 2], [1, 2, 3], [1, 2, 3, 4],
                                                                                 [1, 2, 3, 4, 5]]
        assert {entry["arguments_preview"] for v in verdicts for entry in v["evidence"]} == {'{"cmd":"ls -la"}'}
        assert not any(v["paused"] for v in verdicts)
        assert {v["service"] for v in verdicts} == {"codex_exec"} and {v["tool"] for v in verdicts} == {"exec_command"}
        other = _get(service, "?" + urllib.parse.urlencode({"session": "conversation/2 ?&"}))[1]["verdicts"]
        assert [(v["action"], v["repeat_count"]) for v in other] == [("none", 2), ("remind", 3)]
        assert _get(service, "?session=never-seen") == (200, {"session": "never-seen", "paused": False, "verdicts": []})
        assert _get(service, "")[0] == 400
        assert _get(service, "?session=" + "x" * 257)[0] == 400
        assert _get(service, "?session=conversation-1", token=None)[0] == 401


def test_recent_verdicts_are_bounded() -> None:
    recent = RecentVerdicts(max_sessions=2, per_session=3)
    for index in range(5):
        recent.add({"session": "a", "repeat_count": index})
    recent.add({"session": "b", "repeat_count": 0})
    recent.add({"session": None, "repeat_count": 0})  # no session: not kept
    assert [v["repeat_count"] for v in recent.of("a")] == [2, 3, 4]
    recent.add({"session": "a", "repeat_count": 5})  # heard from: most recent again
    recent.add({"session": "c", "repeat_count": 0})  # the least recently heard from (b) is forgotten
    assert recent.of("b") == [] and [v["repeat_count"] for v in recent.of("a")] == [3, 4, 5]
    assert len(recent.of("c")) == 1
