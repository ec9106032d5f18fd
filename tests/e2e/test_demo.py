"""`otelguard demo`: the five scripted loops run through a real pydantic-ai agent, each alert is printed,
metrics are served for Prometheus with --serve and exported with --otlp, and problems exit non-zero
with one line. The demo runs in-process, except --serve, which runs as a subprocess and is stopped
with SIGTERM."""

from __future__ import annotations

import argparse
import io
import signal
import socket
import subprocess
import sys
import urllib.request
from typing import Iterator

import pytest

pytest.importorskip("pydantic_ai")

from otelguard.demo import run as demo
from otlp_collector_support import Collector, running_collector
import paths

ROOT = paths.ROOT
RUN_DEMO = ("import argparse, sys, otelguard.demo.run as d; p = argparse.ArgumentParser(); d.add_arguments(p); "
            "raise SystemExit(d.main(p.parse_args(sys.argv[1:])))")
ALERTS = [
    "ALERT  repeat-tool-reminder  rule=repeat-threshold  action=remind  agent=weather-agent  tool=get_weather  count=3",
    "ALERT  thinking-loop-guard  rule=reasoning-only  action=steer  agent=planner-agent  stalled=3",
    "ALERT  thinking-loop-guard  rule=repeating-cycle  action=break  agent=reporter-agent",
    "ALERT  timeout-policy  rule=tool-timeout  action=abort  agent=runner-agent  tool=run_tests  code=TOOL_TIMEOUT",
    "ALERT  no-progress  rule=cycle  action=remind  agent=reader-agent  tool=read_page  count=3",
    "ALERT  no-progress  rule=cycle  action=steer  agent=reader-agent  tool=read_page  count=5",
]
TOLD = [
    "carried: \"You are repeating the exact same tool call with identical arguments.",
    "carried: \"You are repeating the same reasoning without acting (several long reasoning-only calls",
    "carried: \"Your output had repeated itself for",
    "carried: \"{\"isError\": true, \"error\": {\"message\": \"tool call timed out after 100ms\"",
    "carried: \"No progress: the same 2 tool calls keep repeating in a cycle (3 times in a row): - call 1: read_page",
    "carried: \"No progress: the same 2 tool calls keep repeating in a cycle (5 times in a row): - call 1: read_page",
]
METRICS = ["otelguard_verdicts_total", "otelguard_spans_total", "otelguard_loop_tokens_total",
           "otelguard_control_calls_total", "otelguard_processing_duration_seconds_count",
           "otelguard_repeat_run_length_count"]


def words(text: str) -> str:
    """The text's words, one space apart: what a reader sees, whichever lines the report wrapped."""
    return " ".join(text.split())


