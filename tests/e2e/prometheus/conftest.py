"""Fixtures for the metrics tests: Prometheus tools, real processes, and the queries we ship.

Real binaries only: `promtool` and `prometheus` come from Debian's `prometheus` package,
`prometheus-alertmanager` and `amtool` from `prometheus-alertmanager`; `.ci/run` installs both. A
test handed one carries its package's marker (`@pytest.mark.prometheus` / `alertmanager`); under CI
(CI=true) a missing binary fails the test, elsewhere it is skipped with the install command, so a
developer without them can still run the rest of the suite (see tests/support/external_support.py).
Every process a test starts goes through `processes` and is stopped when the test ends.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pytest
import yaml
from external_support import binary
import paths

REPO = paths.ROOT
DASHBOARD_DIR = REPO / "dashboards" / "json"
RULES_FILE = REPO / "dashboards" / "alerts" / "otelguard-rules.yaml"

T = TypeVar("T")


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path of the real promtool binary."""
    return binary("prometheus", "promtool")


@pytest.fixture(scope="session")
def prometheus_binary() -> str:
    """Path of the real prometheus server binary."""
    return binary("prometheus", "prometheus")


@pytest.fixture(scope="session")
def alertmanager_binary() -> str:
    """Path of the real Alertmanager server binary (Debian's prometheus-alertmanager)."""
    return binary("alertmanager", "prometheus-alertmanager")


@pytest.fixture(scope="session")
def amtool() -> str:
    """Path of the real amtool (Alertmanager's config checker and router tester)."""
    return binary("alertmanager", "amtool")


@pytest.fixture
def free_port() -> Callable[[], int]:
    """Return a function that finds a free TCP port on 127.0.0.1."""

    def find() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]

    return find


class WaitTimeout(AssertionError):
    """`wait_until` ran out of time (as opposed to a probe failing for good)."""


def wait_until(probe: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.25) -> T:
    """Poll `probe` until it returns something other than None/False, or fail after `timeout` s.

    A probe's OSError (connection refused, HTTP 503 while a server starts) means "not yet" and is
    retried; any other exception (e.g. "the process exited") ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if result is not None and result is not False:
                return result
        except OSError as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


@pytest.fixture(name="wait_until")
def wait_until_fixture() -> Callable[..., object]:
    """The polling helper: `wait_until(probe, timeout=..., what=...)`."""
    return wait_until


@dataclass
class Started:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


class Processes:
    """Starts processes with their output in a log file; stops every one of them at teardown."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._started: list[Started] = []

    def start(self, name: str, argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> Started:
        log = self._log_dir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                start_new_session=True,  # its own process group: stopped together with its children
            )
        started = Started(name, process, log)
        self._started.append(started)
        return started

    @staticmethod
    def stop(started: Started, *, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send `sig` to the process group, wait, escalate to SIGKILL; return the exit code."""
        process = started.process
        if process.poll() is None:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(timeout=timeout)
        return process.returncode

    def stop_all(self) -> None:
        for started in reversed(self._started):
            self.stop(started)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """Process starter whose processes are all stopped when the test ends, pass or fail."""
    runner = Processes(tmp_path)
    try:
        yield runner
    finally:
        runner.stop_all()


# ---------------------------------------------------------------------------------------------
# The guarded demo and a Prometheus scraping it
# ---------------------------------------------------------------------------------------------

DEMO_START_TIMEOUT = 90.0  # the demo's scripted runs take < 30 s (issue 4); installs may be cold


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # loopback only
        return response.status, response.read().decode()


class PrometheusAPI:
    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **params: str | list[str]) -> Any:
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            status, body = http_get(f"{self.base}{path}?{query}")
        except urllib.error.HTTPError as exc:
            if exc.code in (400, 422):  # a bad query: no point retrying
                raise AssertionError(f"Prometheus rejected {path} {params}: {exc.read().decode()}") from None
            raise
        payload = json.loads(body)
        assert status == 200 and payload["status"] == "success", payload
        return payload["data"]

    def query(self, expr: str) -> list[dict]:
        """Instant query at the current time; the result vector."""
        data = self.get("/api/v1/query", query=expr)
        assert data["resultType"] == "vector", data
        return data["result"]

    def label_values(self, label: str, match: str) -> list[str]:
        return self.get(f"/api/v1/label/{label}/values", **{"match[]": match})


@dataclass
class ServedDemo:
    started: Started
    port: int
    # Prometheus' scrape job for it: the `job` label, i.e. what the dashboards call the service.
    job: str = "otelguard-demo"


@pytest.fixture
def served_demo(processes: Processes, free_port: Callable[[], int]) -> ServedDemo:
    """`otelguard demo --serve` on a free loopback port, once it serves the guard's metrics."""
    port = free_port()
    demo = processes.start(
        "demo", [sys.executable, "-m", "otelguard", "demo", "--serve", f"127.0.0.1:{port}"], cwd=REPO
    )
    metrics_url = f"http://127.0.0.1:{port}/metrics"

    def demo_serving() -> bool:
        if demo.process.poll() is not None:
            raise AssertionError(f"demo exited with {demo.process.returncode}:\n{demo.output()}")
        status, body = http_get(metrics_url)
        return status == 200 and "otelguard_verdicts_total" in body

    try:
        wait_until(demo_serving, timeout=DEMO_START_TIMEOUT, what=f"the demo to serve guard metrics at {metrics_url}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- demo output ---\n{demo.output()}") from None
    return ServedDemo(demo, port)


@pytest.fixture
def prometheus_scraping(
    processes: Processes, free_port: Callable[[], int], prometheus_binary: str, tmp_path: Path
) -> Callable[..., tuple[Started, PrometheusAPI]]:
    """`prometheus_scraping(demo, **extra_config)`: a real Prometheus scraping the demo every second
    with the shipped rules loaded (evaluated every second), ready and with the demo's target up."""

    def start(demo: ServedDemo, **extra_config: Any) -> tuple[Started, PrometheusAPI]:
        port = free_port()
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES_FILE)],
            "scrape_configs": [
                {"job_name": demo.job, "static_configs": [{"targets": [f"127.0.0.1:{demo.port}"]}]},
            ],
            **extra_config,
        }
        config_path = tmp_path / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(config))
        prometheus = processes.start(
            "prometheus",
            [
                prometheus_binary,
                f"--config.file={config_path}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
        )
        base = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            if prometheus.process.poll() is not None:
                raise AssertionError(f"prometheus exited:\n{prometheus.output()}")
            return http_get(f"{base}/-/ready")[0] == 200

        wait_until(ready, timeout=30, what="prometheus to be ready")
        api = PrometheusAPI(base)
        wait_until(
            lambda: any(t["health"] == "up" for t in api.get("/api/v1/targets")["activeTargets"]),
            timeout=30,
            what="prometheus to scrape the demo successfully",
        )
        return prometheus, api

    return start


# ---------------------------------------------------------------------------------------------
# The queries we ship
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PanelTarget:
    dashboard: str
    panel: str
    ref: str
    expr: str

    @property
    def id(self) -> str:
        return f"{self.dashboard}:{self.panel}:{self.ref}"


def _panels(panels: list[dict]) -> Iterator[dict]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])  # collapsed rows nest their panels


