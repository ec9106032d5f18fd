"""`GuardService`: the receivers, the judge, the metrics endpoint, forwarding and the webhook, as one object.

    service = GuardService(config, ServiceOptions(http=("127.0.0.1", 0), grpc=None))
    service.start()            # binds now (a taken port fails here), serves on a thread of its own
    ... service.http_url, service.metrics_url ...
    service.stop()             # stops intake, judges what was accepted, forwards it, closes

`otelguard serve` (see `otelguard.service.cli`) runs one until SIGTERM or SIGINT. The receivers run
on one asyncio loop (uvicorn for HTTP, grpc.aio for gRPC) and only decode and queue; the judge
(`judge.SpanJudge`) runs the guards on its own thread. With `forward`, the verdicts also go on as
`gen_ai.evaluation.result` events (`live.evaluation_events`, through the SDK's logs pipeline).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from collections.abc import Callable, Iterable

import uvicorn
from google.protobuf.message import Message
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import Observation
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry

from ..guards.config import GuardConfig
from ..runtime.containment import Containment
from ..engine import Judged
from ..reactions.delivery import needs_delivery
from ..reactions.evaluation_events import EvaluationEvents
from ..reactions.metrics import GuardMetrics
from ..model.records import Verdict
from .alerts import AlertLines
from .connections import (
    KEEP_ALIVE_S,
    AcceptFailures,
    UVICORN_LOG,
    RepeatedWarnings,
    deadline_protocol,
)
from .forward import Forwarder
from .http import JSON, metrics_app, receiver_app
from .options import Address, ServiceOptions
from .judge import OnVerdict, SpanJudge
from ..otlp.requests import Received, json_spans_of, log_calls_of, parse_json, parse_protobuf, spans_of
from .page import LivePage
from .sessions import RecentVerdicts, verdict_event
from .webhook import Webhook

ALERTS_WAIT_S = 2.0  # how long `stop` waits for the alert lines still queued to be written
DECODERS = 4  # requests decompressed and decoded at once (`off_loop`); the others wait, already read

REFUSALS = ("busy", "too_large", "unauthenticated", "timeout")
REQUESTS: dict[str, type[Message]] = {"traces": ExportTraceServiceRequest, "logs": ExportLogsServiceRequest,
            "metrics": ExportMetricsServiceRequest}


class GuardService:
    def __init__(self, config: GuardConfig | dict | str | None = None, options: ServiceOptions = ServiceOptions(),
                 *, on_verdict: OnVerdict | None = None, alerts: AlertLines | None = None):
        self.options = options
        self.registry = CollectorRegistry()
        self.meter_provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=self.registry)])
        self.metrics = GuardMetrics(self.meter_provider)
        self.containment = Containment(self.metrics.internal_error)
        self.log_records = self.meter_provider.get_meter("otelguard").create_counter(
            "otelguard.service.log_records", unit="{record}",
            description="Log records received: read as a CLI's tool call, a GenAI event or an evaluation "
                        "event, or not read")
        self.forwarder = (Forwarder(options.forward, self.meter_provider, max_bytes=options.forward_queue_bytes)
                          if options.forward else None)
        self.webhook = (Webhook(options.webhook, options.webhook_secret, self.meter_provider)
                        if options.webhook else None)
        self.recent = RecentVerdicts()
        self._on_verdict = on_verdict
        self.alerts = alerts
        self.logger_provider = (evaluation_logger_provider(options.forward)
                                if options.forward and options.evaluation_events != "off" else None)
        evaluations = EvaluationEvents(self.logger_provider, options.evaluation_events if self.logger_provider else "off",
                                       self.containment)
        self.page = (LivePage(self.metrics, options.page_sessions)
                     if options.page_sessions > 0 and options.http is not None else None)
        self.judge = SpanJudge(config, self.metrics, options=options.judge,
                               on_replayed=self.forwarder.spans if self.forwarder is not None else None,
                               on_verdict=self._told, evaluations=evaluations,
                               on_judged=self.page.observe if self.page is not None else None)
        meter = self.meter_provider.get_meter("otelguard")
        self.rejected_spans = meter.create_counter(
            "otelguard.service.rejected_spans", unit="{span}", description="Spans rejected (partial success)")
        self.rejected_spans.add(0)
        self._refused = meter.create_counter(
            "otelguard.service.refused_requests", unit="{request}",
            description="Requests refused whole, by reason: busy (the judge's queue was full), too_large, "
                        "unauthenticated, timeout (not received whole in time: the connection was closed)")
        for reason in REFUSALS:
            self._refused.add(0, {"reason": reason})
        self._accept_failures = meter.create_counter(
            "otelguard.service.accept_failures", unit="{attempt}",
            description="Connections that could not be accepted: the process was out of descriptors or memory")
        self._accept_failures.add(0)
        if alerts is not None:
            meter.create_observable_counter(
                "otelguard.service.alert_lines", callbacks=[self._observe_alert_lines], unit="{line}",
                description="Alert lines written to the output, and dropped because it was not read")
        self.hook_calls = meter.create_counter(
            "otelguard.service.hook_calls", unit="{call}",
            description="Coding-agent CLI hook calls decided here (POST /v1/hook/<cli>), by CLI")
        meter.create_observable_counter(
            "otelguard.service.spans", callbacks=[self._observe_spans], unit="{span}",
            description="Spans accepted, and of them: judged late (after their trace), duplicates skipped, "
                        "not an agent/model/tool span")
        meter.create_observable_counter(
            "otelguard.cli.tool_calls", callbacks=[self._observe_cli_calls], unit="{call}",
            description="Coding-agent CLI tool calls judged, by CLI and whether their arguments were exported")
        self._decoders = ThreadPoolExecutor(DECODERS, thread_name_prefix="otelguard-decode")
        self._repeated_warnings = RepeatedWarnings()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[Any] = []
        self._grpc: Any = None
        self._stopped = False
        self.http_address: Address | None = None
        self.grpc_address: Address | None = None
        self.metrics_address: Address | None = None

    # --- what every receiver calls ---------------------------------------------------------------
    def accept(self, signal: str, body: bytes, encoding: str) -> Message:
        """Decode one OTLP/HTTP body of `signal` and accept it; raises `MalformedRequest`
        (nothing kept) or `QueueFull`."""
        kind = REQUESTS[signal]
        if signal == "traces":
            return self.accept_spans(json_spans_of(body) if encoding == JSON else spans_of(parse_protobuf(body, kind)))
        request = parse_json(body, kind) if encoding == JSON else parse_protobuf(body, kind)
        return self.accept_message(signal, request)

    async def off_loop(self, work: Callable[..., Any], *args: Any) -> Any:
        """`work(*args)` on a decoding thread: the one loop that serves HTTP, gRPC and /metrics
        never decompresses or decodes a body itself."""
        return await asyncio.get_running_loop().run_in_executor(self._decoders, work, *args)

    def accept_message(self, signal: str, request: Any) -> Message:
        """Accept one decoded export request: spans are queued for the judge (and forwarded once
        judged), logs and metrics forwarded. Returns the response, with any partial success."""
        if signal == "traces":
            return self.accept_spans(spans_of(request))
        if signal == "logs":
            logs = log_calls_of(request)
            self.judge.submit_logs(logs.calls, logs.events)
            self.log_records.add(len(logs.calls) - logs.model_calls, {"read": "cli_tool_call"})
            self.log_records.add(logs.model_calls, {"read": "cli_model_call"})
            self.log_records.add(len(logs.events), {"read": "genai_event"})
            self.log_records.add(len(logs.evaluations), {"read": "evaluation_event"})  # forwarded, not judged
            self.log_records.add(logs.not_read, {"read": "not_read"})
        if self.forwarder is not None:
            self.forwarder.send(signal, request)
        return ExportLogsServiceResponse() if signal == "logs" else ExportMetricsServiceResponse()

    def accept_spans(self, received: Received) -> ExportTraceServiceResponse:
        """Queue a request's spans for the judge; the response names the spans rejected."""
        self.judge.submit(received.spans)
        if not received.rejected:
            return ExportTraceServiceResponse()
        self.rejected_spans.add(received.rejected)
        return ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
            rejected_spans=received.rejected, error_message=received.reason))

    def _told(self, service: str | None, judged: Judged, verdict: Verdict) -> None:
        """Each verdict, on the judge's thread: kept for its session, sent to the webhook when it
        asks the agent for something, and handed to the caller's `on_verdict`."""
        event = verdict_event(service, judged, verdict)
        self.recent.add(event)
        if self.webhook is not None and needs_delivery(verdict) and not verdict.paused:  # a paused session hears nothing
            self.webhook.send(event)
        if self.alerts is not None:
            self.alerts(service, judged, verdict)
        if self._on_verdict is not None:
            self._on_verdict(service, judged, verdict)

    def refused(self, reason: str) -> None:
        """A request refused whole (one of `REFUSALS`); its sender is told and may retry."""
        self._refused.add(1, {"reason": reason})

    def _observe_spans(self, options: Any) -> Iterable[Observation]:
        judge = self.judge
        yield Observation(judge.received, {"outcome": "accepted"})
        yield Observation(judge.buffer.late_spans, {"outcome": "late"})
        yield Observation(judge.buffer.duplicates, {"outcome": "duplicate"})
        yield Observation(judge.not_ours, {"outcome": "not_ours"})

    def _observe_alert_lines(self, options: Any) -> Iterable[Observation]:
        alerts = self.alerts
        assert alerts is not None
        yield Observation(alerts.printed, {"outcome": "printed"})
        yield Observation(alerts.dropped, {"outcome": "dropped"})

    def _observe_cli_calls(self, options: Any) -> Iterable[Observation]:
        calls = self.judge.cli_calls
        for cli, count in list(calls.by_cli.items()):
            absent = calls.without_arguments[cli]
            yield Observation(count - absent, {"cli": cli, "arguments": "exported"})
            yield Observation(absent, {"cli": cli, "arguments": "not_exported"})

    # --- running ---------------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        assert self.http_address is not None
        return f"{self._scheme}://{_host(self.http_address)}"

    @property
    def metrics_url(self) -> str:
        assert self.metrics_address is not None
        return f"{self._scheme}://{_host(self.metrics_address)}/metrics"

    @property
    def _scheme(self) -> str:
        return "https" if self.options.tls is not None else "http"

    @property
    def grpc_target(self) -> str:
        assert self.grpc_address is not None
        return _host(self.grpc_address)

    def start(self) -> None:
        """Bind every listener (raises OSError when one cannot be bound) and serve on a thread."""
        tls = self.options.tls
        if tls is not None:
            tls.check()
        listeners: list[tuple[uvicorn.Server, socket.socket] | None] = []
        protocol = deadline_protocol(self.options.deadlines, lambda: self.refused("timeout"))
        try:
            for address, app in ((self.options.http, receiver_app(self)),
                                 (self.options.metrics, metrics_app(self.registry, self.options.token, self.refused))):
                if address is None:
                    listeners.append(None)
                    continue
                sock = _bound(address)
                config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                                        ssl_certfile=tls.cert if tls else None, ssl_keyfile=tls.key if tls else None,
                                        http=protocol, limit_concurrency=self.options.max_connections,
                                        timeout_keep_alive=KEEP_ALIVE_S)
                listeners.append((uvicorn.Server(config), sock))
        except OSError:
            for listener in listeners:
                if listener is not None:
                    listener[1].close()
            raise
        logging.getLogger(UVICORN_LOG).addFilter(self._repeated_warnings)  # (after uvicorn.Config configured it)
        http, metrics = listeners
        if http is not None:
            self.http_address = http[1].getsockname()[:2]
        if metrics is not None:
            self.metrics_address = metrics[1].getsockname()[:2]
        self._servers = [listener for listener in listeners if listener is not None]
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(AcceptFailures(lambda: self._accept_failures.add(1)))
        if self.options.grpc is not None:
            try:
                self._grpc, self.grpc_address = self._loop.run_until_complete(self._grpc_server(self.options.grpc))
            except OSError:
                for _, sock in self._servers:
                    sock.close()
                self._loop.close()
                self._loop = None
                raise
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), name="otelguard-serve", daemon=True)
        self._thread.start()
        started.wait(10)

    async def _grpc_server(self, address: Address) -> tuple[Any, Address]:
        from .grpc import grpc_server

        return await grpc_server(self, address)

    def _serve(self, started: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)

        async def main() -> None:
            tasks = [asyncio.create_task(server.serve(sockets=[sock])) for server, sock in self._servers]
            while not all(server.started for server, _ in self._servers):
                await asyncio.sleep(0.005)
            started.set()
            await asyncio.gather(*tasks)

        try:
            loop.run_until_complete(main())
        finally:
            started.set()

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop receiving, judge what was accepted, forward it, and close."""
        if self._stopped:
            return
        self._stopped = True
        if self._loop is not None and self._thread is not None:
            if self._thread.is_alive():
                closing = asyncio.run_coroutine_threadsafe(self._close_receivers(grace_s), self._loop)
                closing.result(grace_s + 5)
                self._thread.join(grace_s + 5)
            self._loop.close()
        self._decoders.shutdown()
        logging.getLogger(UVICORN_LOG).removeFilter(self._repeated_warnings)
        self.judge.close()
        if self.alerts is not None:
            self.alerts.flush(ALERTS_WAIT_S)  # (an output nobody reads does not hold the stop longer)
        if self.logger_provider is not None:
            self.logger_provider.shutdown()  # (sends the events still batched)
        if self.forwarder is not None:
            self.forwarder.close()
        if self.webhook is not None:
            self.webhook.close()
        self.meter_provider.shutdown()

    async def _close_receivers(self, grace_s: float) -> None:
        for server, _ in self._servers:
            # Bounded: a TLS client that never answers the close would otherwise hold it for 30 s.
            server.config.timeout_graceful_shutdown = max(1, round(grace_s))
            server.should_exit = True
        if self._grpc is not None:
            await self._grpc.stop(grace_s)  # in-flight calls finish within the grace period

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Judge everything received so far now (see `SpanJudge.flush`), and forward it."""
        judged = self.judge.flush(timeout_s)
        if self.logger_provider is not None:
            self.logger_provider.force_flush(int(timeout_s * 1000))
        if self.forwarder is not None:
            self.forwarder.flush()
        if self.webhook is not None:
            self.webhook.flush()
        return judged


def evaluation_logger_provider(forward: str) -> Any:
    """The SDK's logs pipeline to the forward endpoint: the evaluation events go through the SDK's
    OTLP/HTTP exporter, batched on its own thread (the judge never waits for the next hop)."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create({"service.name": "otelguard"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{forward}/v1/logs")))
    return provider


def _bound(address: Address) -> socket.socket:
    host, port = address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _host(address: Address) -> str:
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
