"""Verdicts out as OTLP metrics and logs when `OTELGUARD_OTLP_ENDPOINT` is set, off the hook's path.

Once a hook has answered, `send_later` starts `python -m otelguard.hooks.export` detached, hands it the
call's verdicts on stdin and returns; that process (which takes a moment to import the SDK) sends them
to `$OTELGUARD_OTLP_ENDPOINT/v1/metrics` and `/v1/logs` (OTLP/HTTP protobuf) and exits. The CLI's own
`OTEL_*` variables, which the hook inherits, are not the guard's: the sender runs without them.

Metrics are the live processor's (`otelguard.verdicts`, `otelguard.repeat.run_length`), with delta
temporality, since each process sends only its own increments; `gen_ai.agent.name` is the CLI. Logs:
one `otelguard.verdict` event per verdict, with the verdict's span attributes, what its loop spent
(`otelguard.loop.*`; a hook sees no model call, so `otelguard.loop.unpriced` says its tokens are not
known), the CLI, the session, the tool and the verdict's message.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..engine.loop_spend import LoopStep
from ..model.records import Verdict
from .payload import HookEvent

ENDPOINT_ENV = "OTELGUARD_OTLP_ENDPOINT"
SERVICE_NAME = "otelguard-hook"
_TIMEOUT_S = 5.0


def send_later(event: HookEvent, verdicts: tuple[Verdict, ...], loop_steps: tuple[LoopStep, ...] = ()) -> None:
    """Start the detached sender for these verdicts (and their loops' spend), when an endpoint is set
    (else nothing)."""
    endpoint = os.environ.get(ENDPOINT_ENV)
    if not endpoint or not verdicts:
        return
    import subprocess

    batch = {"endpoint": endpoint, "cli": event.cli, "session": event.session, "tool": event.tool,
             "phase": event.phase, "verdicts": [verdict.to_json() for verdict in verdicts],
             "loops": [next((step.spend.attributes() for step in loop_steps if step.verdict is verdict), {})
                       for verdict in verdicts]}
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    sender = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    assert sender.stdin is not None
    sender.stdin.write(json.dumps(batch).encode())  # a few hundred bytes: the pipe takes them at once
    sender.stdin.close()


def send(batch: dict[str, Any]) -> None:
    """Send one hook's verdicts (the detached process)."""
    from opentelemetry._logs import LogRecord, SeverityNumber
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    from .._version import __version__
    from ..reactions.metrics import GuardMetrics

    base = str(batch["endpoint"]).rstrip("/")
    resource = Resource.create({"service.name": SERVICE_NAME, "service.version": __version__})
    delta: dict[type, AggregationTemporality] = {Counter: AggregationTemporality.DELTA,
                                                 Histogram: AggregationTemporality.DELTA}
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=_TIMEOUT_S, preferred_temporality=delta),
        export_interval_millis=3_600_000)
    meters = MeterProvider(resource=resource, metric_readers=[reader])
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{base}/v1/logs",
                                                                           timeout=_TIMEOUT_S)))
    metrics = GuardMetrics(meters)
    logger = logs.get_logger("otelguard", __version__)
    for verdict_fields, loop_spend in zip(batch["verdicts"], batch.get("loops") or [{}] * len(batch["verdicts"])):
        verdict = Verdict.from_json(verdict_fields)
        metrics.verdict(verdict, batch["cli"])  # (the run-length histogram too)
        attributes = {**verdict.attributes(), **loop_spend, "event.name": "otelguard.verdict",
                      "otelguard.hook.cli": batch["cli"],
                      "otelguard.hook.phase": batch["phase"], "session.id": batch["session"],
                      "gen_ai.tool.name": batch["tool"]}
        logger.emit(LogRecord(body=verdict.message or verdict.rule, attributes=attributes,
                              severity_number=SeverityNumber.INFO if verdict.action in ("none", "remind")
                              else SeverityNumber.WARN))
    meters.shutdown()
    logs.shutdown()


if __name__ == "__main__":
    send(json.loads(sys.stdin.buffer.read()))
