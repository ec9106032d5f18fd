"""Write an agent's spans to an OTLP/JSON trace file, then replay it with `otelguard analyze`.

The agent here is a hand-written loop that keeps calling one tool with the same arguments (no model
needed to run it). Its spans go to `agent-trace.jsonl` through OpenTelemetry's own OTLP/JSON encoder
(hex ids, integer enums: what the Collector's file exporter writes), and `otelguard analyze` judges
the file with the same guards as the live processor.

    pip install . opentelemetry-exporter-otlp-json-common
    python examples/trace_file_then_analyze.py [agent-trace.jsonl]
"""

import json
import subprocess
import sys
from collections.abc import Sequence

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class OtlpJsonLinesFile(SpanExporter):
    """Each export as one OTLP/JSON `ExportTraceServiceRequest` line, as the Collector's file exporter writes."""

    def __init__(self, path: str):
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as file:
            file.write(encode_spans(spans).to_json() + "\n")
        return SpanExportResult.SUCCESS


def looping_agent(provider: TracerProvider) -> None:
    """An agent run that reads the same page five times, with the spans the GenAI conventions name."""
    tracer = provider.get_tracer("trace-file-example")
    with tracer.start_as_current_span("invoke_agent reader", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "reader"}):
        for _ in range(5):
            with tracer.start_as_current_span("execute_tool read_page", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_page",
                    "gen_ai.tool.call.arguments": json.dumps({"page": 2})}) as span:
                span.set_attribute("gen_ai.tool.call.result", "CHANGELOG page 2 of 3: entries for 2.1.x")


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "agent-trace.jsonl"
    open(path, "w").close()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesFile(path)))
    looping_agent(provider)
    provider.shutdown()
    print(f"wrote {path}; otelguard analyze {path}:\n")
    return subprocess.run([sys.executable, "-m", "otelguard", "analyze", path]).returncode


if __name__ == "__main__":
    sys.exit(main())
