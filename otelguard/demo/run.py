"""`otelguard demo`: a real pydantic-ai agent, driven by a scripted model, falls into each loop kind.

No network and no API key: the model is pydantic-ai's `FunctionModel`, the spans come from
pydantic-ai's own OpenTelemetry instrumentation, and `GuardSpanProcessor` judges them. Each alert is
printed as it fires, then what the model received in its next request, then a summary and the guard's
metrics as Prometheus would scrape them.

    otelguard demo                         # the five scenarios, then exit
    otelguard demo --serve 127.0.0.1:9464  # then serve the guard's metrics for Prometheus until interrupted
    otelguard demo --otlp http://127.0.0.1:4318   # also export spans and metrics over OTLP/HTTP

Exit status: 0 when the scenarios ran (and, with --otlp, the export succeeded); 1 when something
failed at run time (port in use, collector unreachable); 2 on bad usage (invalid option or config,
missing extra). The message is one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO
from urllib.parse import urlsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from ..engine import pricing
from ..guards.config import GuardConfig
from ..errors import ConfigError
from ..report.text import BOLD, TextReport, action_style, counted, number

DEFAULT_SERVE = "127.0.0.1:9464"
SERVICE_NAME = "otelguard-demo"
OTLP_TIMEOUT_S = 3.0
_CLIP = 110


class DemoError(Exception):
    """A problem to report in one line; `status` is the exit status (1 run time, 2 usage)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `otelguard demo`."""
    parser.add_argument(
        "--serve", nargs="?", const=DEFAULT_SERVE, default=None, metavar="HOST:PORT",
        help=f"after the scenarios, serve the guard's metrics for Prometheus on HOST:PORT "
             f"(default {DEFAULT_SERVE}) until interrupted",
    )
    parser.add_argument(
        "--otlp", metavar="URL", default=None,
        help="also export spans and metrics over OTLP/HTTP to this collector base URL, e.g. http://127.0.0.1:4318",
    )
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="guard config (YAML or JSON); default: all four guards with their defaults")
    parser.add_argument("--html", metavar="PATH", default=None,
                        help="also write the run's HTML report (as `otelguard analyze --html` of its spans) to PATH")
    parser.add_argument("--otlp-service", action="store_true",
                        help="instead: replay coding-agent CLIs' captured telemetry over OTLP/HTTP, at its recorded "
                             "pace, to an `otelguard serve` started here (needs otelguard[serve])")
    parser.add_argument("--captures", metavar="DIR", default=None,
                        help="with --otlp-service: one directory per CLI with traces.jsonl.gz and logs.jsonl.gz "
                             "(default: the repository's tests/fixtures/agent-clis)")
    parser.add_argument("--speed", type=float, default=1.0, metavar="X",
                        help="with --otlp-service: replay X times faster than recorded (default 1)")


def main(args: argparse.Namespace | Sequence[str] | None = None, *, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Run the demo; returns the exit status.

    `args`: the options parsed by a parser that `add_arguments` filled, or the raw argument list
    (parsed here; a usage error exits 2 through argparse).
    """
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="otelguard demo", description="Run a scripted agent through each loop kind, guarded.")
        add_arguments(parser)
        args = parser.parse_args(list(args) if args is not None else None)
    out = out or sys.stdout
    err = err or sys.stderr
    if args.otlp_service:
        return _otlp_service_demo(args, out, err)
    try:
        return _Demo(args, out).run()
    except DemoError as exc:
        print(f"otelguard demo: {exc}", file=err)
        return exc.status


def _otlp_service_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        from . import service as service_demo
    except ModuleNotFoundError as exc:
        print(f"otelguard demo: --otlp-service needs {exc.name!r}: pip install 'otelguard[serve]'", file=err)
        return 2
    if not args.speed > 0:
        print("otelguard demo: --speed must be > 0", file=err)
        return 2
    try:
        return service_demo.run(Path(args.captures) if args.captures else None, args.speed, out)
    except service_demo.DemoInputError as exc:
        print(f"otelguard demo: {exc}", file=err)
        return 2


def _write_html(spans: Any, path: str, config: Any) -> None:
    """The demo's spans as OTLP JSON Lines (hex ids, as the Collector's file exporter writes them),
    analysed with `--html` (the guard's own records on them are read as a stored run's would be)."""
    import tempfile

    from ..analyzer import analyze
    from ..analyzer.html_report import HtmlReport
    from ..otlp.json_lines import otlp_json_line

    report = HtmlReport()
    try:
        with tempfile.TemporaryDirectory(prefix="otelguard-demo-") as tmp:
            traces = Path(tmp) / "demo.otlp.jsonl"
            traces.write_text(otlp_json_line(spans), encoding="utf-8")
            analysis = analyze([traces], config, observe=report.observe)
            report.write(analysis, path)
    finally:
        report.close()