def run_demo(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    status = demo.main(parser.parse_args(list(argv)), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def default_run() -> tuple[int, str, str]:
    return run_demo()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- the scenarios -----------------------------------------------------------------------------------

def test_demo_exits_zero(default_run):
    """With no options the demo runs every scenario and exits 0 without writing to stderr."""
    status, _, err = default_run
    assert (status, err) == (0, "")


@pytest.mark.parametrize("alert", ALERTS, ids=["remind", "steer", "break", "abort", "cycle-remind", "cycle-steer"])
def test_demo_prints_each_alert(default_run, alert):
    """Each loop kind prints its alert line: guard, rule, action and agent."""
    assert words(alert) in words(default_run[1])


@pytest.mark.parametrize("told", TOLD, ids=["remind", "steer", "break", "abort", "cycle-remind", "cycle-steer"])
def test_demo_prints_what_the_model_was_told(default_run, told):
    """After each alert the demo shows the guard text that reached the model's next request."""
    assert words(told) in words(default_run[1])


def test_demo_prints_a_summary(default_run):
    """The summary counts five scenarios and six alerts: one of each action, and the cycle's remind and steer."""
    assert "5 scenarios, 6 alerts (abort 1, break 1, remind 2, steer 2)" in words(default_run[1])


def test_demo_prints_the_guard_metrics_as_prometheus_scrapes_them(default_run):
    """Without --serve the run still ends with the guard's metrics, counted from the loops it judged."""
    _, out, _ = default_run
    block = words(out.split("metrics (what Prometheus scrapes", 1)[1])
    assert ("otelguard_verdicts_total, by gen_ai_agent_name, gen_ai_tool_name, otelguard_action, otelguard_guard, "
            "otelguard_rule:") in block
    assert "weather-agent get_weather remind repeat-tool-reminder repeat-threshold 1 " in block
    assert "otelguard_spans_total, by otelguard_convention, otelguard_span_kind: genai model 23 genai tool 14" in block


def test_demo_lines_fit_100_columns_without_colour_off_a_terminal(default_run):
    """Every line of the run fits 100 columns; written to a file, not a terminal, it has no colour."""
    out = default_run[1]
    assert max(len(line) for line in out.splitlines()) <= 100, out
    assert "\x1b" not in out


def test_demo_alerts_come_in_scenario_order(default_run):
    """Alerts are printed as they fire, in scenario order."""
    out = words(default_run[1])
    positions = [out.index(words(alert)) for alert in ALERTS]
    assert positions == sorted(positions)


def test_demo_with_a_config_runs_only_the_configured_guards(tmp_path):
    """--config with only the repeat guard prints only the reminder alert and still exits 0."""
    config = tmp_path / "guards.yaml"
    config.write_text("guards:\n  - id: repeat-tool-reminder\n")
    status, out, _ = run_demo("--config", str(config))
    assert status == 0
    assert out.count("ALERT") == 1 and words(ALERTS[0]) in words(out)


# --- usage errors ------------------------------------------------------------------------------------

def test_invalid_config_exits_2_naming_the_field(tmp_path):
    """A config with a bad threshold exits 2 with one stderr line naming the field."""
    config = tmp_path / "guards.yaml"
    config.write_text("guards:\n  - id: repeat-tool-reminder\n    config: {thresholds: [1]}\n")
    status, out, err = run_demo("--config", str(config))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("otelguard demo: ") and "thresholds" in err


def test_malformed_serve_address_exits_2():
    """--serve without a usable HOST:PORT exits 2 before running anything."""
    status, out, err = run_demo("--serve", "localhost")
    assert (status, out) == (2, "")
    assert err == "otelguard demo: --serve expects HOST:PORT, e.g. 127.0.0.1:9464 (got 'localhost')\n"


def test_port_in_use_exits_1_with_one_line():
    """--serve on a port that is taken exits 1 with one line, before any scenario runs."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = run_demo("--serve", f"127.0.0.1:{port}")
    assert (status, out) == (1, "")
    assert err.startswith(f"otelguard demo: cannot serve metrics on 127.0.0.1:{port}: ") and err.count("\n") == 1


def test_unreachable_collector_exits_1_with_one_line():
    """--otlp to an address where nothing listens exits 1 with one line, before any scenario runs."""
    port = free_port()
    status, out, err = run_demo("--otlp", f"http://127.0.0.1:{port}")
    assert (status, out) == (1, "")
    assert err.startswith(f"otelguard demo: cannot reach the OTLP collector at http://127.0.0.1:{port}")


# --- --otlp ------------------------------------------------------------------------------------------

@pytest.fixture
def collector() -> Iterator[Collector]:
    yield from running_collector()


def test_otlp_exports_the_guarded_spans(collector):
    """--otlp sends the spans, enriched with the guard's verdicts, to /v1/traces."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    status, out, _ = run_demo("--otlp", collector.url)
    assert status == 0 and f"exported spans and metrics to {collector.url}" in out
    actions = set()
    for body in collector.received["/v1/traces"]:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    actions.update(a.value.string_value for a in span.attributes if a.key == "otelguard.action")
    assert {"remind", "steer", "break", "abort"} <= actions


def test_otlp_exports_the_guard_metrics(collector):
    """--otlp sends the guard's metrics (meter otelguard) to /v1/metrics."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    assert run_demo("--otlp", collector.url)[0] == 0
    names = set()
    for body in collector.received["/v1/metrics"]:
        request = ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                names.update(metric.name for metric in scope_metrics.metrics)
    assert {"otelguard.verdicts", "otelguard.spans", "otelguard.loop.tokens"} <= names


# --- --serve -----------------------------------------------------------------------------------------

def test_serve_exposes_the_guard_metrics_until_sigterm():
    """--serve serves every guard metric family on /metrics after the scenarios and exits 0 on SIGTERM."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", RUN_DEMO, "--serve", f"127.0.0.1:{port}"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:
            if line.startswith("serving metrics on "):
                break
        else:
            pytest.fail(f"demo ended before serving: {process.wait()} {process.stderr.read()}")
        assert line.split()[3] == f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            exposition = response.read().decode()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    series = {line.split("{")[0].split(" ")[0] for line in exposition.splitlines() if not line.startswith("#")}
    assert set(METRICS) <= series
