"""The decision API on the --http port: `GET /v1/verdicts?session=ID` answers a session's recent
verdicts (here a Codex CLI session sent as log records by the SDK's OTLP/HTTP log exporter), behind
the same token as the receivers, bounded in sessions, in verdicts per session and in bytes: names
from the wire are kept cut, an id no query can name is not kept, a session and the whole store keep
their latest verdicts within their bytes."""

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

from otelguard.service.sessions import MAX_SESSION_BYTES, RecentVerdicts
from service_support import TOKEN, _codex_session, _get, running_service


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


def test_a_session_id_longer_than_the_api_takes_is_not_kept() -> None:
    """An id no query can name (over 256 characters) costs nothing: 50 verdicts of a 64 KiB id."""
    recent = RecentVerdicts()
    long_id = "s" * (64 * 1024)
    for index in range(50):
        recent.add({"session": long_id, "repeat_count": index, "tool": "lookup"})
    assert recent.of(long_id) == [] and recent.bytes == 0


def test_long_names_from_the_wire_are_kept_cut() -> None:
    """A Codex session whose tool name is 64 KiB: the API answers its verdicts with the name cut to
    256 characters (saying how much was left out), the whole answer within a session's bound."""
    tool = "t" * (64 * 1024)
    with running_service(token=TOKEN) as service:
        provider = LoggerProvider(resource=Resource.create({"service.name": "s" * 1000}))
        provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(
            endpoint=service.http_url + "/v1/logs", headers={"Authorization": f"Bearer {TOKEN}"})))
        logger = provider.get_logger("codex_otel.log_only")
        for index in range(5):
            logger.emit(LogRecord(attributes={
                "event.name": "codex.tool_result", "conversation.id": "long-names", "tool_name": tool,
                "call_id": f"call-{index}", "arguments": "{}", "success": "true"}))
        provider.shutdown()
        assert service.flush()
        request = urllib.request.Request(f"{service.http_url}/v1/verdicts?session=long-names",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            text = answer.read()
    verdicts = json.loads(text)["verdicts"]
    assert [v["repeat_count"] for v in verdicts] == [2, 3, 4, 5]
    assert {v["tool"] for v in verdicts} == {"t" * 256 + f"… (+{64 * 1024 - 256:,} chars)"}
    assert all(len(v["service"]) < 300 for v in verdicts)
    assert len(text) < MAX_SESSION_BYTES


def test_a_session_keeps_its_latest_verdicts_within_its_bytes_and_the_store_within_its_own() -> None:
    recent = RecentVerdicts(session_bytes=4096, max_bytes=3 * 4096)
    for index in range(100):
        recent.add({"session": "a", "repeat_count": index, "message": "m" * 1000})
    kept = recent.of("a")
    assert [v["repeat_count"] for v in kept] == list(range(97, 100))  # three of ~1 KiB fit in 4 KiB
    for session in "bcd":
        for index in range(4):
            recent.add({"session": session, "repeat_count": index, "message": "m" * 1000})
    assert recent.bytes <= 3 * 4096
    assert recent.of("a") == [] and len(recent.of("d")) == 3  # the least recently heard from went first


def test_the_largest_verdict_fits_in_a_session() -> None:
    """Every text field at 100,000 four-byte characters: cut, it still fits in a session's bytes."""
    wide = "\U0001F600" * 100_000
    recent = RecentVerdicts()
    session = "s" * 256
    recent.add({**{key: wide for key in ("guard", "verdict", "rule", "action", "message", "tool", "error_code",
                                         "agent", "agent_key", "service", "trace_id", "span_id")},
                "session": session, "repeat_count": 1, "time": 1.0})
    [verdict] = recent.of(session)
    assert verdict["message"].startswith(wide[:4096]) and verdict["tool"].startswith(wide[:256])
    assert 0 < recent.bytes <= MAX_SESSION_BYTES