# --- alerts ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Alert:
    guard: str
    rule: str
    action: str
    agent: str
    detail: str


class AlertPrinter(SpanProcessor):
    """Downstream of the guard: prints each verdict that acted (action other than `none`) as it fires.

    It receives the guard's enriched copy of each ended span, so the verdicts are its
    `otelguard.verdict` events. Called on the thread that ends the span; only prints.
    """

    def __init__(self, write: Callable[[str, str | None], None]):
        self._write = write
        self._agent_of: dict[int, str] = {}  # open span id -> agent name
        self._lock = threading.Lock()
        self.alerts: list[Alert] = []
        self.spans: Counter[str] = Counter()

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        attributes = span.attributes or {}
        span_id = span.get_span_context().span_id
        with self._lock:
            if attributes.get("gen_ai.operation.name") == "invoke_agent":
                self._agent_of[span_id] = str(attributes.get("gen_ai.agent.name") or span.name)
            elif span.parent is not None and span.parent.span_id in self._agent_of:
                self._agent_of[span_id] = self._agent_of[span.parent.span_id]

    def on_end(self, span: ReadableSpan) -> None:
        attributes = span.attributes or {}
        operation = attributes.get("gen_ai.operation.name")
        if operation in ("invoke_agent", "chat", "execute_tool"):
            self.spans[str(operation)] += 1
        context = span.get_span_context()
        with self._lock:
            agent = self._agent_of.pop(context.span_id, None) if context is not None else None
        agent = str(attributes.get("gen_ai.agent.name") or agent or "?")
        for event in span.events:
            verdict = event.attributes or {}
            if event.name != "otelguard.verdict" or verdict.get("otelguard.action", "none") == "none":
                continue
            alert = Alert(
                str(verdict.get("otelguard.guard")), str(verdict.get("otelguard.rule")),
                str(verdict.get("otelguard.action")), agent, _detail(verdict, attributes),
            )
            self.alerts.append(alert)
            self._write(f"  ALERT  {alert.guard}  rule={alert.rule}  action={alert.action}  "
                        f"agent={alert.agent}{alert.detail}", action_style(alert.action))


def _detail(verdict: Any, span_attributes: Any) -> str:
    parts = []
    tool = span_attributes.get("gen_ai.tool.name")
    if tool:
        parts.append(f"tool={tool}")
    for key, label in (("otelguard.repeat.count", "count"), ("otelguard.thinking.stalled", "stalled"),
                       ("otelguard.stream.chars", "chars"), ("otelguard.error.code", "code")):
        if key in verdict:
            parts.append(f"{label}={verdict[key]}")
    return "".join(f"  {part}" for part in parts)


