"""`otelguard demo --otlp-service`: coding-agent CLIs' captured telemetry, replayed over OTLP/HTTP to
an `otelguard serve` the demo starts, each alert printed as the service reaches it.

The captures (one directory per CLI holding `traces.jsonl.gz` and `logs.jsonl.gz`, one OTLP/JSON
export request per line, as `shared/agent-clis/captures/` and the repository's
`tests/fixtures/agent-clis/` hold them) are replayed side by side, each CLI from its own start, every
request sent when its last record was made relative to the CLI's first (`--speed` divides the
waits). Then the service is stopped (what it holds is judged) and its verdict metrics printed.
"""

from __future__ import annotations

import gzip
import heapq
import json
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..report.text import BOLD, counted
from ..service.alerts import AlertLines
from ..service.judge import JudgeOptions
from ..service.options import ServiceOptions
from ..service.server import GuardService

DEFAULT_CAPTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "agent-clis"
SIGNALS = ("traces", "logs")


class DemoInputError(Exception):
    """The captures cannot be read."""


@dataclass(frozen=True, slots=True, order=True)
class Request:
    at_s: float  # since the CLI's first request
    cli: str
    signal: str
    body: bytes


def recorded_requests(captures: Path) -> list[Request]:
    """Every capture's requests, each at its recorded offset from its CLI's first, in replay order."""
    if not captures.is_dir():
        raise DemoInputError(f"no captures at {captures} (pass --captures DIR: one directory per CLI with "
                             "traces.jsonl.gz and logs.jsonl.gz)")
    per_cli: list[list[Request]] = []
    for directory in sorted(path for path in captures.iterdir() if path.is_dir()):
        timed: list[tuple[int, str, bytes]] = []
        for signal in SIGNALS:
            path = directory / f"{signal}.jsonl.gz"
            if path.exists():
                with gzip.open(path, "rb") as lines:
                    timed += [(_last_time_ns(line), signal, line) for line in lines if line.strip()]
        if timed:
            first = min(at for at, _, _ in timed if at) if any(at for at, _, _ in timed) else 0
            per_cli.append(sorted(Request(max(0, at - first) / 1e9, directory.name, signal, body)
                                  for at, signal, body in timed))
    if not per_cli:
        raise DemoInputError(f"no traces.jsonl.gz or logs.jsonl.gz under {captures}")
    return list(heapq.merge(*per_cli))


def _last_time_ns(line: bytes) -> int:
    """When the request's last record was made: the latest span end or log time on the line."""
    latest = 0
    stack: list[Any] = [json.loads(line)]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("endTimeUnixNano", "timeUnixNano", "observedTimeUnixNano"):
                value = item.get(key)
                if isinstance(value, (str, int)) and str(value).isdigit():
                    latest = max(latest, int(value))
            stack.extend(value for value in item.values() if isinstance(value, (dict, list)))
        elif isinstance(item, list):
            stack.extend(item)
    return latest


def run(captures: Path | None, speed: float, out: TextIO) -> int:
    requests = recorded_requests(captures or DEFAULT_CAPTURES)
    options = ServiceOptions(http=("127.0.0.1", 0), grpc=None, metrics=("127.0.0.1", 0),
                             judge=JudgeOptions(tick_s=0.2))
    alerts = AlertLines(out)
    service = GuardService(None, options, alerts=alerts)
    service.start()
    clis = sorted({request.cli for request in requests})
    alerts.line(f"otelguard demo: replaying {counted(len(requests), 'OTLP request')} of {', '.join(clis)} to "
                f"otelguard serve at {service.http_url} ({requests[-1].at_s / speed:.0f} s at {speed:g}x the "
                "recorded pace)", BOLD)
    alerts.line("  (each CLI repeats one tool call six times, then alternates two calls)")
    started = time.monotonic()
    try:
        for request in requests:
            wait = started + request.at_s / speed - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            _post(f"{service.http_url}/v1/{request.signal}", request.body)
        service.flush()  # judge what waits for more of its trace or call
        alerts.line(f"verdicts with an action, by sender (otelguard_verdicts_total at {service.metrics_url}):",
                    BOLD)
        for line in _verdict_lines(service):
            alerts.line(f"  {line}")
    finally:
        service.stop()
        alerts.close()
    return 0


def _post(url: str, body: bytes) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()


def _verdict_lines(service: GuardService) -> list[str]:
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    lines = []
    for family in text_string_to_metric_families(generate_latest(service.registry).decode()):
        if family.name != "otelguard_verdicts":
            continue
        for sample in family.samples:
            labels = sample.labels
            if sample.name.endswith("_total") and labels["otelguard_action"] != "none":
                lines.append(f"{labels.get('service_name')}: {labels['otelguard_guard']} {labels['otelguard_rule']} "
                             f"{labels['otelguard_action']} x{sample.value:g}")
    return lines
