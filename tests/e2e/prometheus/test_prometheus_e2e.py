"""End to end: a real Prometheus scrapes the guarded demo agent; every shipped query returns data.

Contract with the demo (issue 4): `python -m otelguard demo --serve 127.0.0.1:PORT` runs a scripted
agent through every loop kind, guarded, then keeps serving the guard's metrics at
http://127.0.0.1:PORT/metrics until SIGTERM or SIGINT, and exits 0.

This test starts the real `prometheus` binary on a free loopback port with a scrape job for the
demo and the shipped alert rules loaded, waits (polling, with deadlines) until data arrives, then
runs every dashboard panel query and every alert expression through Prometheus' HTTP API. Both
processes are stopped at the end, pass or fail.

"Returns series" includes the failure counters (internal errors, evictions, control calls that
ended error/unbound): a healthy demo has none of those events, so the guard must create those
series at zero when it starts, which is also what lets Prometheus tell "0 errors" from "no data".
"""

from __future__ import annotations

import json
import re
import signal
from typing import Any, Callable

import pytest
import paths

REPO = paths.ROOT
DASHBOARD_DIR = REPO / "dashboards" / "json"
DATA_TIMEOUT = 90.0

pytestmark = pytest.mark.timeout(300)


# The alert expressions are `<aggregation> <comparison> <threshold>`. The demo's counters are
# mostly already at their final value when first scraped, and thresholds like `>= 3` within a
# window need more activity than one scripted run, so the full expression may rightly return
# nothing. What must hold on real data is the aggregation on the left: the metric exists with the
# labels the alert groups and filters by (a typo in any of them returns nothing). The full
# expression is still run, and must be accepted by the server.
_THRESHOLD = re.compile(r"^(?P<inner>.*\S)\s*(?:>|>=|<|<=|==|!=)\s*[0-9.eE+-]+\s*$", re.DOTALL)


def split_threshold(expr: str) -> str:
    match = _THRESHOLD.match(expr.strip())
    assert match is not None, f"alert expression is not '<aggregation> <cmp> <number>': {expr}"
    return match.group("inner")


def grafana_regex_escape(value: str) -> str:
    """Escape a variable value for a `=~` matcher the way Grafana's Prometheus data source does:
    regex metacharacters get a backslash, then the result is escaped as a PromQL string literal."""
    regex = re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", value)
    return regex.replace("\\", "\\\\").replace('"', '\\"')


def variable_queries() -> dict[str, dict]:
    """name -> each query variable of the dashboards (its `query` and `regex`)."""
    found: dict[str, dict] = {}
    for path in sorted(DASHBOARD_DIR.glob("*.json")):
        for variable in json.loads(path.read_text())["templating"]["list"]:
            if variable["type"] == "query":
                found[variable["name"]] = variable
    return found


def run_variable_query(api: Any, variable: dict, variables: dict[str, str]) -> list[str]:
    """Evaluate a Grafana `query_result(expr)` variable the way Grafana does: each series written as
    `{label="value", ...} value timestamp`, the variable's regex capturing the value it offers."""
    match = re.fullmatch(r"query_result\((.+)\)", variable["query"], re.DOTALL)
    assert match is not None, variable["query"]
    expr = match.group(1)
    for name, value in variables.items():
        expr = expr.replace(f"${name}", value)
    pattern = re.compile(variable["regex"].strip("/"))
    values = []
    for series in api.query(expr):
        labels = ", ".join(f'{key}="{value}"' for key, value in sorted(series["metric"].items()))
        found = pattern.search("{" + labels + "} " + " ".join(map(str, series["value"][::-1])))
        if found:
            values.append(found.group(1))
    return sorted(set(values))


@pytest.fixture
def demo_and_prometheus(served_demo, prometheus_scraping):
    """The demo serving metrics and a Prometheus scraping it every second, both running."""
    prometheus, api = prometheus_scraping(served_demo)
    return served_demo.started, prometheus, api


def wait_for_series(
    api: Any, queries: dict[str, str], wait_until: Callable[..., Any], what: str
) -> None:
    """Poll until every query returns at least one series; fail naming the ones that never did."""
    pending = dict(queries)

    def all_answered() -> bool:
        for name, expr in list(pending.items()):
            if api.query(expr):
                del pending[name]
        return not pending

    try:
        wait_until(all_answered, timeout=DATA_TIMEOUT, what=what)
    except AssertionError as exc:
        if type(exc).__name__ != "WaitTimeout":  # e.g. Prometheus rejected a query: report that
            raise
        listing = "\n".join(f"  {name}: {expr}" for name, expr in pending.items())
        raise AssertionError(f"{len(pending)} of {len(queries)} {what} returned no series:\n{listing}") from None


