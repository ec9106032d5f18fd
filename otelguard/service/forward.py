"""`--forward URL`: what the service received goes on to another OTLP/HTTP endpoint (a collector).

Traces go on once judged, each span with the verdict attributes and `otelguard.verdict` events the
live processor writes on the spans it exports; logs and metrics go on as received. One thread sends,
from a queue bounded in bytes (`max_bytes`, `--forward-queue-bytes`: the serialized requests waiting),
so a slow or silent collector never holds the receiver or the judge, nor grows the service: a full
queue drops the request, and every outcome is counted in `otelguard.forward.requests` (by signal and
outcome).
Retryable answers (429, 502-504, no connection) are retried with backoff, as OTLP exporters do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.metrics import MeterProvider
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from .._version import __version__
from ..model.actions import strongest
from ..reactions.enrichment import VERDICT_EVENT
from ..model.records import Verdict
from .judge import Shown
from ..otlp.requests import ReceivedSpan
from .sending import QueuedSender

DEFAULT_QUEUE = 256
DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024
_RETRYABLE = frozenset({429, 502, 503, 504})
_ATTEMPTS = 4
_PROTOBUF = {"Content-Type": "application/x-protobuf"}


class Forwarder(QueuedSender):
    def __init__(self, base_url: str, meter_provider: MeterProvider, *, max_queue: int = DEFAULT_QUEUE,
                 max_bytes: int = DEFAULT_QUEUE_BYTES, timeout_s: float = 10.0, backoff_s: float = 0.5):
        self.base_url = base_url.rstrip("/")
        self._requests = meter_provider.get_meter("otelguard", __version__).create_counter(
            "otelguard.forward.requests", unit="{request}", description="Requests forwarded, by signal and outcome")
        for signal in ("traces", "logs", "metrics"):
            for outcome in ("dropped", "failed"):
                self._requests.add(0, {"signal": signal, "outcome": outcome})
        super().__init__("otelguard-forward", max_queue=max_queue, max_bytes=max_bytes, attempts=_ATTEMPTS,
                         backoff_s=backoff_s, timeout_s=timeout_s, retryable=_RETRYABLE)

    def send(self, signal: str, message: Any) -> None:
        """Queue one request's message (logs or metrics) as received."""
        self._queue_body(signal, message.SerializeToString())

    def spans(self, spans: Sequence[ReceivedSpan], shown: dict[int, Shown]) -> None:
        """Queue judged spans, with their verdicts, as one request grouped by resource and scope."""
        if spans:
            self._queue_body("traces", enriched_request(spans, shown).SerializeToString())

    def _queue_body(self, signal: str, body: bytes) -> None:
        if not self.put((signal, body), len(body)):
            self._requests.add(1, {"signal": signal, "outcome": "dropped"})

    def deliver(self, item: tuple[str, bytes]) -> None:
        signal, body = item
        ok = self.post(f"{self.base_url}/v1/{signal}", body, lambda: _PROTOBUF)
        self._requests.add(1, {"signal": signal, "outcome": "ok" if ok else "failed"})

    def failed(self, item: tuple[str, bytes]) -> None:
        self._requests.add(1, {"signal": item[0], "outcome": "failed"})


def enriched_request(spans: Sequence[ReceivedSpan], shown: dict[int, Shown]) -> ExportTraceServiceRequest:
    """The spans as one export request, grouped by the resource and scope they came with; a span with
    verdicts carries the strongest one's `otelguard.*` attributes (and a loop's spend so far) and one
    event per verdict, as the live processor's exported span does."""
    request = ExportTraceServiceRequest()
    resources: dict[int, ResourceSpans] = {}
    scopes: dict[int, ScopeSpans] = {}
    for span in spans:
        origin = span.origin
        scope = scopes.get(id(origin.scope_spans))
        if scope is None:
            resource = resources.get(id(origin.resource))
            if resource is None:
                resource = resources[id(origin.resource)] = request.resource_spans.add(
                    resource=origin.resource, schema_url=origin.resource_schema_url)
            scope = scopes[id(origin.scope_spans)] = resource.scope_spans.add(
                scope=origin.scope_spans.scope, schema_url=origin.scope_spans.schema_url)
        copy = scope.spans.add()
        copy.CopyFrom(span.message)
        judged = shown.get(span.trace_id << 64 | span.span_id)
        if judged is not None:
            _add_verdicts(copy, *judged)
    return request


def _add_verdicts(span: Span, verdicts: tuple[Verdict, ...], extra: dict[str, Any] | None) -> None:
    replaced = {**strongest(verdicts).attributes(), **(extra or {})}
    kept = [entry for entry in span.attributes if entry.key not in replaced]
    del span.attributes[:]
    span.attributes.extend(kept)
    span.attributes.extend(_key_values(replaced))
    for verdict in verdicts:
        span.events.add(name=VERDICT_EVENT, time_unix_nano=span.end_time_unix_nano,
                        attributes=_key_values(verdict.attributes()))


def _key_values(attributes: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=key, value=_any_value(value)) for key, value in attributes.items()]


def _any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))
