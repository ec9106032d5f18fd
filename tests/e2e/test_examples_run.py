"""Every script in examples/ runs unchanged, as a user runs it, against a scripted model behind the
provider's own base-URL setting (OPENAI_BASE_URL), and shows the guard at work: the model that loops is
reminded (the reminder is in a later request), the chanting stream is cut, the looping trace is judged
by `analyze` and by `serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otelguard.guards.repeat_tool_reminder import SHORT_TEXT

from service_support import running_service
from fake_openai_server import FakeOpenAIServer, Reply, ToolCallReply
import paths

EXAMPLES = paths.EXAMPLES
MODEL_EXAMPLES = ["pydantic_ai_agent.py", "openai_client_loop.py", "openai_agents_sdk.py"]


def told_to_stop(body: dict[str, Any]) -> bool:
    return SHORT_TEXT in json.dumps(body)


def weather_until_reminded(path: str, body: dict[str, Any]) -> Reply:
    """The model calls get_weather(city="Paris") until a request carries the guard's reminder."""
    if told_to_stop(body):
        return Reply(text="It is sunny in Paris.")
    return Reply(tool_calls=(ToolCallReply("get_weather", {"city": "Paris"}),))


def run_example(name: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "OTEL_"))}
    environment.update(env)
    return subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=90)


def test_every_example_is_tested_here():
    tested = {*MODEL_EXAMPLES, "streaming.py", "trace_file_then_analyze.py", "serve_with_otlp_exporter.py"}
    assert {path.name for path in EXAMPLES.glob("*.py")} == tested


@pytest.mark.thorough  # a framework's import in a fresh process each: seconds apiece
@pytest.mark.parametrize("name", MODEL_EXAMPLES)
def test_a_looping_model_is_reminded_and_then_answers(name, tmp_path):
    with FakeOpenAIServer(weather_until_reminded) as server:
        done = run_example(name, tmp_path, OPENAI_API_KEY="test", OPENAI_BASE_URL=server.base_url,
                           OTELGUARD_EXAMPLE_MODEL="fake-model")
        bodies = server.bodies()
    assert done.returncode == 0, done.stderr
    assert "answer: It is sunny in Paris." in done.stdout
    if name != "openai_agents_sdk.py":  # (the Agents SDK keeps no record of its model input to print)
        assert f"otelguard told the model: {SHORT_TEXT}" in done.stdout
    reminded = [told_to_stop(body) for body in bodies]
    assert reminded[-1] and not reminded[0]  # reminded after some repeats, then answered
    assert len(bodies) <= 6  # the reminder comes at the third identical call


@pytest.mark.thorough
def test_a_chanting_stream_is_cut(tmp_path):
    chant = Reply(chunks=("All tests pass. ",) * 200)
    with FakeOpenAIServer(lambda path, body: chant) as server:
        done = run_example("streaming.py", tmp_path, OPENAI_API_KEY="test", OPENAI_BASE_URL=server.base_url,
                           OTELGUARD_EXAMPLE_MODEL="fake-model")
    assert done.returncode == 0, done.stderr
    assert "stream cut by otelguard" in done.stdout
    assert done.stdout.count("All tests pass.") < 200


def test_the_trace_file_it_writes_is_judged_by_analyze(tmp_path):
    done = run_example("trace_file_then_analyze.py", tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "agent-trace.jsonl").exists()
    assert "repeat-threshold" in done.stdout and "remind" in done.stdout
    assert "verdict scope: complete" in done.stdout


def test_the_agent_exporting_to_serve_gets_its_verdicts_back(tmp_path):
    with running_service() as service:
        done = run_example("serve_with_otlp_exporter.py", tmp_path, OTELGUARD_SERVE_URL=service.http_url)
    assert done.returncode == 0, done.stderr
    assert "repeat-tool-reminder repeat-threshold remind" in done.stdout
    assert "2 verdict(s) with an action" in done.stdout
