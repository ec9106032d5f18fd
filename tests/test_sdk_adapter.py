"""The SDK adapter: the live guard reads SDK spans' private fields only inside the checked SDK
releases, and reaches the same verdicts through the public `ReadableSpan` API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status as OtelStatus
from opentelemetry.trace import StatusCode
from otel_support import Guarded, PublicOnly, RecordingProcessor, metric_points

from otelguard.live.sdk_span import ADAPTER_ENV, PrivateSdkSpan, PublicSdkSpan, reads_private_fields

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(("version", "setting", "private"), [
    ("1.45.2", "", True),  # inside the checked releases
    ("1.29.0", "", False),  # before them
    ("1.46.0", "", False),  # after them
    ("1.45.2", "public", False),  # forced public
    ("1.45.2", " Public ", False),  # the setting is read trimmed, any case
    ("not a version", "", False),
])
def test_private_fields_are_read_only_inside_the_checked_releases_unless_forced_public(version, setting, private):
    assert reads_private_fields(version, setting) is private


def _read(source) -> tuple:
    return (source.name, source.trace_id, source.span_id, source.parent_span_id, dict(source.attributes),
            source.has_events, source.view(), source.parent_view())


@pytest.mark.parametrize("status", ["unset", "ok", "error", "error-described"])
@pytest.mark.parametrize("with_event", [False, True])
def test_both_adapters_read_an_sdk_span_alike(status, with_event):
    """Name, ids, attributes, events, status and scope: the same through the private fields as through
    the public properties, and through the public properties of a span that shows nothing else."""
    tracer = TracerProvider().get_tracer("scope-name", "1.0")
    with tracer.start_as_current_span("agent"):
        span = tracer.start_span("chat m", attributes={"gen_ai.operation.name": "chat"})
        if with_event:
            span.add_event("otelguard.chunk", {"otelguard.chunk.text": "x"}, timestamp=5)
        if status != "unset":
            code = StatusCode.OK if status == "ok" else StatusCode.ERROR
            span.set_status(OtelStatus(code, "boom" if status == "error-described" else None))
        span.end()
    private = _read(PrivateSdkSpan(span))
    assert private == _read(PublicSdkSpan(span)) == _read(PublicSdkSpan(PublicOnly(span)))
    view = private[6]
    assert view.scope == "scope-name" and view.parent_span_id == span.parent.span_id
    assert view.status.value == {"error-described": "error"}.get(status, status)
    assert view.has_events is with_event


def _recorded_repeat_loop() -> RecordingProcessor:
    recording = RecordingProcessor()
    provider = TracerProvider()
    provider.add_span_processor(recording)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                    "gen_ai.agent.name": "a"}):
        for _ in range(3):
            with tracer.start_as_current_span("execute_tool f", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f",
                    "gen_ai.tool.call.arguments": '{"q": 1}'}):
                pass
    return recording


def _fed(recording: RecordingProcessor, wrap) -> tuple[list[tuple], list]:
    """The exported spans' verdicts, and the internal errors, of a guard fed the recorded spans."""
    with Guarded() as g:
        for event, span, _ in recording.calls:
            if event == "start":
                g.processor.on_start(wrap(span), None)
            else:
                g.processor.on_end(wrap(span))
        verdicts = [(span.name, span.attributes.get("otelguard.verdict"), span.attributes.get("otelguard.repeat.count"))
                    for span in g.exporter.get_finished_spans()]
        return verdicts, metric_points(g.metric_reader, "otelguard.internal.errors")


def test_the_processor_judges_spans_showing_only_public_properties_as_sdk_spans():
    recording = _recorded_repeat_loop()
    sdk, public = _fed(recording, lambda span: span), _fed(recording, PublicOnly)
    assert sdk == public
    assert [count for _, verdict, count in sdk[0] if verdict == "repeated_tool_call"] == [2, 3]


# --- the same verdicts with the adapter forced public (chosen at import: a fresh interpreter) ---------
_SCRIPT = r'''
import json
from opentelemetry.sdk.trace import TracerProvider
from otel_support import Guarded, PublicOnly, RecordingProcessor, output_messages, tool_span
from vectors_support import R
from otelguard.live import sdk_span


def loops(tracer):
    with tracer.start_as_current_span("invoke_agent a", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": "c"}):
        with tracer.start_as_current_span("GET"):
            for _ in range(4):
                tool_span(tracer, "search", '{"q": "same"}')
        for seed in ("one", "two", "three"):
            with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}) as span:
                span.set_attribute("gen_ai.output.messages", output_messages(reasoning=R(seed, 3000)))
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}) as span:
            span.set_attribute("gen_ai.output.messages", output_messages(text="abc, " * 60))


def verdicts(g):
    return [(span.name, span.attributes.get("otelguard.verdict"), span.attributes.get("otelguard.rule"),
             span.attributes.get("otelguard.action"), span.attributes.get("otelguard.repeat.count"))
            for span in g.exporter.get_finished_spans()]


with Guarded() as g:
    loops(g.tracer)
    live = verdicts(g)
recording = RecordingProcessor()
provider = TracerProvider()
provider.add_span_processor(recording)
loops(provider.get_tracer("t"))
fed = {}
wraps = [("sdk", lambda span: span), ("public_only", PublicOnly)]
for name, wrap in wraps:
    with Guarded() as g:
        for event, span, _ in recording.calls:
            g.processor.on_start(wrap(span), None) if event == "start" else g.processor.on_end(wrap(span))
        fed[name] = verdicts(g)
print(json.dumps({"adapter": ("PrivateSdkSpan" if sdk_span.PRIVATE else "PublicSdkSpan"), "live": live, "fed": fed}))
'''


def _run_script(adapter: str | None) -> dict:
    env = {key: value for key, value in os.environ.items() if key != ADAPTER_ENV}
    if adapter is not None:
        env[ADAPTER_ENV] = adapter
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, cwd=TESTS,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_public_adapter_reaches_the_default_adapters_verdicts_on_repeat_and_thinking_loops():
    """A repeat loop under a plain span, a reasoning-only thinking loop and a repeating cycle: the guard
    forced to the public API (OTELGUARD_SDK_ADAPTER=public) writes the same verdicts as the default."""
    default, public = _run_script(None), _run_script("public")
    assert public["adapter"] == "PublicSdkSpan"
    assert default["adapter"] == ("PrivateSdkSpan" if reads_private_fields(setting="") else "PublicSdkSpan")
    assert public["live"] == default["live"]
    rules = {(rule, action, count) for _, verdict, rule, action, count in default["live"] if verdict}
    assert {("repeat-threshold", "remind", 3), ("reasoning-only", "steer", None)} <= rules
    assert any(rule == "repeating-cycle" for rule, _, _ in rules)


def test_with_the_public_adapter_spans_showing_only_public_properties_are_judged_as_sdk_spans():
    public = _run_script("public")
    assert public["fed"]["public_only"] == public["fed"]["sdk"] == public["live"]
    assert any(verdict for _, verdict, *_ in public["live"])  # verdicts were compared, not empty lists
