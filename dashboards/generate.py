#!/usr/bin/env python3
"""Generate otelguard's Grafana dashboards as code (grafana-foundation-sdk, Grafana 11.x build).

    python dashboards/generate.py          # (re)write dashboards/json/*.json
    python dashboards/generate.py --check  # exit 1 if the committed JSON is not what this generates

The queries use the Prometheus names of the guard's metrics (design §5) as the OpenTelemetry
Prometheus exporter (SDK or collector) produces them: `otelguard.verdicts` ->
`otelguard_verdicts_total`, attribute `otelguard.rule` -> label `otelguard_rule`, and so on.

Template variables:
  datasource  any Prometheus data source;
  service     the agent's `service.name`: the `service_name` label where present (`otelguard serve`
              labels each sender's verdicts and spans so), else the `job` label (set by the
              collector's prometheus exporter; for a direct scrape, name the scrape job after the
              service);
  agent       the `gen_ai_agent_name` label of the verdicts (only the verdict panels carry agent
              names: the other guard metrics are per process, by design).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import bargauge, common as common_builders, dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

HERE = Path(__file__).resolve().parent
JSON_DIR = HERE / "json"

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
ALL = VariableOption(selected=True, text=["All"], value=["$__all"])

# A series' service is its `service_name` where present (the senders behind one `otelguard serve`),
# else its `job`: every query reads the metric in both forms, each filtered on the service variable
# (a series has one form or the other, so their union holds each series once).
SERVICE_FORMS = ('service_name=~"$service"', 'service_name="", job=~"$service"')
# The service variable's values: each series' service, as above.
SERVICE_LABEL = ('label_replace(label_replace({metrics}, "service", "$1", "job", "(.*)"), '
                 '"service", "$1", "service_name", "(.+)")')
# The agent variable filters on $agent where the metric carries agent names (only the verdicts do).
AGENT = 'gen_ai_agent_name=~"$agent"'
LOOP_GUARDS = 'otelguard_guard=~"repeat-tool-reminder|thinking-loop-guard|no-progress"'
REPEATS = 'otelguard_guard="repeat-tool-reminder"'
THINKING = 'otelguard_guard="thinking-loop-guard"'
TIMEOUTS = 'otelguard_guard="timeout-policy"'
CONTROL_FAILED = 'outcome=~"error|unbound"'
RANGE, RATE = "$__range", "$__rate_interval"  # Grafana's window variables
ACTED = 'otelguard_action!="none"'
THINKING_RULES = 'otelguard_rule=~"reasoning-only|repeated-material|low-entropy|text-loop"'
STREAM_RULES = 'otelguard_rule=~"identical-chunks|repeating-cycle|long-cycle|low-novelty"'


def verdicts(*matchers: str) -> tuple[str, ...]:
    """The verdict counter for the chosen agents, plus `matchers` (for `counted`)."""
    return ("otelguard_verdicts_total", AGENT, *matchers)


def selectors(metric: str, *matchers: str) -> list[str]:
    """`metric` with `matchers`, for the chosen services: one selector for each of `SERVICE_FORMS`."""
    return [metric + "{" + ", ".join((form, *matchers)) + "}" for form in SERVICE_FORMS]


def counted(window: str, metric: str, *matchers: str) -> str:
    """Increments of the counter `metric` (for the chosen services) within `window`, a new series
    counted from zero.

    `increase()` needs a sample before an increment to see it, so the first count of a new label
    set (a new agent, tool or rule) would be lost; a series that did not exist `window` ago counts
    whole instead. Same construction as the alert rules (dashboards/alerts/otelguard-rules.yaml).
    """
    return " or ".join(f"({s} unless {s} offset {window}) or increase({s}[{window}])"
                       for s in selectors(metric, *matchers))


def rate(metric: str, *matchers: str) -> str:
    """Per-second rate of `metric` (for the chosen services) over Grafana's rate interval."""
    return " or ".join(f"rate({s}[$__rate_interval])" for s in selectors(metric, *matchers))


