"""Alerts that reach a person: the shipped Alertmanager config, checked by amtool and run for real.

End to end: `otelguard demo --serve` is scraped by a real Prometheus that evaluates the shipped rules
(dashboards/alerts/otelguard-rules.yaml) and sends its alerts to a real Alertmanager (Debian's
prometheus-alertmanager) running the shipped dashboards/alerts/otelguard-alertmanager.yaml. Both
receivers of that config post to a webhook sink in this test: the webhook receiver's URL and the
Slack receiver's `api_url` point at it. The overlay changes only those URLs and the route timers
(seconds instead of minutes); the routing, grouping, matchers and inhibition are the shipped ones.
"""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from loopback_support import LoopbackServer
import paths

REPO = paths.ROOT
ALERTMANAGER_CONFIG = REPO / "dashboards" / "alerts" / "otelguard-alertmanager.yaml"
NOTIFY_TIMEOUT = 60.0

# What the demo's scripted loops do (otelguard/demo): a repeated tool call reminded (a warning), a
# stream cut mid-way (critical).
REMINDED_AGENT = "weather-agent"
CUT_OFF_AGENT = "reporter-agent"


def amtool_run(amtool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([amtool, *args], capture_output=True, text=True, timeout=60)


def routed_receivers(amtool: str, config: Path, *labels: str) -> set[str]:
    """The receivers `amtool config routes test` picks for an alert with `labels` (name=value)."""
    result = amtool_run(amtool, "config", "routes", "test", f"--config.file={config}", *labels)
    assert result.returncode == 0, result.stdout + result.stderr
    return set(result.stdout.strip().split(","))


@pytest.mark.alertmanager
def test_amtool_accepts_the_shipped_config(amtool: str) -> None:
    """`amtool check-config` accepts the shipped config: its route, inhibit rule and two receivers."""
    result = amtool_run(amtool, "check-config", str(ALERTMANAGER_CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 inhibit rules" in result.stdout and "2 receivers" in result.stdout


@pytest.mark.alertmanager
def test_amtool_rejects_a_config_routing_to_an_undefined_receiver(amtool: str, tmp_path: Path) -> None:
    """The check can fail: the shipped config routing to a receiver it does not define is rejected."""
    config = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())
    config["route"]["routes"][0]["routes"][0]["receiver"] = "nobody"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(config))
    result = amtool_run(amtool, "check-config", str(broken))
    assert result.returncode != 0 and "nobody" in result.stdout + result.stderr


@pytest.mark.alertmanager
@pytest.mark.parametrize(
    ("labels", "receivers"),
    [
        (("alertname=OtelguardLoopDetected", "severity=critical"), {"otelguard-slack", "otelguard-webhook"}),
        (("alertname=OtelguardLoopDetected", "severity=warning"), {"otelguard-webhook"}),
        (("alertname=OtelguardStateEvictions", "severity=info"), {"otelguard-webhook"}),
    ],
    ids=["critical-to-slack-and-webhook", "warning-to-webhook", "info-to-webhook"],
)
def test_shipped_routes_send_critical_alerts_to_slack_as_well(
    amtool: str, labels: tuple[str, ...], receivers: set[str]
) -> None:
    """Every otelguard alert reaches the webhook; critical ones reach Slack too."""
    assert routed_receivers(amtool, ALERTMANAGER_CONFIG, *labels) == receivers


# ---------------------------------------------------------------------------------------------
# End to end
# ---------------------------------------------------------------------------------------------


class WebhookSink(LoopbackServer):
    """A loopback HTTP server that keeps every JSON body posted to it, by path."""

    def __init__(self) -> None:
        self._received: list[tuple[str, Any]] = []
        self._changed = threading.Condition()
        super().__init__(self._posted)

    def _posted(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        with self._changed:
            self._received.append((path, json.loads(body)))
            self._changed.notify_all()
        return 200, "text/plain", b"ok"  # what Slack answers

    def posts(self, path: str) -> list[Any]:
        with self._changed:
            return [body for p, body in self._received if p == path]

    def wait_for(self, path: str, predicate, *, timeout: float, what: str) -> Any:
        """The first body posted to `path` for which `predicate` holds, waiting up to `timeout` s."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: next((b for p, b in self._received if p == path and predicate(b)), None), timeout=timeout
            )
        if found is None:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; {path} got {self.posts(path)}")
        return found


@pytest.fixture
def webhook_sink() -> Iterator[WebhookSink]:
    with WebhookSink() as sink:
        yield sink


def fast_overlay(config: dict[str, Any], sink_base: str) -> dict[str, Any]:
    """The shipped config with the receivers' URLs pointed at the sink and the timers in seconds."""
    config = json.loads(json.dumps(config))  # a deep copy

    def fast(route: dict[str, Any]) -> None:
        for key, value in (("group_wait", "0s"), ("group_interval", "1s"), ("repeat_interval", "1h")):
            if key in route:
                route[key] = value
        for child in route.get("routes") or []:
            fast(child)

    fast(config["route"])
    for receiver in config["receivers"]:
        for webhook in receiver.get("webhook_configs") or []:
            webhook["url"] = f"{sink_base}/webhook"
        for slack in receiver.get("slack_configs") or []:
            del slack["api_url_file"]
            slack["api_url"] = f"{sink_base}/slack"
    return config


def firing_for(agent: str, severity: str):
    """Predicate: a webhook notification whose firing alerts include the loop alert for `agent`."""

    def matches(body: dict[str, Any]) -> bool:
        return any(
            alert["status"] == "firing"
            and alert["labels"].get("alertname") == "OtelguardLoopDetected"
            and alert["labels"].get("gen_ai_agent_name") == agent
            and alert["labels"].get("severity") == severity
            for alert in body.get("alerts", [])
        )

    return matches


@pytest.mark.prometheus
@pytest.mark.alertmanager
@pytest.mark.timeout(180)
def test_loop_alert_reaches_the_webhook_and_slack_receivers(
    served_demo, prometheus_scraping, alertmanager_binary: str, processes, free_port, wait_until,
    webhook_sink: WebhookSink, tmp_path: Path,
) -> None:
    """The demo's loops reach the webhook, one notification per agent with its agent and rule labels;
    the critical one (a stream cut) reaches Slack too, the warning one (a reminder) does not."""
    config = tmp_path / "alertmanager.yml"
    config.write_text(yaml.safe_dump(fast_overlay(yaml.safe_load(ALERTMANAGER_CONFIG.read_text()), webhook_sink.base)))
    am_port = free_port()
    alertmanager = processes.start(
        "alertmanager",
        [
            alertmanager_binary,
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'alertmanager'}",
            f"--web.listen-address=127.0.0.1:{am_port}",
            "--cluster.listen-address=",  # a single instance: no gossip port
            "--log.level=warn",
        ],
    )

    def alertmanager_ready() -> bool:
        if alertmanager.process.poll() is not None:
            raise AssertionError(f"alertmanager exited:\n{alertmanager.output()}")
        with urllib.request.urlopen(f"http://127.0.0.1:{am_port}/-/ready", timeout=5) as response:
            return response.status == 200

    wait_until(alertmanager_ready, timeout=30, what="alertmanager to be ready")
    prometheus_scraping(
        served_demo, alerting={"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]}
    )

    reminded = webhook_sink.wait_for(
        "/webhook", firing_for(REMINDED_AGENT, "warning"), timeout=NOTIFY_TIMEOUT,
        what=f"the webhook to get OtelguardLoopDetected for {REMINDED_AGENT}",
    )
    alert = next(a for a in reminded["alerts"] if a["labels"]["gen_ai_agent_name"] == REMINDED_AGENT)
    expected = {
        "job": served_demo.job, "otelguard_guard": "repeat-tool-reminder", "otelguard_rule": "repeat-threshold",
        "otelguard_action": "remind",
    }
    assert {key: alert["labels"].get(key) for key in expected} == expected
    assert REMINDED_AGENT in alert["annotations"]["summary"]
    assert reminded["receiver"] == "otelguard-webhook"

    cut_off = webhook_sink.wait_for(
        "/webhook", firing_for(CUT_OFF_AGENT, "critical"), timeout=NOTIFY_TIMEOUT,
        what=f"the webhook to get the critical OtelguardLoopDetected for {CUT_OFF_AGENT}",
    )
    assert {a["labels"]["otelguard_rule"] for a in cut_off["alerts"]} == {"repeating-cycle"}
    slack = webhook_sink.wait_for(
        "/slack", lambda body: CUT_OFF_AGENT in body["attachments"][0]["title"], timeout=NOTIFY_TIMEOUT,
        what=f"the Slack receiver to post the critical alert for {CUT_OFF_AGENT}",
    )
    assert slack["channel"] == "#agent-alerts"
    assert slack["attachments"][0]["title"].startswith("[CRITICAL] OtelguardLoopDetected")
    assert "action break" in slack["attachments"][0]["text"]

    # Grouped by agent: every webhook notification is about one service and one agent.
    for body in webhook_sink.posts("/webhook"):
        assert {(a["labels"]["job"], a["labels"].get("gen_ai_agent_name")) for a in body["alerts"]} == {
            (body["commonLabels"]["job"], body["commonLabels"].get("gen_ai_agent_name"))
        }
    # Only critical alerts went to Slack.
    assert all(REMINDED_AGENT not in body["attachments"][0]["title"] for body in webhook_sink.posts("/slack"))