def load_dashboard_targets() -> list[PanelTarget]:
    targets = []
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        for panel in _panels(json.loads(path.read_text()).get("panels", [])):
            for target in panel.get("targets") or []:
                targets.append(PanelTarget(path.stem, panel["title"], target["refId"], target["expr"]))
    return targets


@pytest.fixture(scope="session")
def dashboard_targets() -> list[PanelTarget]:
    """Every query of every panel of every committed dashboard."""
    targets = load_dashboard_targets()
    assert targets, f"no panel queries found in {DASHBOARD_DIR}"
    return targets


@pytest.fixture(scope="session")
def alert_rules() -> list[dict]:
    """Every alerting rule of dashboards/alerts/otelguard-rules.yaml."""
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    rules = [rule for group in groups for rule in group["rules"] if "alert" in rule]
    assert rules, f"no alerting rules in {RULES_FILE}"
    return rules


# Grafana's built-in variables, rendered the way Grafana would for a 1h range: $__rate_interval
# with a 15s scrape interval is 1m; our template variables with "All" selected use allValue ".*".
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "1h",
    "$service": ".*",
    "$agent": ".*",
}
_LEFTOVER_VARIABLE = re.compile(r"\$\{?[A-Za-z_]\w*")


def render_promql(expr: str, variables: dict[str, str] | None = None) -> str:
    """Substitute Grafana variables in a panel query; fail on any variable left unknown."""
    values = {**GRAFANA_VARIABLES, **(variables or {})}
    for name in sorted(values, key=len, reverse=True):  # $__rate_interval before $__range etc.
        expr = expr.replace(name, values[name])
    leftover = _LEFTOVER_VARIABLE.search(expr)
    assert leftover is None, f"unknown variable {leftover.group(0)} in {expr}"
    return expr


@pytest.fixture(name="render_promql", scope="session")
def render_promql_fixture() -> Callable[..., str]:
    """`render_promql(expr, variables=None)`: a panel query as Grafana would send it."""
    return render_promql


# ---------------------------------------------------------------------------------------------
# The metric contract (design §5), in the names Prometheus sees
# ---------------------------------------------------------------------------------------------

