"""The dashboard's Service variable and filters on two services behind one `otelguard serve` and one
service scraped on its own, evaluated by the real promtool (`promql_expr_test`): a series' service is
its `service_name` where present (serve labels each sender's verdicts and spans so), else its `job`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
import paths

OVERVIEW = paths.DASHBOARDS / "json" / "otelguard-overview.json"
SERVE = 'job="otelguard-serve"'
# Verdict counters (each at a constant) of two senders of one serve and of an agent scraped directly.
VERDICTS = {f'{SERVE}, service_name="support-agent", gen_ai_agent_name="triage"': 5,
            f'{SERVE}, service_name="billing-agent", gen_ai_agent_name="invoicer"': 3,
            'job="direct-agent", gen_ai_agent_name="planner"': 2}
LOOP = 'gen_ai_tool_name="search", otelguard_guard="no-progress", otelguard_rule="cycle", otelguard_action="remind"'
SERIES = {
    **{f"otelguard_verdicts_total{{{labels}, {LOOP}}}": f"{value}x10" for labels, value in VERDICTS.items()},
    f'otelguard_spans_total{{{SERVE}, service_name="support-agent", otelguard_span_kind="tool"}}': "1x10",
    f'otelguard_spans_total{{{SERVE}, service_name="billing-agent", otelguard_span_kind="tool"}}': "1x10",
    f'otelguard_internal_errors_total{{{SERVE}, where="judge"}}': "0x10",  # the service's own health
    'otelguard_spans_total{job="direct-agent", otelguard_span_kind="tool"}': "1x10",
    'otelguard_internal_errors_total{job="direct-agent", where="on_end"}': "0x10",
}


def _dashboard() -> tuple[dict[str, dict], dict[str, str]]:
    """The overview's query variables, and its panel queries by title."""
    dashboard = json.loads(OVERVIEW.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"] if v["type"] == "query"}
    panels = {p["title"]: p["targets"][0]["expr"] for p in dashboard["panels"] if p.get("targets")}
    return variables, panels


def _inner(variable: dict, service: str = ".*") -> str:
    """A `query_result(expr)` variable's expression, with $service rendered."""
    return re.fullmatch(r"query_result\((.+)\)", variable["query"], re.DOTALL).group(1).replace("$service", service)


@pytest.mark.prometheus
def test_two_services_behind_one_serve_are_two_services(promtool: str, tmp_path: Path, render_promql) -> None:
    variables, panels = _dashboard()
    loop_alerts = panels["Loop alerts"]  # the summary's count over the selected range
    checks = [
        # The Service variable offers each sender of the serve, the serve itself (its own health
        # counters) and the agent scraped on its own; the counts are each one's series.
        (_inner(variables["service"]), [('{service="billing-agent"}', 1), ('{service="direct-agent"}', 2),
                                         ('{service="otelguard-serve"}', 1), ('{service="support-agent"}', 1)]),
        # The Agent variable offers the agents of the chosen service only.
        (_inner(variables["agent"], "billing-agent"), [('{gen_ai_agent_name="invoicer"}', 1)]),
        (_inner(variables["agent"], "direct-agent"), [('{gen_ai_agent_name="planner"}', 1)]),
    ]
    # A panel counts the chosen service's verdicts only, whichever label names it; all of them with All.
    for service, expected in (("support-agent", 5), ("billing-agent", 3), ("direct-agent", 2), (".*", 10)):
        checks.append((render_promql(loop_alerts, {"$service": service, "$__range": "1h"}), [("{}", expected)]))
    checks.append((render_promql(loop_alerts, {"$service": "otelguard-serve", "$__range": "1h"}), []))
    tests = {"tests": [{
        "interval": "1m",
        "input_series": [{"series": series, "values": values} for series, values in SERIES.items()],
        "promql_expr_test": [{"expr": expr, "eval_time": "5m",
                              "exp_samples": [{"labels": labels, "value": value} for labels, value in samples]}
                             for expr, samples in checks],
    }]}
    path = tmp_path / "services.test.yaml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
