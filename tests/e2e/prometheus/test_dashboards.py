"""The Grafana dashboards: generated as committed, valid for Grafana 11, and queries that parse."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from types import ModuleType
from typing import Callable

import jsonschema
import pytest
import yaml
import paths

REPO = paths.ROOT
DASHBOARDS = REPO / "dashboards"
SCHEMA = DASHBOARDS / "schema" / "dashboard.schema.json"
PANEL_TOPICS = {
    # what the issue asks for -> a panel title that shows it
    "loop alerts over time by guard/rule/agent": "Loop alerts by guard, rule and agent",
    "top looping tools": "Top looping tools",
    "thinking loops": "Thinking loops by agent and rule",
    "stream breaks": "Stream breaks by agent",
    "tool timeouts": "Tool timeouts by tool",
    "tokens spent in loops by model": "Tokens spent in loops by model",
    "control-hook outcomes": "Control-hook outcomes",
    "spans processed": "Spans judged per second",
    "internal errors": "Internal errors",
    "evictions": "State evictions",
    "processing time": "Guard processing time (p50 / p95 / p99)",
}


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("otelguard_dashboards_generate", DASHBOARDS / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def committed() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((DASHBOARDS / "json").glob("*.json"))}


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA.read_text())


def all_panels(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels") or [])
    return out


def test_committed_json_is_what_the_generator_produces(generator: ModuleType) -> None:
    """dashboards/json/ holds exactly the generator's output, byte for byte."""
    fresh = generator.generate()
    on_disk = {p.name: p.read_text() for p in (DASHBOARDS / "json").glob("*.json")}
    assert sorted(on_disk) == sorted(fresh)
    for name, text in fresh.items():
        assert on_disk[name] == text, f"{name} is stale: run python dashboards/generate.py"


def test_generator_check_mode_reports_fresh_json(generator: ModuleType) -> None:
    """`generate.py --check` exits 0 when the committed JSON is current."""
    assert generator.main(["--check"]) == 0


def test_dashboards_validate_against_grafana_schema(committed: dict[str, dict], schema: dict) -> None:
    """Every dashboard is valid for the Dashboard type of Grafana's own @grafana/schema."""
    validator = jsonschema.Draft7Validator(schema)
    for name, dashboard in committed.items():
        errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(dashboard)]
        assert errors == [], name


