"""`--forward URL`: what the service received goes on to another OTLP/HTTP endpoint (a collector).

Traces go on once judged, each span with the verdict attributes and `otelguard.verdict` events the
live processor writes on the spans it exports; logs and metrics go on as received. One thread sends,
from a bounded queue, so a slow collector never holds the receiver or the judge: a full queue drops
the request, and every outcome is counted in `otelguard.forward.requests` (by signal and outcome).
Retryable answers (429, 502-504, no connection) are retried with backoff, as OTLP exporters do.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

import requests
from opentelemetry.metrics import MeterProvider
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from .._version import __version__
from ..actions import strongest
from ..live.enrichment import VERDICT_EVENT
from ..records import Verdict
from .received import ReceivedSpan

logger = logging.getLogger("otelguard")

DEFAULT_QUEUE = 256
_RETRYABLE = frozenset({429, 502, 503, 504})
_ATTEMPTS = 4
_STOP = object()


class Forwarder:
    def __init__(self, base_url: str, meter_provider: MeterProvider, *, max_queue: int = DEFAULT_QUEUE,
                 timeout_s: float = 10.0, backoff_s: float = 0.5):
        self.base_url = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._requests = meter_provider.get_meter("otelguard", __version__).create_counter(
            "otelguard.forward.requests", unit="{request}", description="Requests forwarded, by signal and outcome")
        for signal in ("traces", "logs", "metrics"):
            for outcome in ("dropped", "failed"):
                self._requests.add(0, {"signal": signal, "outcome": outcome})
        self._session = requests.Session()
        self._thread = threading.Thread(target=self._run, name="otelguard-forward", daemon=True)
        self._thread.start()

    def send(self, signal: str, message: Any) -> None:
        """Queue one request's message (logs or metrics) as received."""
        self._put(signal, message.SerializeToString())

    def spans(self, spans: Sequence[ReceivedSpan], shown: dict[int, tuple[Verdict, ...]]) -> None:
        """Queue judged spans, with their verdicts, as one request grouped by resource and scope."""
        if spans:
            self._put("traces", enriched_request(spans, shown).SerializeToString())

    def flush(self) -> None:
        """Wait until every queued request has been sent (or given up on)."""
        self._queue.join()

    def close(self, timeout_s: float = 10.0) -> None:
        """Send what is queued (for up to `timeout_s`), then stop."""
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            pass
        self._thread.join(timeout_s)
        self._session.close()

    def _put(self, signal: str, body: bytes) -> None:
        try:
            self._queue.put_nowait((signal, body))
        except queue.Full:
            self._requests.add(1, {"signal": signal, "outcome": "dropped"})

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                signal, body = item
                try:
                    outcome = self._post(signal, body)
                except Exception:  # a bug: logged; the thread goes on (flush waits on it)
                    logger.exception("otelguard serve: forwarding %s failed", signal)
                    outcome = "failed"
                self._requests.add(1, {"signal": signal, "outcome": outcome})
            finally:
                self._queue.task_done()

    def _post(self, signal: str, body: bytes) -> str:
        url = f"{self.base_url}/v1/{signal}"
        for attempt in range(_ATTEMPTS):
            if attempt:
                time.sleep(self._backoff_s * 2 ** (attempt - 1))
            try:
                answer = self._session.post(url, data=body, timeout=self._timeout_s,
                                            headers={"Content-Type": "application/x-protobuf"})
            except requests.RequestException as error:
                problem = str(error)
                continue
            if answer.ok:
                return "ok"
            problem = f"HTTP {answer.status_code}"
            if answer.status_code not in _RETRYABLE:
                break
        logger.warning("otelguard serve: forwarding %s to %s failed: %s", signal, url, problem)
        return "failed"


def enriched_request(spans: Sequence[ReceivedSpan], shown: dict[int, tuple[Verdict, ...]]) -> ExportTraceServiceRequest:
    """The spans as one export request, grouped by the resource and scope they came with; a span with
    verdicts carries the strongest one's `otelguard.*` attributes and one event per verdict."""
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
        verdicts = shown.get(span.trace_id << 64 | span.span_id)
        if verdicts:
            _add_verdicts(copy, verdicts)
    return request


def _add_verdicts(span: Span, verdicts: tuple[Verdict, ...]) -> None:
    replaced = strongest(verdicts).attributes()
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
