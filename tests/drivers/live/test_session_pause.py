"""A session can be paused: its spans and calls are still judged and counted, its verdicts marked
`paused`, and nothing reaches the agent. In process (`GuardSpanProcessor.pause`), for the CLI hooks
(`otelguard hook pause` / `resume`, `OTELGUARD_DISABLE=1`) and in `otelguard serve`
(`POST /v1/sessions/ID/pause` and `/resume`, behind its token)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest
from hook_support import CliSession, hook_process
from otel_support import Guarded, metric_points, output_messages, tool_span
from service_support import TOKEN, _codex_session, _get, running_service
from webhook_support import SECRET, receiving

import otelguard
from otelguard.cli import main as otelguard_main

LS = {"command": "ls -la", "description": "List files"}
pytestmark = pytest.mark.usefixtures("hook_state")  # every test's hook history is its own (tests/conftest.py)


def agent_run(tracer, conversation: str):
    return tracer.start_as_current_span("invoke_agent helper", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", "gen_ai.conversation.id": conversation})


# --- in process ------------------------------------------------------------------------------------


def test_a_paused_conversation_is_judged_and_counted_but_told_nothing():
    """Paused: the reminders at the 3rd and 5th call are on the spans and in the metrics, marked paused,
    and none reaches the control; another conversation is reminded; resumed, the next run is too."""
    mailbox = otelguard.Mailbox()
    with Guarded({"guards": [{"id": "repeat-tool-reminder"}]}, control=mailbox) as g:
        g.processor.pause("conversation-1")
        with agent_run(g.tracer, "conversation-1"):
            for _ in range(5):
                tool_span(g.tracer)
        assert mailbox.drain() == []
        with agent_run(g.tracer, "conversation-2"):
            for _ in range(3):
                tool_span(g.tracer)
        assert len(mailbox.drain()) == 1
        assert g.processor.resume("conversation-1") is True
        with agent_run(g.tracer, "conversation-1"):
            for _ in range(3):
                tool_span(g.tracer)
        assert len(mailbox.drain()) == 1
        spans = [span for span in g.exporter.get_finished_spans() if span.name == "execute_tool probe"]
        reminders = [span.attributes for span in spans if span.attributes.get("otelguard.action") == "remind"]
        assert [(a["otelguard.repeat.count"], a.get("otelguard.paused", False)) for a in reminders] == [
            (3, True), (5, True), (3, False), (3, False)]
        verdicts = metric_points(g.metric_reader, "otelguard.verdicts")
        assert sum(value for labels, value in verdicts if labels["otelguard.action"] == "remind") == 4
        controls = metric_points(g.metric_reader, "otelguard.control.calls")
        assert ({"otelguard.action": "remind", "outcome": "paused"}, 2) in controls


def test_a_paused_stream_is_recorded_not_cut():
    """A stream that chants in a paused conversation is passed through whole; the trip is on its span, paused."""
    config = {"guards": [{"id": "thinking-loop-guard", "config": {"max_repeated_text": 5, "max_repeated_cycle_chars": 0}}]}
    with Guarded(config) as g:
        g.processor.pause("conversation-1")
        with agent_run(g.tracer, "conversation-1"):
            with g.tracer.start_as_current_span("chat m", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.output.messages": output_messages(text="ok")}):
                received = list(otelguard.watch_stream(["tick"] * 20))
        assert received == ["tick"] * 20
        (model,) = [span for span in g.exporter.get_finished_spans() if span.name == "chat m"]
    assert model.attributes["otelguard.rule"] == "identical-chunks" and model.attributes["otelguard.paused"] is True


# --- CLI hooks -------------------------------------------------------------------------------------


@pytest.fixture
def log(hook_state):
    return lambda: (hook_state / "hooks.log").read_text(encoding="utf-8") if (hook_state / "hooks.log").exists() else ""


def test_hook_pause_holds_back_every_answer_of_the_session(log, capsys):
    """`otelguard hook pause claude-code` pauses the session that called last: ten identical calls get no
    reminder and no denial, the log records each verdict as paused; `hook resume` ends it."""
    session = CliSession("claude-code")
    session.call("Bash", LS)
    assert otelguard_main(["hook", "pause", "claude-code"]) == 0
    assert session.session in capsys.readouterr().out
    answers = [session.call("Bash", LS) for _ in range(9)]
    assert all(not before.denied and not after.context for before, after in answers)
    paused = [line for line in log().splitlines() if "(paused: not delivered)" in line]
    assert [line.split("repeat-tool-reminder/")[1].split(" (")[0] for line in paused] == [
        "repeat-threshold remind at call 3", "repeat-threshold remind at call 5", "repeat-stop block at call 8",
        "repeat-stop block at call 9", "repeat-stop block at call 10"]
    other = CliSession("claude-code")
    assert [bool(after.context) for _, after in (other.call("Bash", LS) for _ in range(3))] == [False, False, True]
    assert otelguard_main(["hook", "resume", "claude-code", session.session]) == 0
    before, _ = session.call("Bash", LS)
    assert before.denied is not None and "Repeated tool call blocked:" in before.denied


def test_hook_resume_without_arguments_ends_every_pause(capsys):
    first, second = CliSession("claude-code"), CliSession("codex")
    assert otelguard_main(["hook", "pause", "claude-code", first.session]) == 0
    assert otelguard_main(["hook", "pause", "codex", second.session]) == 0
    assert otelguard_main(["hook", "resume"]) == 0
    out = capsys.readouterr().out
    assert f"claude-code session {first.session} resumed" in out and f"codex session {second.session} resumed" in out


def test_hook_pause_needs_a_session_to_pause(capsys):
    """A CLI with no session in the history yet: nothing paused, exit 2 with the reason."""
    assert otelguard_main(["hook", "pause", "gemini-cli"]) == 2
    assert "no session in the history yet" in capsys.readouterr().err


def test_otelguard_disable_in_the_clis_environment_pauses_its_calls(log):
    """The hook process of a CLI started with OTELGUARD_DISABLE=1 prints nothing, and still records the verdict."""
    session = CliSession("claude-code")
    env = {**os.environ, "OTELGUARD_DISABLE": "1"}
    printed = [hook_process("claude-code", session.post("Bash", LS), env).stdout for _ in range(3)]
    assert printed == [b"", b"", b""]
    assert "repeat-tool-reminder/repeat-threshold remind at call 3 (paused: not delivered)" in log()


# --- otelguard serve -------------------------------------------------------------------------------


def _post(service, path: str, token: str | None = TOKEN, body: bytes = b"", headers: dict | None = None):
    request = urllib.request.Request(f"{service.http_url}{path}", data=body, method="POST", headers={
        **({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, b""


def test_serve_pauses_a_session_behind_its_token(hook_state):
    """`POST /v1/sessions/ID/pause` needs the token; the paused session's verdicts are answered marked
    paused and posted to no webhook; its CLI hook through serve answers nothing; `/resume` ends it."""
    with receiving() as receiver, running_service(token=TOKEN, webhook=receiver.url, webhook_secret=SECRET) as service:
        assert _post(service, "/v1/sessions/conversation-1/pause", token=None)[0] == 401
        status, body = _post(service, "/v1/sessions/conversation-1/pause")
        assert (status, json.loads(body)) == (200, {"session": "conversation-1", "paused": True})
        _codex_session(service, "conversation-1", 3)
        assert service.flush()
        answer = _get(service, "?session=conversation-1")[1]
        assert answer["paused"] is True
        assert [(v["action"], v["paused"]) for v in answer["verdicts"]] == [("none", True), ("remind", True)]
        assert receiver.accepted == []
        session = CliSession("claude-code", session="conversation-1")
        printed = [_post(service, "/v1/hook/claude-code", body=json.dumps(session.post("Bash", LS)).encode())[1]
                   for _ in range(3)]
        assert printed == [b"", b"", b""]
        status, body = _post(service, "/v1/sessions/conversation-1/resume")
        assert (status, json.loads(body)) == (200, {"session": "conversation-1", "paused": False})
        printed = [_post(service, "/v1/hook/claude-code", body=json.dumps(session.post("Bash", LS)).encode())[1]
                   for _ in range(2)]
        assert printed[0] == b"" and b"consecutive_calls: 5" in printed[1]  # the 5th call's reminder


def test_the_disable_header_pauses_a_hook_answered_by_serve(hook_state):
    """A hook run with OTELGUARD_DISABLE asks serve with `X-Otelguard-Disable: 1`: the call is judged, nothing answered."""
    with running_service(token=TOKEN) as service:
        session = CliSession("claude-code")
        printed = [_post(service, "/v1/hook/claude-code", body=json.dumps(session.post("Bash", LS)).encode(),
                         headers={"X-Otelguard-Disable": "1"})[1] for _ in range(3)]
    assert printed == [b"", b"", b""]
    assert "remind at call 3 (paused: not delivered)" in (hook_state / "hooks.log").read_text(encoding="utf-8")
