"""Hook input nested deeper than Python's JSON reader can take in one recursion (1,000 levels): the
call is allowed, logged and recorded, so that a model wrapping its arguments (or a tool its result)
deeply still counts toward the stop; for every CLI, as the `otelguard hook` command and through
`otelguard serve`'s `POST /v1/hook/<cli>`."""

from __future__ import annotations

import io
import json
import os

import pytest
from hook_support import CLIS, Answer, CliSession, answer, hook_process
from service_support import post, running_service

from otelguard.hooks.command import run

DEPTH = 1000
DEEP = "[" * DEPTH + '"x"' + "]" * DEPTH
MARK = "@deep@"


pytestmark = pytest.mark.usefixtures("hook_state")  # (tests/conftest.py)


def deep(payload: dict) -> bytes:
    """The payload as JSON with the string MARK (wherever it is) replaced by a value nested DEPTH deep."""
    return json.dumps(payload).replace(json.dumps(MARK), DEEP).encode()


def hook_bytes(cli: str, data: bytes) -> Answer:
    """Run one hook on these bytes in this process; what it told the CLI."""
    out = io.StringIO()
    assert run(cli, io.BytesIO(data), out) == 0
    return answer(cli, json.loads(out.getvalue()) if out.getvalue() else None)


def log_text(state) -> str:
    path = state / "hooks.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.mark.parametrize("cli", CLIS)
def test_the_hook_command_allows_a_deeply_nested_call_logs_it_and_records_it(cli, hook_state):
    session = CliSession(cli)
    data = deep(session.pre("Bash", {"command": MARK}, call_id="deep-1"))
    done = hook_process(cli, data)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "nested deeper than 64 levels" in log_text(hook_state)
    # recorded: its post hook pairs with it, and the two count as one call (a third would remind)
    for n in (2, 3):
        hook_bytes(cli, deep(session.pre("Bash", {"command": MARK}, call_id=f"deep-{n}")))
    told = [hook_bytes(cli, deep(session.post("Bash", {"command": MARK}, call_id=f"deep-{n}"))).context
            for n in (1, 2, 3)]
    assert told[:2] == [None, None] and told[2]


@pytest.mark.parametrize("cli", CLIS)
def test_deeply_nested_arguments_count_toward_the_stop(cli):
    session = CliSession(cli)
    denied = []
    for n in range(1, 10):
        call_id = f"wrapped-{n}"
        before = hook_bytes(cli, deep(session.pre("Bash", {"command": MARK}, call_id=call_id)))
        if before.denied:
            denied.append(n)
            continue
        hook_bytes(cli, deep(session.post("Bash", {"command": MARK}, call_id=call_id)))
    assert denied == [8, 9]


@pytest.mark.parametrize("cli", CLIS)
def test_a_deeply_nested_result_is_judged_as_its_text(cli):
    """The same arguments with a deep result: recorded, reminded at the third call as any other."""
    session = CliSession(cli)
    told = [hook_bytes(cli, deep(session.post("Bash", {"command": "ls"}, MARK, call_id=f"r{n}"))).context
            for n in range(3)]
    assert told[:2] == [None, None] and told[2]


def test_deeply_nested_arguments_given_as_a_json_string_are_judged_as_that_text():
    """Codex and opencode may hand arguments over as a string of JSON: nested past the reader, it is
    kept as the text it is (not JSON to canonicalise), and still counted."""
    session = CliSession("opencode")
    told = [hook_bytes("opencode", json.dumps(session.post("bash", DEEP, call_id=f"s{n}")).encode()).context
            for n in range(3)]
    assert told[:2] == [None, None] and told[2]


@pytest.fixture(scope="module")
def service():
    with running_service() as running:
        yield running


@pytest.mark.parametrize("cli", CLIS)
def test_serve_answers_a_deeply_nested_hook_call_as_the_hook_would(cli, service, hook_state):
    """`POST /v1/hook/<cli>` with the same input: 200 with nothing to say (not a 500), logged, recorded."""
    session = CliSession(cli)
    told = []
    for n in range(3):
        status, body, _ = post(service, f"/v1/hook/{cli}", deep(session.post("Bash", {"command": MARK}, call_id=f"v{n}")),
                               "application/json")
        assert status == 200
        told.append(answer(cli, json.loads(body) if body else None).context)
    assert told[:2] == [None, None] and told[2]
    assert "nested deeper than 64 levels" in log_text(hook_state)


def test_json_that_never_closes_is_unreadable_input_not_a_crash(hook_state):
    data = b'{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": ' \
           + b"[" * 5000
    env = {**os.environ}
    env.pop("OTELGUARD_RAISE_INTERNAL_ERRORS", None)
    done = hook_process("claude-code", data, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "unreadable hook input, call allowed" in log_text(hook_state)