@pytest.mark.prometheus
def test_every_shipped_query_returns_series_from_the_guarded_demo(
    served_demo, demo_and_prometheus, dashboard_targets, alert_rules, render_promql, wait_until, processes
) -> None:
    """Every dashboard panel query and every alert expression returns series on real demo data."""
    demo, prometheus, api = demo_and_prometheus
    job = served_demo.job

    # The template variables resolve: the demo's job is a service, and it has judged agents.
    var_queries = variable_queries()
    services = wait_until(
        lambda: run_variable_query(api, var_queries["service"], {"service": ".*"}), timeout=DATA_TIMEOUT,
        what="service values"
    )
    assert job in services
    agents = wait_until(
        lambda: run_variable_query(api, var_queries["agent"], {"service": job}),
        timeout=DATA_TIMEOUT,
        what="agent values",
    )

    # Every panel query, with "All" selected, returns series.
    panels = {t.id: render_promql(t.expr) for t in dashboard_targets}
    wait_for_series(api, panels, wait_until, "dashboard panel queries")

    # ... and so does each with the demo's service and its agents selected explicitly (Grafana
    # renders a multi-value selection as a regex alternation) ...
    chosen = {"$service": grafana_regex_escape(job), "$agent": "|".join(map(grafana_regex_escape, agents))}
    wait_for_series(
        api, {t.id: render_promql(t.expr, chosen) for t in dashboard_targets}, wait_until,
        "panel queries for the selected service and agents",
    )
    # ... while a service or agent that does not exist empties every panel that it filters.
    for target in dashboard_targets:
        assert api.query(render_promql(target.expr, {"$service": "no-such-service"})) == [], target.id
        if "$agent" in target.expr:
            assert api.query(render_promql(target.expr, {"$agent": "no-such-agent"})) == [], target.id

    # Every alert expression is accepted by the server, and its aggregation returns series.
    for rule in alert_rules:
        api.query(rule["expr"])  # raises unless Prometheus accepts it
    wait_for_series(
        api, {rule["alert"]: split_threshold(rule["expr"]) for rule in alert_rules}, wait_until,
        "alert aggregations",
    )

    # The rules, loaded into this Prometheus, are evaluated without errors.
    def rules_evaluated() -> list[dict] | None:
        groups = api.get("/api/v1/rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        evaluated = all(r.get("lastEvaluation", "").startswith("0001") is False for r in rules)
        return rules if rules and evaluated else None

    rules = wait_until(rules_evaluated, timeout=30, what="the alert rules to be evaluated")
    assert {r["name"] for r in rules} == {rule["alert"] for rule in alert_rules}
    assert [r for r in rules if r["health"] != "ok"] == []

    # The demo's loops are minutes old at most, so the loop alert is firing, for a judged agent.
    def loop_alerts() -> list[dict] | None:
        alerts = api.get("/api/v1/alerts")["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "OtelguardLoopDetected" and a["state"] == "firing"] or None

    firing = wait_until(loop_alerts, timeout=30, what="OtelguardLoopDetected to fire on the demo's loops")
    assert {a["labels"]["gen_ai_agent_name"] for a in firing} <= set(agents)
    assert {a["labels"]["job"] for a in firing} == {job}

    # The demo stops cleanly on SIGTERM.
    assert processes.stop(demo, sig=signal.SIGTERM) == 0, demo.output()


def test_split_threshold_keeps_the_aggregation() -> None:
    """The alert-expression splitter returns the aggregation left of the final comparison."""
    assert split_threshold("sum by (job) (\n  increase(x_total[5m])\n) >= 3\n") == "sum by (job) (\n  increase(x_total[5m])\n)"
    with pytest.raises(AssertionError):
        split_threshold("sum by (job) (increase(x_total[5m]))")


def test_grafana_regex_escape_matches_grafanas_rendering() -> None:
    """Variable values are regex-escaped, then escaped for the PromQL string literal."""
    assert grafana_regex_escape("planner-agent") == "planner-agent"
    assert grafana_regex_escape("a.b(c)") == "a\\\\.b\\\\(c\\\\)"
    assert grafana_regex_escape('say "hi"') == 'say \\"hi\\"'
