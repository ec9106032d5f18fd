"""The Prometheus alert rules in dashboards/alerts/, checked and unit-tested by the real promtool."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Callable

import pytest
import yaml
import paths

REPO = paths.ROOT
RULES = REPO / "dashboards" / "alerts" / "otelguard-rules.yaml"
RULE_TESTS = REPO / "dashboards" / "alerts" / "otelguard-rules.test.yaml"
REQUIRED_ALERTS = {
    "OtelguardLoopDetected",        # loops detected
    "OtelguardAgentThinkingLoops",  # thinking loops per agent
    "OtelguardToolTimeouts",        # tool timeouts
    "OtelguardInternalErrors",      # guard internal errors
    "OtelguardStateEvictions",      # state evictions
}


def _promtool(promtool: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.prometheus
def test_promtool_check_rules_accepts_the_rules(promtool: str, alert_rules: list[dict]) -> None:
    """`promtool check rules` accepts the rule file and counts every rule in it."""
    result = _promtool(promtool, "check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules)} rules found" in result.stdout


@pytest.mark.prometheus
def test_promtool_unit_tests_pass(promtool: str) -> None:
    """`promtool test rules` passes every unit test in otelguard-rules.test.yaml."""
    result = _promtool(promtool, "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.prometheus
def test_promtool_unit_tests_can_fail(promtool: str, tmp_path: Path) -> None:
    """The unit tests catch a wrong expectation: the same tests expecting another agent fail."""
    tests = yaml.safe_load(RULE_TESTS.read_text())
    tests["rule_files"] = [str(RULES)]
    first_alert = tests["tests"][0]["alert_rule_test"][0]["exp_alerts"][0]
    first_alert["exp_labels"]["gen_ai_agent_name"] = "some-other-agent"
    broken = tmp_path / "broken.test.yaml"
    broken.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = _promtool(promtool, "test", "rules", str(broken))
    assert result.returncode != 0
    assert "some-other-agent" in result.stdout + result.stderr


@pytest.mark.prometheus
def test_promtool_check_rules_rejects_a_broken_expression(promtool: str, tmp_path: Path) -> None:
    """`promtool check rules` fails on a rule file whose expression does not parse."""
    rules = yaml.safe_load(RULES.read_text())
    rules["groups"][0]["rules"][0]["expr"] = "sum by (job) (increase(otelguard_verdicts_total[5m]) >"
    broken = tmp_path / "broken.rules.yaml"
    broken.write_text(yaml.safe_dump(rules, sort_keys=False))
    result = _promtool(promtool, "check", "rules", str(broken))
    assert result.returncode != 0


def test_the_required_alerts_exist(alert_rules: list[dict]) -> None:
    """Loops, thinking loops per agent, tool timeouts, internal errors and evictions each have an alert."""
    assert REQUIRED_ALERTS <= {rule["alert"] for rule in alert_rules}


def test_every_alert_has_a_unit_test(alert_rules: list[dict]) -> None:
    """Each alert is the subject of at least one promtool test case that expects it to fire."""
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert {rule["alert"] for rule in alert_rules} <= fired


SEVERITIES = {"critical", "warning", "info"}


def severity_outcomes(severity: str) -> set[str]:
    """The values a severity label can take: itself, or each literal branch of a template."""
    return {part.strip() for part in re.split(r"\{\{.*?\}\}", severity) if part.strip()}


def test_every_alert_is_labelled_and_annotated(alert_rules: list[dict]) -> None:
    """Each alert carries a severity (Alertmanager routes on it) and a summary and description for the
    on-call person."""
    for rule in alert_rules:
        outcomes = severity_outcomes(rule.get("labels", {}).get("severity", ""))
        assert outcomes and outcomes <= SEVERITIES, rule["alert"]
        assert {"summary", "description"} <= set(rule.get("annotations", {})), rule["alert"]


def test_severity_outcomes_reads_template_branches() -> None:
    """A templated severity yields its literal branches; a purely dynamic one yields none (and is rejected)."""
    assert severity_outcomes("warning") == {"warning"}
    assert severity_outcomes('{{ if $labels.x | match "^a$" }}critical{{ else }}warning{{ end }}') == {
        "critical", "warning"
    }
    assert severity_outcomes("{{ $labels.x }}") == set()


def test_loop_alert_severity_follows_the_action(alert_rules: list[dict]) -> None:
    """The loop alert keeps the action as a label and derives its severity from it (tested by promtool in
    otelguard-rules.test.yaml: remind/steer/warn are warnings, block/cancel/break critical)."""
    loop = next(rule for rule in alert_rules if rule["alert"] == "OtelguardLoopDetected")
    assert "otelguard_action" in re.search(r"\bby\s*\(([^)]*)\)", loop["expr"]).group(1)
    assert severity_outcomes(loop["labels"]["severity"]) == {"critical", "warning"}


def test_every_alert_keeps_the_service_label(alert_rules: list[dict]) -> None:
    """Each alert aggregates `by (job, service_name, ...)` so an alert always says which service it is
    about: `service_name` where present (the senders behind one `otelguard serve`), else `job`."""
    for rule in alert_rules:
        groupings = re.findall(r"\bby\s*\(([^)]*)\)", rule["expr"])
        assert groupings, rule["alert"]
        assert all({"job", "service_name"} <= {l.strip() for l in g.split(",")} for g in groupings), rule["alert"]
        for text in rule["annotations"].values():
            assert "$labels.job" not in text.replace("or $labels.service_name $labels.job", ""), rule["alert"]


def test_alert_expressions_follow_the_metric_contract(
    alert_rules: list[dict], contract_violations: Callable[[str], list[str]]
) -> None:
    """Alert expressions use only the metric names, labels and label values of design §5."""
    problems = {rule["alert"]: contract_violations(rule["expr"]) for rule in alert_rules}
    assert {name: p for name, p in problems.items() if p} == {}


def test_contract_check_catches_a_misspelt_rule_value(contract_violations: Callable[[str], list[str]]) -> None:
    """The contract check itself fails on a label value outside the contract."""
    assert contract_violations('otelguard_verdicts_total{otelguard_rule="repeat-treshold"}') == [
        "otelguard_rule='repeat-treshold' is not a contract value"
    ]
