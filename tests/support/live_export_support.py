"""A guarded run exported as OTLP JSON Lines, the way the Collector's file exporter writes them (the
SDK's own OTLP protobuf encoder, then the protobuf JSON mapping with hex ids and integer enums), and
the verdicts read back live (from the exported spans' `otelguard.verdict` events) and by the analyzer."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import otelguard
from otelguard.analyzer import analyze
from otel_support import Guarded, output_messages, tool_span
from otelguard.otlp.json_lines import otlp_json_line
from stream_support import ending_in_a_chant
from vectors_support import R


class OtlpJsonLinesExporter(SpanExporter):
    """Writes each export as one `ExportTraceServiceRequest` JSON line (hex ids, integer enums)."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        line = otlp_json_line(spans)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted"}


def agent_run(tracer, name: str, conversation: str):
    return tracer.start_as_current_span(
        f"invoke_agent {name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                    "gen_ai.conversation.id": conversation},
    )


def model_call(tracer, **output: Any) -> None:
    with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
        span.set_attribute("gen_ai.output.messages", output_messages(**output))


@otelguard.budget(timeout_ms=50)
def slow_lookup() -> str:
    otelguard.tool_signal().wait(5)
    return "too late"


def scripted_agent(tracer) -> None:
    """Falls into every loop the guards know, on purpose."""
    with agent_run(tracer, "weather", "conversation-1"):
        for _ in range(5):  # same call, same arguments (spacing differs): remind at 3 and 5
            model_call(tracer, tool="get_weather")
            tool_span(tracer, "get_weather", '{"city": "Paris"}')
        with agent_run(tracer, "researcher", "conversation-1"):  # a sub-agent with its own chain
            for _ in range(3):
                tool_span(tracer, "probe", '{"q":"same"}')
        for seed in ("angle one", "angle two", "angle three"):  # reasoning-only x3: steer
            model_call(tracer, reasoning=R(seed, 3000))
        with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:  # cut mid-stream
            with pytest.raises(otelguard.RepetitiveOutputError):
                for _ in otelguard.watch_stream(iter(["tick"] * 100), record_chunks=True):
                    pass
            span.set_attribute("gen_ai.output.messages", output_messages(text="tick" * 60))
        with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:  # cut, chunks not recorded
            with pytest.raises(otelguard.RepetitiveOutputError):
                for _ in otelguard.watch_stream(iter(["tock"] * 100)):
                    pass
            span.set_attribute("gen_ai.output.messages", output_messages(text="tock" * 60))
        with tracer.start_as_current_span("chat scripted", attributes=CHAT):  # chant complete at the end,
            for _ in otelguard.watch_stream(iter(ending_in_a_chant())):  # output not captured: only
                pass  # the live watch saw it, and flagged it (action none)
        with tracer.start_as_current_span(  # overruns its budget: the guard's own deadline fires
            "execute_tool slow_lookup",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow_lookup"},
        ):
            assert slow_lookup()["error"]["info"]["code"] == "TOOL_TIMEOUT"
        model_call(tracer, text="It is sunny in Paris.")
    with agent_run(tracer, "weather", "conversation-1"):  # a new prompt: the repeat chain restarts
        for _ in range(2):
            model_call(tracer, tool="get_weather")
            tool_span(tracer, "get_weather", '{"city":"Paris"}')
    with agent_run(tracer, "pager", "conversation-2"):  # an A/B cycle: remind at 3 repeats, steer at 5
        for _ in range(5):
            tool_span(tracer, "read_page", '{"page": 2}', result="page two")
            tool_span(tracer, "read_page", '{"page": 3.0}', result="page three")


VerdictKey = tuple[str, str, str, str, str, Any, Any, Any, Any]


def live_verdicts(path: Path) -> list[VerdictKey]:
    """Every `otelguard.verdict` event on the exported spans, read straight from the JSON."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for event in span.get("events", []):
                        if event["name"] != "otelguard.verdict":
                            continue
                        attrs = {a["key"]: next(iter(a["value"].values())) for a in event["attributes"]}
                        found.append((
                            span["spanId"], attrs["otelguard.guard"], attrs["otelguard.verdict"],
                            attrs["otelguard.rule"], attrs["otelguard.action"],
                            _int(attrs.get("otelguard.repeat.count")), _int(attrs.get("otelguard.thinking.stalled")),
                            _int(attrs.get("otelguard.stream.chars")), attrs.get("otelguard.error.code"),
                        ))
    return sorted(found, key=repr)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def analyzer_verdicts(path: Path, config: Any = None) -> list[VerdictKey]:
    analysis = analyze([path], config)
    return sorted(
        ((f"{row.step.span_id:016x}", v.guard, v.verdict, v.rule, v.action, v.repeat_count, v.thinking_stalled,
          v.stream_chars, v.error_code) for row in analysis.verdicts for v in [row.verdict]),
        key=repr,
    )


def export_live(path: Path, run: Callable[[Any], None], config: Any = None) -> None:
    """`run(tracer)` on a guarded provider whose spans are written to `path` as OTLP JSON Lines."""
    with Guarded(config, export=False, downstream=[SimpleSpanProcessor(OtlpJsonLinesExporter(path))],
                 control=otelguard.Mailbox()) as g:
        run(g.tracer)
        assert g.processor.force_flush()


def export_one_run(path: Path, body: Callable[[Any], None]) -> None:
    def run(tracer) -> None:
        with agent_run(tracer, "writer", "conversation-9"):
            body(tracer)

    export_live(path, run)


class OtlpJsonLogLines(LogRecordExporter):
    """Each export as one `ExportLogsServiceRequest` JSON line (hex ids), as a collector's file exporter writes."""

    def __init__(self, path: Path):
        self.path = path

    def export(self, batch):
        document = MessageToDict(encode_logs(batch))
        for resource in document.get("resourceLogs", []):
            for scope in resource.get("scopeLogs", []):
                for record in scope.get("logRecords", []):
                    for key in ("traceId", "spanId"):
                        if record.get(key):
                            record[key] = base64.b64decode(record[key]).hex()
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(document) + "\n")
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self):
        pass