def clip(text: str, limit: int = _CLIP) -> str:
    """One line, at most `limit` characters (whitespace collapsed, an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


# --- the run -----------------------------------------------------------------------------------------

class _Demo:
    def __init__(self, args: argparse.Namespace, out: TextIO):
        self.args = args
        self.report = TextReport(out)

    def write(self, line: str = "", style: str | None = None) -> None:
        self.report.line(line, style)

    def run(self) -> int:
        serve = _parse_serve(self.args.serve) if self.args.serve is not None else None
        otlp = _parse_otlp(self.args.otlp) if self.args.otlp is not None else None
        config = _load_config(self.args.config)
        _require("pydantic_ai", "pydantic-ai", "demo")
        from ..live.processor import GuardSpanProcessor

        # Always read the metrics as Prometheus would: the run ends by printing them (and serves them).
        reader, registry = _prometheus_reader()
        readers: list[Any] = [reader]
        server = None
        span_exporter = metric_exporter = otlp_reader = None
        if serve is not None:
            server = _PrometheusServer(registry, *serve)  # binds now: fail before the scenarios run
        try:
            if otlp is not None:
                span_exporter, metric_exporter, otlp_reader = _otlp_exporters(otlp)
                readers.append(otlp_reader)
            from opentelemetry.sdk.metrics import MeterProvider

            resource = Resource.create({"service.name": SERVICE_NAME})
            meter_provider = MeterProvider(metric_readers=readers, resource=resource)
            printer = AlertPrinter(self.write)
            downstream: list[SpanProcessor] = [printer]
            recorded = None
            if self.args.html is not None:
                from opentelemetry.sdk.trace.export import SimpleSpanProcessor
                from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

                recorded = InMemorySpanExporter()
                downstream.append(SimpleSpanProcessor(recorded))
            if span_exporter is not None:
                from opentelemetry.sdk.trace.export import BatchSpanProcessor

                downstream.append(BatchSpanProcessor(span_exporter))
            guard = GuardSpanProcessor(config, downstream=downstream, meter_provider=meter_provider)
            pricing.wait_until_loaded(timeout=10)  # the planner's loop is priced: a demo may wait for the table
            tracer_provider = TracerProvider(resource=resource)
            tracer_provider.add_span_processor(guard)
            try:
                started = time.perf_counter()
                outcomes = asyncio.run(self._scenarios(tracer_provider, printer))
                self._summary(outcomes, printer, time.perf_counter() - started)
                tracer_provider.force_flush()
                if recorded is not None:
                    _write_html(recorded.get_finished_spans(), self.args.html, config)
                    self.write(f"wrote the run's HTML report to {self.args.html}")
                self._metrics(registry, serving=server is not None)
                if otlp_reader is not None:
                    otlp_reader.force_flush()  # not the provider: a Prometheus reader would queue a stale copy
                if span_exporter is not None:
                    _check_exported(otlp, span_exporter, metric_exporter)
                    self.write(f"exported spans and metrics to {otlp}")
                if server is not None:
                    server.serve_until_interrupted(self.write)
            finally:
                tracer_provider.shutdown()
                meter_provider.shutdown()
        finally:
            if server is not None:
                server.close()
        return 0

    async def _scenarios(self, tracer_provider: TracerProvider, printer: AlertPrinter) -> list[tuple[Any, Any, int]]:
        from .scenarios import SCENARIOS, Scenarios

        scenarios = Scenarios(tracer_provider, notify=self._told)
        self.write("otelguard demo: a pydantic-ai agent with a scripted model falls into each loop kind, guarded.",
                   BOLD)
        results = []
        for index, info in enumerate(SCENARIOS, 1):
            self.write()
            self.write(f"[{index}/{len(SCENARIOS)}] {info.title}", BOLD)
            before = len(printer.alerts)
            outcome = await info.run(scenarios)
            self.write(f"  -> {outcome.ended}")
            results.append((info, outcome, len(printer.alerts) - before))
        return results

    def _told(self, text: str) -> None:
        # FunctionModel shows a mid-conversation system prompt framed in <system> tags.
        text = text.removeprefix("<system>").removesuffix("</system>")
        self.write(f"         the model's next request carried: \"{clip(text)}\"")

    def _summary(self, results: list[tuple[Any, Any, int]], printer: AlertPrinter, elapsed: float) -> None:
        self.write()
        self.write("summary", BOLD)
        for info, outcome, alerts in results:
            told = "told the model" if outcome.received else "nothing reached the model"
            self.write(f"  {info.name:<19} {counted(alerts, 'alert')}, {told}; {outcome.ended}")
        actions = Counter(alert.action for alert in printer.alerts)
        by_action = ", ".join(f"{action} {number(count)}" for action, count in sorted(actions.items())) or "none"
        spans = ", ".join(f"{kind} {number(printer.spans[kind])}" for kind in ("invoke_agent", "chat", "execute_tool"))
        self.write(f"  {counted(len(results), 'scenario')}, {counted(len(printer.alerts), 'alert')} ({by_action}); "
                   f"spans judged: {spans}; {elapsed:.1f} s")


    def _metrics(self, registry: Any, *, serving: bool) -> None:
        """The counters Prometheus scrapes, one table each: its series' label values (`-` for an empty
        one) and value, under a line naming the labels in column order."""
        from prometheus_client import generate_latest
        from prometheus_client.parser import text_string_to_metric_families

        shown = ("otelguard_verdicts_total", "otelguard_loop_tokens_total", "otelguard_loop_cost_usd_total",
                 "otelguard_control_calls_total", "otelguard_spans_total")
        series: dict[str, list[tuple[dict[str, str], float]]] = {name: [] for name in shown}
        for family in text_string_to_metric_families(generate_latest(registry).decode()):
            for sample in family.samples:
                if sample.name in series and sample.value:
                    labels = {k: v for k, v in sample.labels.items() if not k.startswith("otel_scope_")}
                    series[sample.name].append((labels, sample.value))
        self.write()
        where = "served below" if serving else "add --serve 127.0.0.1:9464 to serve them"
        self.write(f"metrics (what Prometheus scrapes; {where})", BOLD)
        for name, samples in series.items():
            if not samples:
                continue
            names = list(samples[0][0])
            self.write(f"  {name}, by {', '.join(names)}:")
            rows = [[labels.get(label) or "-" for label in names] + [_value(value)] for labels, value in samples]
            widths = [max(len(row[column]) for row in rows) for column in range(len(names))]
            for row in rows:
                cells = "  ".join(cell.ljust(width) for cell, width in zip(row, widths))
                self.write(f"    {cells}  {row[-1]}")


def _value(value: float) -> str:
    return number(int(value)) if value.is_integer() else f"{value:g}"


# --- options -----------------------------------------------------------------------------------------

def _parse_serve(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise DemoError(f"--serve expects HOST:PORT, e.g. {DEFAULT_SERVE} (got {value!r})", 2)
    return host, int(port_text)


def _parse_otlp(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise DemoError(f"--otlp expects the collector's base URL, e.g. http://127.0.0.1:4318 (got {value!r})", 2)
    return value.rstrip("/")


def _load_config(path: str | None) -> GuardConfig:
    try:
        return GuardConfig.load(path)
    except ConfigError as exc:
        raise DemoError(str(exc), 2) from None


def _require(module: str, package: str, extra: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise DemoError(f"needs {package}: pip install 'otelguard[{extra}]'", 2) from None


# --- Prometheus --------------------------------------------------------------------------------------

def _prometheus_reader() -> tuple[Any, Any]:
    _require("prometheus_client", "prometheus-client", "prometheus")
    _require("opentelemetry.exporter.prometheus", "opentelemetry-exporter-prometheus", "prometheus")
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    return PrometheusMetricReader(registry=registry), registry


class _PrometheusServer:
    def __init__(self, registry: Any, host: str, port: int):
        from prometheus_client import start_http_server

        self.url = f"http://{host}:{port}/metrics"
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=registry)
        except OSError as exc:
            raise DemoError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None

    def serve_until_interrupted(self, write: Callable[[str], None]) -> None:
        stop = threading.Event()
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            write(f"serving metrics on {self.url} (Ctrl-C to stop)")
            stop.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        write("stopped")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


# --- OTLP --------------------------------------------------------------------------------------------

def _probe_collector(base_url: str) -> None:
    """Fail fast, before the scenarios run, when nothing listens at the collector's address."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=OTLP_TIMEOUT_S).close()
    except OSError as exc:
        raise DemoError(f"cannot reach the OTLP collector at {base_url}: {exc.strerror or exc}") from None