# Prometheus series name -> labels it may carry besides the target labels (job, instance).
METRIC_LABELS: dict[str, frozenset[str]] = {
    "otelguard_verdicts_total": frozenset(
        {"otelguard_guard", "otelguard_rule", "otelguard_action", "gen_ai_agent_name", "gen_ai_tool_name"}
    ),
    "otelguard_spans_total": frozenset({"otelguard_span_kind", "otelguard_convention"}),
    "otelguard_repeat_run_length_bucket": frozenset({"le"}),
    "otelguard_loop_tokens_total": frozenset({"otelguard_guard", "gen_ai_request_model"}),
    "otelguard_loop_cost_usd_total": frozenset(
        {"otelguard_guard", "otelguard_rule", "gen_ai_agent_name", "gen_ai_request_model"}
    ),
    "otelguard_control_calls_total": frozenset({"otelguard_action", "outcome"}),
    "otelguard_internal_errors_total": frozenset({"where"}),
    "otelguard_state_evictions_total": frozenset(),
    "otelguard_processing_duration_seconds_bucket": frozenset({"le"}),
}
TARGET_LABELS = frozenset({"job", "instance"})
# The sender's service.name, which `otelguard serve` puts on each sender's verdicts and spans. A series
# without it reads it as empty, so the queries match and group by it on any metric.
ANY_METRIC_LABELS = TARGET_LABELS | {"service_name"}
# Labels whose values the contract enumerates.
LABEL_VALUES: dict[str, frozenset[str]] = {
    "otelguard_guard": frozenset({"timeout-policy", "repeat-tool-reminder", "thinking-loop-guard", "no-progress"}),
    "otelguard_rule": frozenset({
        "tool-timeout", "framework-timeout", "repeat-threshold", "repeat-stop", "reasoning-only",
        "repeated-material", "low-entropy", "identical-chunks", "repeating-cycle", "long-cycle", "low-novelty",
        "text-loop", "cycle", "interleaved-repeat", "same-result", "error-loop", "near-duplicate",
    }),
    "otelguard_action": frozenset({"none", "remind", "warn", "steer", "cancel", "block", "break", "abort"}),
    "otelguard_span_kind": frozenset({"agent", "model", "tool"}),
    "outcome": frozenset({"ok", "error", "unbound"}),
}

_SELECTOR = re.compile(r"\b(otelguard_[a-z_]+)\s*(?:\{([^}]*)\})?")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def contract_violations(expr: str) -> list[str]:
    """Names, labels and label values in `expr` that the metric contract does not define."""
    problems: list[str] = []
    metrics = set()
    for name, matchers in _SELECTOR.findall(_GROUPING.sub("", expr)):
        if name not in METRIC_LABELS:
            problems.append(f"unknown metric {name}")
            continue
        metrics.add(name)
        for part in filter(str.strip, matchers.split(",")) if matchers else []:
            match = _MATCHER.fullmatch(part)
            if match is None:
                problems.append(f"unparsable matcher {part!r}")
                continue
            label, op, value = match.groups()
            if label not in METRIC_LABELS[name] | ANY_METRIC_LABELS:
                problems.append(f"{name} has no label {label}")
            elif label in LABEL_VALUES and "$" not in value:
                for alternative in value.split("|") if op in ("=~", "!~") else [value]:
                    if alternative not in LABEL_VALUES[label]:
                        problems.append(f"{label}={alternative!r} is not a contract value")
    allowed = ANY_METRIC_LABELS.union(*(METRIC_LABELS[m] for m in metrics)) if metrics else ANY_METRIC_LABELS
    for grouping in _GROUPING.findall(expr):
        for label in filter(None, (l.strip() for l in grouping.split(","))):
            if label not in allowed:
                problems.append(f"grouping by {label}, which none of {sorted(metrics)} carries")
    if not metrics:
        problems.append("no otelguard metric in the expression")
    return problems


@pytest.fixture(name="contract_violations", scope="session")
def contract_violations_fixture() -> Callable[[str], list[str]]:
    """`contract_violations(expr)`: metric names/labels/values in expr outside design §5."""
    return contract_violations


def run_promtool_check_rules(promtool: str, exprs: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `promtool check rules` on a file holding each expr as a recording rule (a syntax check)."""
    rules = {"groups": [{"name": "syntax", "rules": [
        {"record": f"otelguard:check_{i}", "expr": expr} for i, expr in enumerate(exprs.values())
    ]}]}
    path = tmp_path / "syntax-check.rules.yaml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def promql_syntax_check(promtool: str, tmp_path: Path) -> Callable[[dict[str, str]], subprocess.CompletedProcess[str]]:
    """`promql_syntax_check({name: expr})`: promtool's verdict on every expression at once."""
    return lambda exprs: run_promtool_check_rules(promtool, exprs, tmp_path)
