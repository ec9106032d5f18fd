"""`otelguard hook <cli>` with `OTELGUARD_URL`: a running `otelguard serve` decides the call
(`POST /v1/hook/<cli>`), by the same path the hook runs locally; when the service does not answer in
time, the hook decides locally and says so in its log."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from hook_support import CLIS, CliSession, answer, hook, hook_imports
from service_support import running_service, scrape

from otelguard.guards.repeat_tool_reminder import SHORT_TEXT

LS = {"command": "ls -la", "description": "List files"}


pytestmark = pytest.mark.usefixtures("hook_state")  # (tests/conftest.py)


@pytest.fixture(scope="module")
def service():
    with running_service() as running:
        yield running


def hook_calls(service, cli: str) -> float:
    return sum(sample.value for sample in scrape(service).get("otelguard_service_hook_calls", [])
               if sample.name.endswith("_total") and sample.labels.get("cli") == cli)


@pytest.mark.parametrize("cli", CLIS)
def test_the_service_decides_each_call_as_the_local_hook_would(cli, service, monkeypatch, hook_state):
    monkeypatch.setenv("OTELGUARD_URL", service.http_url)
    monkeypatch.setenv("OTELGUARD_URL_TIMEOUT_MS", "5000")  # the loaded test machine's pace
    asked_before = hook_calls(service, cli)
    session = CliSession(cli)
    calls = [session.call("Bash", LS) for _ in range(8)]
    reminded = [number for number, (before, after) in enumerate(calls, 1) if after.context]
    denied = [number for number, (before, after) in enumerate(calls, 1) if before.denied]
    assert (reminded, denied) == ([3, 5], [8])
    assert calls[2][1].context == SHORT_TEXT
    # every hook: before each call, and after each call not denied
    assert hook_calls(service, cli) - asked_before == 2 * len(calls) - len(denied)
    assert "service fallback" not in (hook_state / "hooks.log").read_text(encoding="utf-8")


def test_a_service_that_does_not_answer_leaves_the_decision_to_the_local_hook(monkeypatch, hook_state):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("OTELGUARD_URL", f"http://127.0.0.1:{port}")
    session = CliSession("claude-code")
    reminded = [number for number in range(1, 6) if session.call("Bash", LS)[1].context]
    assert reminded == [3, 5]
    assert (hook_state / "hooks.log").read_text(encoding="utf-8").count("service fallback") == 10  # 5 x 2 hooks


def test_the_hook_takes_an_answer_whole_by_its_content_length_though_the_connection_stays_open(
        monkeypatch, hook_state):
    """A server (or a proxy before the service) that keeps the connection open after its answer: the
    hook reads the answer up to its Content-Length, not until the connection closes (which would wait
    out the timeout and decide locally)."""
    told = b'{"continue": false, "stopReason": "from the service"}\n'  # as the service writes it
    answered, release = threading.Event(), threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def serve_once() -> None:
            connection, _ = listener.accept()
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: %d\r\n\r\n" % len(told) + told)
                answered.set()
                release.wait(30)  # open until the hook is done

        server = threading.Thread(target=serve_once, daemon=True)
        server.start()
        monkeypatch.setenv("OTELGUARD_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
        monkeypatch.setenv("OTELGUARD_URL_TIMEOUT_MS", "20000")
        began = time.monotonic()
        printed = hook("claude-code", CliSession("claude-code").pre("Bash", LS))
        took = time.monotonic() - began
        release.set()
        server.join(30)
    assert answered.is_set() and printed == json.loads(told)
    assert took < 10  # well before the 20 s timeout
    log = hook_state / "hooks.log"
    assert not log.exists() or "service fallback" not in log.read_text(encoding="utf-8")


def test_a_hook_the_service_answers_leaves_the_engine_unimported(service, monkeypatch):
    """The warm path's point is a light process: the service judged the call, the hook imports
    neither the engine nor the guards."""
    monkeypatch.setenv("OTELGUARD_URL", service.http_url)
    monkeypatch.setenv("OTELGUARD_URL_TIMEOUT_MS", "5000")
    session = CliSession("claude-code")
    for _ in range(2):
        session.call("Bash", LS)
    hook("claude-code", session.pre("Bash", LS, "the-third-call"))
    loaded, printed = hook_imports("claude-code", session.post("Bash", LS, call_id="the-third-call"),  # the third: a reminder
                                   {"otelguard.engine", "otelguard.guards"})
    assert loaded == []
    assert answer("claude-code", json.loads(printed)).context == SHORT_TEXT  # the service's answer