def _otlp_exporters(base_url: str) -> tuple[Any, Any, Any]:
    _require("opentelemetry.exporter.otlp.proto.http", "opentelemetry-exporter-otlp-proto-http", "demo")
    _probe_collector(base_url)
    # We report a failed export in one line ourselves; the exporters' retry warnings would bury it.
    logging.getLogger("opentelemetry.exporter.otlp").setLevel(logging.CRITICAL)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    class SpanExporter(OTLPSpanExporter):
        failed: str | None = None

        def export(self, spans: Any) -> Any:
            result = super().export(spans)
            if result.name != "SUCCESS":
                self.failed = "spans"
            return result

    class MetricExporter(OTLPMetricExporter):
        failed: str | None = None

        def export(self, metrics_data: Any, timeout_millis: float | None = 10_000, **kwargs: Any) -> Any:
            result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
            if result.name != "SUCCESS":
                self.failed = "metrics"
            return result

    spans = SpanExporter(endpoint=f"{base_url}/v1/traces", timeout=OTLP_TIMEOUT_S)
    metrics = MetricExporter(endpoint=f"{base_url}/v1/metrics", timeout=OTLP_TIMEOUT_S)
    # Exported once at the end (force_flush), not on a timer.
    reader = PeriodicExportingMetricReader(metrics, export_interval_millis=3_600_000)
    return spans, metrics, reader


def _check_exported(base_url: str | None, span_exporter: Any, metric_exporter: Any) -> None:
    failed = [what for what in (span_exporter.failed, metric_exporter.failed) if what]
    if failed:
        raise DemoError(f"could not export {' and '.join(failed)} to {base_url} (is a collector listening there?)")