def query(expr: str, legend: str = "__auto", *, ref: str = "A", instant: bool = False) -> prometheus.Dataquery:
    q = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)
    return q.instant() if instant else q.range()


def _legend() -> common_builders.VizLegendOptions:
    return (
        common_builders.VizLegendOptions()
        .display_mode(common.LegendDisplayMode.TABLE)
        .placement(common.LegendPlacement.RIGHT)
        .show_legend(True)
        # not "sum": consecutive $__rate_interval windows overlap, so summing bars overcounts;
        # the summary stats give exact totals for the range
        .calcs(["max"])
    )


def _tooltip() -> common_builders.VizTooltipOptions:
    return common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING)


def events_panel(title: str, description: str, *queries: prometheus.Dataquery, width: int = 12,
                 unit: str = "short", decimals: int = 0) -> timeseries.Panel:
    """A timeseries of counts per interval, drawn as stacked bars (one bar = events in that interval)."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(width)
        .height(8)
        .unit(unit)
        .min(0)
        .decimals(decimals)
        .draw_style(common.GraphDrawStyle.BARS)
        .fill_opacity(80)
        .stacking(common_builders.StackingConfig().mode(common.StackingMode.NORMAL))
        .legend(_legend())
        .tooltip(_tooltip())
    )
    for q in queries:
        panel = panel.with_target(q)
    return panel


def lines_panel(
    title: str, description: str, unit: str, *queries: prometheus.Dataquery, width: int = 12
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(width)
        .height(8)
        .unit(unit)
        .min(0)
        .draw_style(common.GraphDrawStyle.LINE)
        .line_width(1)
        .fill_opacity(10)
        .legend(_legend())
        .tooltip(_tooltip())
    )
    for q in queries:
        panel = panel.with_target(q)
    return panel


def stat_panel(title: str, description: str, expr: str, *, unit: str = "short") -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(4)
        .height(4)
        .unit(unit)
        .decimals(0)
        .no_value("0")
        .graph_mode(common.BigValueGraphMode.NONE)
        .color_mode(common.BigValueColorMode.VALUE)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .with_target(query(expr, "", instant=True))
    )


def top_panel(title: str, description: str, expr: str, legend: str) -> bargauge.Panel:
    return (
        bargauge.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .span(8)
        .height(8)
        .unit("short")
        .decimals(0)
        .min(0)
        .orientation(common.VizOrientation.HORIZONTAL)
        .display_mode(common.BarGaugeDisplayMode.BASIC)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .with_target(query(expr, legend, instant=True))
    )


def overview() -> dashboard.Dashboard:
    """The otelguard overview: loops, thinking loops and streams, timeouts, cost, control, health."""
    d = (
        dashboard.Dashboard("otelguard: agent loops")
        .uid("otelguard-overview")
        .description(
            "Loops that otelguard detected in LLM agents and what it did about them, "
            "from the guard's OpenTelemetry metrics."
        )
        .tags(["otelguard", "llm", "agents", "opentelemetry"])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .time("now-6h", "now")
        .refresh("30s")
        .timezone("browser")
        .with_variable(
            dashboard.DatasourceVariable("datasource").label("Data source").type("prometheus")
        )
        .with_variable(
            dashboard.QueryVariable("service")
            .label("Service")
            .description("The agent's service.name: the service_name label where present (the senders of "
                         "otelguard serve), else the Prometheus job label.")
            .datasource(DATASOURCE)
            # Every guarded process has its internal-error counters (at 0 from the start), the senders
            # of otelguard serve their judged spans.
            .query("query_result(count by (service) ("
                   + SERVICE_LABEL.format(metrics="otelguard_internal_errors_total or otelguard_spans_total")
                   + "))")
            .regex('/service="(.*)"/')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .current(ALL)
        )
        .with_variable(
            dashboard.QueryVariable("agent")
            .label("Agent")
            .description("gen_ai.agent.name of the judged agents (verdict panels only).")
            .datasource(DATASOURCE)
            .query("query_result(count by (gen_ai_agent_name) ("
                   + " or ".join(selectors("otelguard_verdicts_total")) + "))")
            .regex('/gen_ai_agent_name="(.*)"/')
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .current(ALL)
        )
    )

    # Summary of the selected time range.
    d = d.with_row(dashboard.Row("Summary (selected time range)"))
    for panel in (
        stat_panel(
            "Loop alerts",
            "Times a loop guard (repeat-tool-reminder, thinking-loop-guard, no-progress) acted on an agent: "
            "reminded, warned, steered, blocked, cut a stream or cancelled.",
            f"sum({counted(RANGE, *verdicts(LOOP_GUARDS, ACTED))})",
        ),
        stat_panel(
            "Thinking loops",
            "Reactions of thinking-loop-guard: stalled reasoning (warn/steer/cancel) and streams cut mid-way (break).",
            f'sum({counted(RANGE, *verdicts(THINKING, ACTED))})',
        ),
        stat_panel(
            "Tool timeouts",
            "Tool calls that overran their declared budget (tool-timeout) or that the framework reported as "
            "timed out (framework-timeout).",
            f'sum({counted(RANGE, *verdicts(TIMEOUTS))})',
        ),
        stat_panel(
            "Tokens spent in loops",
            "Output tokens spent in the loops a guard acted on (all agents of the service): model calls judged "
            "stalled or repetitive, and the model calls that asked for repeated tool calls.",
            f"sum({counted(RANGE, 'otelguard_loop_tokens_total')})",
        ),
        stat_panel(
            "Spent in loops",
            "Price in USD (genai-prices' table) of the loops a guard acted on, for the chosen agents: model calls "
            "judged stalled or repetitive, and for a tool-call loop the model calls that asked for its repeated "
            "calls. Models the table does not know count their tokens only.",
            f"sum({counted(RANGE, 'otelguard_loop_cost_usd_total', AGENT)})",
            unit="currencyUSD",
        ),
        stat_panel(
            "Guard internal errors",
            "Exceptions the guard contained. Each one means a span went unjudged; should stay 0.",
            f"sum({counted(RANGE, 'otelguard_internal_errors_total')})",
        ),
        stat_panel(
            "Control calls that failed",
            "Reactions that did not reach the agent: the control hook raised (error) or no control was bound "
            "(unbound).",
            f"sum({counted(RANGE, 'otelguard_control_calls_total', CONTROL_FAILED)})",
        ),
    ):
        d = d.with_panel(panel)

    d = d.with_row(dashboard.Row("Loops"))
    d = d.with_panel(
        events_panel(
            "Loop alerts by guard, rule and agent",
            "Each bar counts the loop-guard reactions in that interval, per agent and rule. repeat-threshold: "
            "the same tool call with the same arguments reached a reminder threshold; repeat-stop: such a call "
            "was blocked; reasoning-only / repeated-material / low-entropy: stalled reasoning; text-loop: text-only "
            "answers restating each other; identical-chunks / repeating-cycle / long-cycle / low-novelty: a stream "
            "that repeated itself.",
            query(
                "sum by (otelguard_guard, otelguard_rule, gen_ai_agent_name) "
                f"({counted(RATE, *verdicts(LOOP_GUARDS, ACTED))})",
                "{{gen_ai_agent_name}} {{otelguard_guard}}/{{otelguard_rule}}",
            ),
            width=16,
        )
    )
    d = d.with_panel(
        top_panel(
            "Top looping tools",
            "Tools whose identical calls were repeated the most (repeat-tool-reminder verdicts, any action) over "
            "the selected range.",
            "topk(10, sum by (gen_ai_tool_name) "
            f'({counted(RANGE, *verdicts(REPEATS))}))',
            "{{gen_ai_tool_name}}",
        )
    )
    d = d.with_panel(
        lines_panel(
            "Identical-call run length (p50 / p95)",
            "Length of runs of identical tool calls (same tool, same canonical arguments) as the reminder guard "
            "saw them. A p95 at or above the first reminder threshold means agents often need reminding.",
            "short",
            query(
                "histogram_quantile(0.5, sum by (le) "
                f"({rate('otelguard_repeat_run_length_bucket')}))",
                "p50",
            ),
            query(
                "histogram_quantile(0.95, sum by (le) "
                f"({rate('otelguard_repeat_run_length_bucket')}))",
                "p95",
                ref="B",
            ),
        )
    )
    d = d.with_panel(
        events_panel(
            "Guard reactions by action",
            "Every verdict by what the guard did: none (recorded only), remind, warn, steer, block, break, "
            "cancel, abort.",
            query(
                f"sum by (otelguard_action) ({counted(RATE, *verdicts())})",
                "{{otelguard_action}}",
            ),
        )
    )

    d = d.with_row(dashboard.Row("Thinking loops and streams"))
    d = d.with_panel(
        events_panel(
            "Thinking loops by agent and rule",
            "Model calls judged stalled by thinking-loop-guard: reasoning-only (long reasoning, no output), "
            "repeated-material (restating the previous call's reasoning), low-entropy (reasoning that repeats "
            "itself), text-loop (short text-only answers restating each other, no tool called). Action none = a stall below max_thinking_steps; warn/steer/cancel = the guard reacted.",
            query(
                "sum by (gen_ai_agent_name, otelguard_rule, otelguard_action) "
                f'({counted(RATE, *verdicts(THINKING, THINKING_RULES))})',
                "{{gen_ai_agent_name}} {{otelguard_rule}} ({{otelguard_action}})",
            ),
        )
    )
    d = d.with_panel(
        events_panel(
            "Stream breaks by agent",
            "Streamed replies that repeated themselves: identical-chunks (the same delta over and over), "
            "repeating-cycle (periodic text), long-cycle (a paragraph restated) or low-novelty (restatements that "
            "drift; flagged only by default). Action break = cut mid-stream with REPETITIVE_OUTPUT; none = "
            "flagged at span end only.",
            query(
                "sum by (gen_ai_agent_name, otelguard_rule, otelguard_action) "
                f"({counted(RATE, *verdicts(STREAM_RULES))})",
                "{{gen_ai_agent_name}} {{otelguard_rule}} ({{otelguard_action}})",
            ),
        )
    )

    d = d.with_row(dashboard.Row("Timeouts and cost"))
    d = d.with_panel(
        events_panel(
            "Tool timeouts by tool",
            "tool-timeout: otelguard's deadline for the tool's declared budget fired and the tool was aborted "
            "(the model got the structured TOOL_TIMEOUT error). framework-timeout: the framework itself reported "
            "the timeout.",
            query(
                "sum by (gen_ai_tool_name, otelguard_rule) "
                f'({counted(RATE, *verdicts(TIMEOUTS))})',
                "{{gen_ai_tool_name}} ({{otelguard_rule}})",
            ),
        )
    )
    d = d.with_panel(
        events_panel(
            "Tokens spent in loops by model",
            "Output tokens spent in the loops a guard acted on (model calls judged stalled or repetitive, the model "
            "calls that asked for repeated tool calls), by requested model and guard. Per service (this metric has "
            "no agent label).",
            query(
                "sum by (gen_ai_request_model, otelguard_guard) "
                f"({counted(RATE, 'otelguard_loop_tokens_total')})",
                "{{gen_ai_request_model}} ({{otelguard_guard}})",
            ),
        )
    )

    d = d.with_panel(
        events_panel(
            "Spent in loops by agent and model (USD)",
            "Price in USD of the loops a guard acted on, by agent and model: a loop of model calls from its first "
            "stalled step, a loop of tool calls from the model call that asked for its first repeated call, each "
            "counted from the guard's first reaction to it. Priced from genai-prices' bundled table; a model it "
            "does not know shows in the token panel only.",
            query(
                "sum by (gen_ai_agent_name, gen_ai_request_model) "
                f"({counted(RATE, 'otelguard_loop_cost_usd_total', AGENT)})",
                "{{gen_ai_agent_name}} ({{gen_ai_request_model}})",
            ),
            width=24,
            unit="currencyUSD",
            decimals=4,
        )
    )

    d = d.with_row(dashboard.Row("Control hook"))
    d = d.with_panel(
        events_panel(
            "Control-hook outcomes",
            "Calls from the guard back into the agent (inject for remind/warn, steer, cancel) by outcome: ok, "
            "error (the hook raised; contained) or unbound (no control bound to that agent run, so the agent "
            "never heard about its loop).",
            query(
                "sum by (otelguard_action, outcome) "
                f"({counted(RATE, 'otelguard_control_calls_total')})",
                "{{otelguard_action}}: {{outcome}}",
            ),
            width=24,
        )
    )

    d = d.with_row(dashboard.Row("Guard health"))
    d = d.with_panel(
        lines_panel(
            "Spans judged per second",
            "Agent, model and tool spans the guard recognised, by span kind and by the convention that produced "
            "them (OTel GenAI semconv, OpenInference, OpenLLMetry). Other spans pass through uncounted.",
            "short",
            query(
                "sum by (otelguard_span_kind, otelguard_convention) "
                f"({rate('otelguard_spans_total')})",
                "{{otelguard_span_kind}} ({{otelguard_convention}})",
            ),
            width=8,
        )
    )
    d = d.with_panel(
        events_panel(
            "Internal errors",
            "Exceptions the guard contained, by where they happened. The agent is never affected, but the span "
            "went unjudged.",
            query(
                f"sum by (where) ({counted(RATE, 'otelguard_internal_errors_total')})",
                "{{where}}",
            ),
            width=8,
        )
    )
    d = d.with_panel(
        events_panel(
            "State evictions",
            "Per-agent guard state dropped from the bounded map (LRU capacity or idle TTL). A steady high rate "
            "while agents are still active means their loop history is being forgotten.",
            query(
                f"sum by (job) ({counted(RATE, 'otelguard_state_evictions_total')})",
                "{{job}}",
            ),
            width=8,
        )
    )
    d = d.with_panel(
        lines_panel(
            "Guard processing time (p50 / p95 / p99)",
            "Time the guard spends per judged span on the span's thread. Should stay far below a millisecond.",
            "s",
            *(
                query(
                    f"histogram_quantile({q}, sum by (le) "
                    f"({rate('otelguard_processing_duration_seconds_bucket')}))",
                    f"p{int(q * 100)}",
                    ref=ref,
                )
                for q, ref in ((0.5, "A"), (0.95, "B"), (0.99, "C"))
            ),
            width=24,
        )
    )
    return d


DASHBOARDS = {"otelguard-overview.json": overview}


# The SDK writes the interval-variable fields on every variable; Grafana 11's VariableModel
# (@grafana/schema) only knows them for interval variables, so they are dropped elsewhere.
_INTERVAL_ONLY = ("auto", "auto_count", "auto_min")


def _tidy(payload: dict) -> dict:
    """Give every panel (rows included) a stable id in layout order; drop fields Grafana ignores."""
    for i, panel in enumerate(payload.get("panels", []), start=1):
        panel["id"] = i
    for variable in payload.get("templating", {}).get("list", []):
        if variable.get("type") != "interval":
            for key in _INTERVAL_ONLY:
                variable.pop(key, None)
    return payload


def render(builder: dashboard.Dashboard) -> str:
    """Serialise one dashboard as stable, diff-friendly JSON."""
    payload = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
    return json.dumps(_tidy(payload), indent=2, sort_keys=True) + "\n"


def generate() -> dict[str, str]:
    """File name -> JSON text for every dashboard."""
    return {name: render(factory()) for name, factory in DASHBOARDS.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is stale")
    args = parser.parse_args(argv)
    stale = []
    generated = generate()
    for name, text in generated.items():
        path = JSON_DIR / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            JSON_DIR.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(f"stale: {', '.join(stale)}; run python dashboards/generate.py", file=sys.stderr)
        return 1
    if args.check:
        print(f"up to date: {len(generated)} dashboard(s) in {JSON_DIR.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