@pytest.mark.parametrize(
    ("mutation", "why"),
    [
        (lambda d: d["panels"][1].__setitem__("gridPoss", {"x": 0}), "unknown panel key"),
        (lambda d: d["panels"][1].__setitem__("title", 42), "panel title not a string"),
        (lambda d: d.__delitem__("schemaVersion"), "schemaVersion missing"),
        (lambda d: d["templating"]["list"][1].__setitem__("type", "dropdown"), "unknown variable type"),
        (lambda d: d["panels"][1]["gridPos"].__setitem__("w", "wide"), "grid width not a number"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_schema_rejects_a_broken_dashboard(committed: dict[str, dict], schema: dict, mutation, why: str) -> None:
    """The derived schema is strict enough to reject a dashboard broken in one place."""
    broken = copy.deepcopy(committed["otelguard-overview.json"])
    mutation(broken)
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken)), why


def test_schema_was_derived_from_the_pinned_grafana_schema() -> None:
    """The committed schema names the @grafana/schema version that package-lock.json pins (11.x)."""
    lock = json.loads((DASHBOARDS / "schema" / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/@grafana/schema"]["version"]
    assert version.startswith("11.")
    assert f"@grafana/schema {version}" in json.loads(SCHEMA.read_text())["$comment"]


@pytest.mark.prometheus
def test_every_panel_query_is_valid_promql(
    dashboard_targets, render_promql: Callable[..., str], promql_syntax_check
) -> None:
    """promtool parses every panel query (Grafana variables rendered as Grafana would)."""
    result = promql_syntax_check({t.id: render_promql(t.expr) for t in dashboard_targets})
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(dashboard_targets)} rules found" in result.stdout


@pytest.mark.prometheus
def test_promql_syntax_check_can_fail(promql_syntax_check) -> None:
    """The promtool syntax check rejects a query that does not parse."""
    result = promql_syntax_check({"broken": "sum by (job) (rate(otelguard_spans_total[1m])"})
    assert result.returncode != 0


def test_every_panel_query_follows_the_metric_contract(
    dashboard_targets, contract_violations: Callable[[str], list[str]]
) -> None:
    """Panel queries use only the metric names, labels and label values of design §5."""
    problems = {t.id: contract_violations(t.expr) for t in dashboard_targets}
    assert {k: v for k, v in problems.items() if v} == {}


SERVICE_NAMED = 'service_name=~"$service"'
SERVICE_BY_JOB = 'service_name="", job=~"$service"'


def test_every_query_is_filtered_by_the_template_variables(dashboard_targets) -> None:
    """Every selector filters on $service, as a series' service is read: its service_name where present
    (the senders behind one `otelguard serve`), else its job; each query reads both forms alike.
    Every verdict selector also filters on $agent."""
    for target in dashboard_targets:
        without_grouping = re.sub(r"\b(?:by|without)\s*\([^)]*\)", "", target.expr)
        names = re.findall(r"\botelguard_[a-z_]+", re.sub(r"\{[^}]*\}", "{}", without_grouping))
        selectors = re.findall(r"\b(otelguard_[a-z_]+)\{([^}]*)\}", without_grouping)
        assert names and len(selectors) == len(names), f"{target.id}: a selector without matchers"
        named = [matchers for _, matchers in selectors if matchers.startswith(SERVICE_NAMED)]
        by_job = [matchers for _, matchers in selectors if matchers.startswith(SERVICE_BY_JOB)]
        assert len(named) + len(by_job) == len(selectors), target.id
        assert [m.removeprefix(SERVICE_NAMED) for m in named] == [m.removeprefix(SERVICE_BY_JOB) for m in by_job]
        for metric, matchers in selectors:
            if metric == "otelguard_verdicts_total":
                assert 'gen_ai_agent_name=~"$agent"' in matchers, target.id


def test_template_variables_cover_datasource_service_and_agent(committed: dict[str, dict]) -> None:
    """Each dashboard offers a Prometheus data source, a service (service_name, else job) and an agent
    variable (what each yields: test_dashboard_services.py)."""
    for name, dashboard in committed.items():
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
        assert variables["service"]["query"].startswith("query_result(count by (service) ("), name
        assert variables["agent"]["query"].startswith("query_result(count by (gen_ai_agent_name) ("), name
        assert '$service' in variables["agent"]["query"], name
        for var in ("service", "agent"):
            assert variables[var]["includeAll"] and variables[var]["allValue"] == ".*", (name, var)


def test_every_panel_and_query_uses_the_datasource_variable(committed: dict[str, dict]) -> None:
    """Panels and their queries point at ${datasource}, so any Prometheus works."""
    for name, dashboard in committed.items():
        for panel in all_panels(dashboard):
            if panel["type"] == "row":
                continue
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, (name, panel["title"])
            for target in panel["targets"]:
                assert target["datasource"] == panel["datasource"], (name, panel["title"])


def test_overview_has_the_requested_panels(committed: dict[str, dict]) -> None:
    """The overview shows every topic the issue asks for, each panel with a description."""
    panels = {p["title"]: p for p in all_panels(committed["otelguard-overview.json"])}
    missing = {topic: title for topic, title in PANEL_TOPICS.items() if title not in panels}
    assert missing == {}
    for title, panel in panels.items():
        if panel["type"] != "row":
            assert panel.get("description"), title


def test_panel_ids_are_unique_and_layout_fits_the_grid(committed: dict[str, dict]) -> None:
    """Panel ids are unique and every panel lies within Grafana's 24-column grid."""
    for name, dashboard in committed.items():
        panels = all_panels(dashboard)
        assert len({p["id"] for p in panels}) == len(panels), name
        for panel in panels:
            pos = panel["gridPos"]
            assert 0 <= pos["x"] and pos["x"] + pos["w"] <= 24, (name, panel["title"])


def test_provisioning_files_point_grafana_at_the_dashboards() -> None:
    """The provisioning files load the JSON folder as file dashboards and add a Prometheus source."""
    provider = yaml.safe_load((DASHBOARDS / "provisioning" / "dashboards" / "otelguard.yaml").read_text())
    assert provider["apiVersion"] == 1
    [entry] = provider["providers"]
    assert entry["type"] == "file" and entry["options"]["path"]
    datasources = yaml.safe_load((DASHBOARDS / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    assert datasources["apiVersion"] == 1
    [source] = datasources["datasources"]
    assert source["type"] == "prometheus" and source["jsonData"]["timeInterval"] == "15s"
