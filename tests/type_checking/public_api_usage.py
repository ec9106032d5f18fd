"""The public API used as the README shows it, for a type checker: `tests/project/test_type_checking.py`
checks that mypy accepts this file, and rejects it with one field of the wrong type."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

import otelguard
from otelguard.model.actions import Action
from otelguard.engine import GuardEngine, Judged, Started
from otelguard.model.records import SpanEvent, SpanView, Status, Verdict

provider = TracerProvider()
provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[BatchSpanProcessor(ConsoleSpanExporter())]))
trace.set_tracer_provider(provider)

mailbox = otelguard.Mailbox()
with otelguard.bind_control(mailbox):
    mailbox.raise_if_cancelled()
    texts: list[str] = [message.text for message in mailbox.drain()]


@otelguard.budget(timeout_ms=2_000)
def fetch(url: str) -> str:
    signal = otelguard.tool_signal()
    signal.raise_if_aborted()
    return url


fetched: str = fetch("https://example.com")

for delta in otelguard.watch_stream(iter(["a", "b"]), record_chunks=True):
    print(delta, end="")

config = otelguard.GuardConfig.load({"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [3, 5]}}]})
engine = GuardEngine(config)
span = SpanView("x", 1, 2)
tool_span = SpanView("execute_tool fetch", 1, 3, 2, {"gen_ai.operation.name": "execute_tool"},
                     (SpanEvent("an event", {}, 5),), Status.OK)
started: Started | None = engine.start(tool_span)
judged: Judged | None = engine.end(tool_span)
verdict = otelguard.Verdict("repeat-tool-reminder", "repeated_tool_call", "consecutive", Action.WARN,
                            "You called fetch with the same arguments 3 times.", "fetch", 3)
same: Verdict = verdict
attributes: dict[str, object] = verdict.attributes()
trace_id: int = span.trace_id
