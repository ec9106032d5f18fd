"""What a verdict's `gen_ai.evaluation.result` event costs the span thread.

Every tool span here carries a `remind` verdict (repeat-tool-reminder, thresholds [2..]), so every
span end emits one evaluation event. Two cases, interleaved round by round: `evaluation_events="off"`
(the baseline) and the default `"actions"` through the SDK's LoggerProvider with a
BatchLogRecordProcessor (the usual production pipeline) over a no-op exporter. The figure is the
median over rounds of the per-span difference: the span thread's extra time per event. Spans without
a verdict never reach the emitter (nothing to measure there).

Run: .venv/bin/python benchmarks/evaluation_events.py [--quick]
"""

from __future__ import annotations

import sys
from typing import Sequence

from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import otelguard
from _bench import arguments, interleaved, median, spread, timed

CONFIG = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": list(range(2, 100_000))}}]}


class NoOpSpans(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class NoOpLogs(LogRecordExporter):
    def export(self, batch) -> LogRecordExportResult:
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        return

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def guarded_tool_calls(mode: str, spans: int):
    """A batch function: `spans` identical tool calls of one agent (each after the first reminded)."""
    logs = LoggerProvider()
    logs.add_log_record_processor(BatchLogRecordProcessor(NoOpLogs()))
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(
        CONFIG, downstream=[SimpleSpanProcessor(NoOpSpans())], control=otelguard.Mailbox(),
        logger_provider=logs, evaluation_events=mode))
    tracer = provider.get_tracer("bench")
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
                  "gen_ai.tool.call.arguments": '{"q": 1}'}
    agent = tracer.start_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"})
    context = trace.set_span_in_context(agent)

    def batch() -> None:
        for _ in range(spans):
            tracer.start_span("execute_tool probe", context=context, attributes=attributes).end()

    return batch, (provider, logs)


def main() -> int:
    args = arguments(__doc__.splitlines()[0], rounds=9)
    spans = 200 if args.quick else 2_000
    rounds = 3 if args.quick else args.rounds
    off, off_providers = guarded_tool_calls("off", spans)
    on, on_providers = guarded_tool_calls("actions", spans)
    times = interleaved({"off": timed(off), "actions": timed(on)}, rounds=rounds)
    extra = [(a - o) / spans for a, o in zip(times["actions"], times["off"])]
    per_span = median(times["off"]) / spans
    print(f"evaluation_events: {spans} reminded tool spans per round, {rounds} rounds; span thread per "
          f"verdict-carrying span with events off: {per_span * 1e6:.1f} us")
    print(f"  one evaluation event (SDK LoggerProvider, batch processor): +{median(extra) * 1e6:.1f} us "
          f"per verdict, {spread([e * 1e6 for e in extra], 1)} us")
    for provider, logs in (off_providers, on_providers):
        provider.shutdown()
        logs.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
