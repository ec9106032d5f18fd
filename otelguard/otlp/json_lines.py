"""SDK spans written as OTLP/JSON, one `ExportTraceServiceRequest` a line, as the Collector's file
exporter writes them (hex trace and span ids, integer enums): what `otelguard analyze` reads."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

_IDS = ("traceId", "spanId", "parentSpanId")


def otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """`spans` as one OTLP/JSON line (newline included). protobuf's JSON mapping writes ids as
    base64; OTLP/JSON writes them as hex."""
    document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in _IDS:
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document, separators=(",", ":")) + "\n"
