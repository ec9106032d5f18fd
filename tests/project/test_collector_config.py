"""Strict offline validation of the OpenTelemetry Collector configs in `collector-config/`.

No collector binary is installable from our package registries, so the tests use a small validator
modelled on the collector's own config schemas (tests/support/collector_config_validator.py: the
component types allowed per kind with the keys each accepts, the pipeline graph rules the collector
enforces at startup, env placeholders, and this project's own policy). Every rule has a negative test
below that breaks a real config and expects the rule to fire.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from collector_config_validator import (
    CONFIG_DIR, CONFIG_FILES, MINIMUM_COLLECTOR, _component_type, check_policy, load, validate_config,
)


# --------------------------------------------------------------------------------------------
# The shipped configs are valid
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_shipped_config_is_valid(name: str) -> None:
    """Each shipped collector config passes every collector rule the validator knows."""
    config, documented = load(name)
    assert validate_config(config, documented) == []


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_shipped_config_follows_policy(name: str) -> None:
    """Each shipped config follows otelguard's policy: bounded seconds span metrics, limiter first."""
    config, _ = load(name)
    assert check_policy(config) == []


def test_collector_config_dir_holds_only_known_configs() -> None:
    """Every YAML file in collector-config/ is one that these tests validate."""
    assert sorted(p.name for p in CONFIG_DIR.glob("*.yaml")) == sorted(CONFIG_FILES)


def test_agent_config_sends_traces_on_and_metrics_to_prometheus() -> None:
    """The single-host config exports traces over otlp_grpc to the env-given backend and metrics to Prometheus."""
    config, _ = load("agent-to-prometheus.yaml")
    pipelines = config["service"]["pipelines"]
    assert "prometheus" in pipelines["metrics"]["exporters"]
    trace_exporters = [e for e in pipelines["traces"]["exporters"] if _component_type(e) == "otlp_grpc"]
    assert trace_exporters and all(
        config["exporters"][e]["endpoint"] == "${env:TRACE_BACKEND_ENDPOINT}" for e in trace_exporters
    )
    assert "span_metrics" in pipelines["traces"]["exporters"]
    assert "span_metrics" in pipelines["metrics"]["receivers"]


# Exporters that send data somewhere other than this collector's own Prometheus endpoint.
_FORWARDING_EXPORTERS = {"otlp_grpc", "otlp_http", "load_balancing"}


def forwarding_exporters(config: dict[str, Any]) -> list[str]:
    """The exporters of `config` that send data on to another service (a trace backend, another tier)."""
    return [e for e in config.get("exporters") or {} if _component_type(e) in _FORWARDING_EXPORTERS]


def test_metrics_only_config_needs_no_trace_backend() -> None:
    """The metrics-only config forwards nothing and needs no environment: spans end in span_metrics,
    every metric (the guard's own and span_metrics') goes to the Prometheus exporter."""
    config, documented = load("agent-metrics-only.yaml")
    assert forwarding_exporters(config) == []
    assert documented == set()
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["exporters"] == ["span_metrics"]
    assert pipelines["metrics"]["receivers"] == ["otlp", "span_metrics"]
    assert pipelines["metrics"]["exporters"] == ["prometheus"]


def test_forwarding_check_sees_a_trace_backend() -> None:
    """The check above can fail: the config that sends traces on has a forwarding exporter."""
    config, _ = load("agent-to-prometheus.yaml")
    assert forwarding_exporters(config) == ["otlp_grpc/traces"]


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_config_states_the_minimum_collector_version(name: str) -> None:
    """Each config's header names the oldest collector that knows its component names, as the README does."""
    header = (CONFIG_DIR / name).read_text().split("\n\n", 1)[0]
    assert f"Needs {MINIMUM_COLLECTOR}" in header
    assert MINIMUM_COLLECTOR.split(">= ")[1] in (CONFIG_DIR / "README.md").read_text()


def fleet_routing_errors(config: dict[str, Any]) -> list[str]:
    """Tier 1 must route every trace pipeline by traceID and every metrics pipeline by streamID."""
    errors = []
    wanted = {"traces": "traceID", "metrics": "streamID"}
    for pipeline_id, pipeline in config["service"]["pipelines"].items():
        signal = pipeline_id.split("/")[0]
        for exp_id in pipeline["exporters"]:
            if _component_type(exp_id) != "load_balancing":
                errors.append(f"{pipeline_id}: exports to {exp_id!r}, tier 1 only load-balances")
                continue
            key = (config["exporters"][exp_id] or {}).get("routing_key", "traceID")
            if key != wanted.get(signal):
                errors.append(f"{pipeline_id}: {exp_id!r} routes by {key!r}, expected {wanted.get(signal)!r}")
    return errors


def test_fleet_tier1_routes_spans_by_trace_and_metrics_by_stream() -> None:
    """Tier 1 load-balances spans by traceID and metrics by streamID, and does nothing else."""
    config, _ = load("fleet-tier1-loadbalancer.yaml")
    assert fleet_routing_errors(config) == []
    assert {p.split("/")[0] for p in config["service"]["pipelines"]} == {"traces", "metrics"}


def test_fleet_tier2_samples_after_span_metrics() -> None:
    """Tier 2 computes span metrics from every span and tail-samples only the pipeline that exports traces."""
    config, _ = load("fleet-tier2-backend.yaml")
    pipelines = config["service"]["pipelines"]
    metric_feeders = [p for p in pipelines.values() if "span_metrics" in p["exporters"]]
    assert metric_feeders and all("tail_sampling" not in (p.get("processors") or []) for p in metric_feeders)
    trace_out = [p for p in pipelines.values() if "otlp_grpc/traces" in p["exporters"]]
    assert trace_out and all("tail_sampling" in p["processors"] for p in trace_out)


# --------------------------------------------------------------------------------------------
# Every rule can fail: break a real config, expect the rule's message
# --------------------------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(cfg: dict[str, Any]) -> None:
        *parents, last = path.split("|")
        node = cfg
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _rename_component(kind: str, old: str, new: str) -> Mutation:
    def mutate(cfg: dict[str, Any]) -> None:
        cfg[kind][new] = cfg[kind].pop(old)
        for pipeline in cfg["service"]["pipelines"].values():
            for role in ("receivers", "processors", "exporters"):
                pipeline[role] = [new if i == old else i for i in pipeline.get(role) or []]

    return mutate


def _add_self_loop(cfg: dict[str, Any]) -> None:
    cfg.setdefault("connectors", {})["forward/loop"] = None
    cfg["service"]["pipelines"]["traces/loop"] = {
        "receivers": ["forward/loop"], "processors": ["memory_limiter"], "exporters": ["forward/loop"],
    }


def _add_two_pipeline_cycle(cfg: dict[str, Any]) -> None:
    cfg["connectors"]["forward/a"] = None
    cfg["connectors"]["forward/b"] = None
    pipelines = cfg["service"]["pipelines"]
    pipelines["traces/a"] = {"receivers": ["forward/b"], "exporters": ["forward/a"]}
    pipelines["traces/b"] = {"receivers": ["forward/a"], "exporters": ["forward/b"]}


def _drop_from(pipeline: str, role: str, component_id: str) -> Mutation:
    def mutate(cfg: dict[str, Any]) -> None:
        ids = cfg["service"]["pipelines"][pipeline][role]
        ids.remove(component_id)

    return mutate


def _append_to(pipeline: str, role: str, component_id: str) -> Mutation:
    def mutate(cfg: dict[str, Any]) -> None:
        cfg["service"]["pipelines"][pipeline].setdefault(role, []).append(component_id)

    return mutate


AGENT = "agent-to-prometheus.yaml"
TIER1 = "fleet-tier1-loadbalancer.yaml"
TIER2 = "fleet-tier2-backend.yaml"
SERVE_FLEET = "fleet-serve-sessions.yaml"

NEGATIVE_CASES: list[tuple[str, str, Mutation, str]] = [
    ("unknown top-level key", AGENT, _set("servce", {}), "unknown top-level key 'servce'"),
    ("unknown exporter type", AGENT, _rename_component("exporters", "prometheus", "prometheusremotewrit"),
     "unknown exporter type 'prometheusremotewrit'"),
    ("deprecated otlp exporter alias", AGENT, _rename_component("exporters", "otlp_grpc/traces", "otlp/traces"),
     "'otlp' is a deprecated alias, use 'otlp_grpc'"),
    ("deprecated spanmetrics alias", AGENT, _rename_component("connectors", "span_metrics", "spanmetrics"),
     "'spanmetrics' is a deprecated alias, use 'span_metrics'"),
    ("deprecated loadbalancing alias", TIER1,
     _rename_component("exporters", "load_balancing/traces", "loadbalancing/traces"),
     "'loadbalancing' is a deprecated alias, use 'load_balancing'"),
    ("malformed component id", AGENT, _rename_component("processors", "batch", "Batch"),
     "malformed component id"),
    ("unknown component key", AGENT, _set("exporters|otlp_grpc/traces|endpiont", "x:4317"),
     "unknown key 'endpiont'"),
    ("unknown nested key", AGENT, _set("connectors|span_metrics|histogram|units", "s"), "unknown key 'units'"),
    ("deprecated component key", AGENT, _set("connectors|span_metrics|dimensions_cache_size", 1000),
     "deprecated key, use aggregation_cardinality_limit"),
    ("value outside enum", AGENT, _set("connectors|span_metrics|histogram|unit", "minutes"),
     "'minutes' is not one of ['ms', 's']"),
    ("malformed duration", AGENT, _set("processors|batch|timeout", "5 seconds"), "expected duration"),
    ("wrong scalar type", AGENT, _set("processors|memory_limiter|limit_mib", "lots"), "expected int"),
    ("missing required key", AGENT, _set("exporters|otlp_grpc/traces", {"tls": {"insecure": True}}),
     "missing required key 'endpoint'"),
    ("receiver without protocols", AGENT, _set("receivers|otlp", {"protocols": {}}),
     "at least one of 'grpc' or 'http' must be set"),
    ("pipeline references undefined exporter", AGENT, _append_to("traces", "exporters", "otlp_grpc/missing"),
     "'otlp_grpc/missing' is not defined under exporters or connectors"),
    ("pipeline references undefined processor", AGENT, _append_to("traces", "processors", "filter"),
     "'filter' is not defined under processors"),
    ("component listed twice in a pipeline", AGENT, _append_to("traces", "processors", "batch"),
     "'batch' is listed more than once"),
    ("pipeline without exporters", AGENT, _set("service|pipelines|traces|exporters", []),
     "exporters: at least one is required"),
    ("unknown pipeline key", AGENT, _set("service|pipelines|traces|processor", ["batch"]),
     "unknown key 'processor'"),
    ("pipeline id with unknown signal", AGENT,
     lambda c: c["service"]["pipelines"].__setitem__("spans", c["service"]["pipelines"].pop("traces")),
     "pipeline id must be <traces|metrics|logs>[/name]"),
    ("exporter without the pipeline's signal", AGENT, _append_to("traces", "exporters", "prometheus"),
     "'prometheus' does not support traces"),
    ("processor without the pipeline's signal", TIER2, _append_to("metrics", "processors", "tail_sampling"),
     "'tail_sampling' does not support metrics"),
    ("connector only used as exporter", AGENT, _drop_from("metrics", "receivers", "span_metrics"),
     "used as exporter in a traces pipeline but not used as a receiver"),
    ("connector only used as receiver", AGENT, _drop_from("traces", "exporters", "span_metrics"),
     "used as receiver in a metrics pipeline but not used as an exporter"),
    ("connector with an unsupported signal pair", AGENT,
     lambda c: (_drop_from("metrics", "receivers", "span_metrics")(c),
                c["service"]["pipelines"].__setitem__(
                    "traces/derived", {"receivers": ["span_metrics"], "exporters": ["otlp_grpc/traces"]})),
     "not used as a receiver in any pipeline it can feed"),
    ("cycle through one pipeline", AGENT, _add_self_loop,
     "cycle through connectors: traces/loop -> traces/loop"),
    ("cycle through two pipelines", AGENT, _add_two_pipeline_cycle, "cycle through connectors: traces/a -> "),
    ("defined but unused component", AGENT, _set("processors|batch/unused", None),
     "processors.batch/unused: defined but not used"),
    ("extension not enabled", AGENT, _set("service|extensions", []), "defined but not enabled"),
    ("enabled extension not defined", AGENT, _set("service|extensions", ["health_check", "pprof"]),
     "'pprof' is not defined under extensions"),
    ("traceID routing in a metrics pipeline", TIER1,
     _set("exporters|load_balancing/metrics|routing_key", "traceID"), "which cannot route metrics"),
    ("streamID routing in a traces pipeline", TIER1,
     _set("exporters|load_balancing/traces|routing_key", "streamID"), "which cannot route traces"),
    ("load_balancing with two resolvers", TIER1,
     _set("exporters|load_balancing/traces|resolver|static", {"hostnames": ["a:4317"]}),
     "exactly one of static, dns, k8s, aws_cloud_map"),
    ("placeholder without env scheme", AGENT,
     _set("exporters|otlp_grpc/traces|endpoint", "${TRACE_BACKEND_ENDPOINT}"), "malformed placeholder"),
    ("placeholder with an invalid name", AGENT,
     _set("exporters|otlp_grpc/traces|endpoint", "${env:TRACE-BACKEND}"), "malformed placeholder"),
    ("bare $VAR", AGENT, _set("exporters|otlp_grpc/traces|endpoint", "$TRACE_BACKEND_ENDPOINT"),
     "bare $VAR is not expanded"),
    ("undocumented env var", AGENT, _set("exporters|otlp_grpc/traces|endpoint", "${env:SOMEWHERE_ELSE}"),
     "${env:SOMEWHERE_ELSE} is not listed in the file header"),
    ("attribute routing without attributes", SERVE_FLEET,
     lambda c: c["exporters"]["load_balancing/sessions"].pop("routing_attributes"),
     "routing_key 'attributes' needs at least one attribute"),
    ("filter without conditions", SERVE_FLEET, _set("processors|filter/cli_sessions", {"error_mode": "ignore"}),
     "at least one condition is required"),
    ("filter with an unknown signal block", SERVE_FLEET, _set("processors|filter/cli_sessions|spans", {}),
     "unknown key 'spans'"),
    ("tail sampling policy without its block", TIER2,
     _set("processors|tail_sampling|policies|2", {"name": "baseline", "type": "probabilistic"}),
     "type 'probabilistic' needs its 'probabilistic' block"),
]


@pytest.mark.parametrize(
    ("name", "mutate", "expected"),
    [pytest.param(n, m, e, id=case) for case, n, m, e in NEGATIVE_CASES],
)
def test_validator_rejects_broken_config(name: str, mutate: Mutation, expected: str) -> None:
    """A config broken in one way is rejected with a message naming the broken rule."""
    config, documented = load(name)
    assert validate_config(config, documented) == []  # the base really was valid
    broken = copy.deepcopy(config)
    mutate(broken)
    errors = validate_config(broken, documented)
    assert any(expected in e for e in errors), errors


POLICY_CASES: list[tuple[str, str, Mutation, str]] = [
    ("unbounded span_metrics dimension", AGENT,
     lambda c: c["connectors"]["span_metrics"]["dimensions"].append({"name": "gen_ai.tool.name"}),
     "'gen_ai.tool.name' is not a bounded attribute"),
    ("span_metrics in milliseconds", AGENT, _set("connectors|span_metrics|histogram|unit", "ms"), "must be 's'"),
    ("span_metrics without a cardinality limit", TIER2,
     lambda c: c["connectors"]["span_metrics"].pop("aggregation_cardinality_limit"), "must be set"),
    ("memory_limiter not first", AGENT, _set("service|pipelines|traces|processors", ["batch", "memory_limiter"]),
     "memory_limiter must be the first processor"),
    ("prometheus names without suffixes", AGENT,
     _set("exporters|prometheus|translation_strategy", "UnderscoreEscapingWithoutSuffixes"),
     "must be UnderscoreEscapingWithSuffixes"),
]


@pytest.mark.parametrize(
    ("name", "mutate", "expected"),
    [pytest.param(n, m, e, id=case) for case, n, m, e in POLICY_CASES],
)
def test_policy_rejects_violation(name: str, mutate: Mutation, expected: str) -> None:
    """A config that is valid for the collector but breaks otelguard's policy is rejected."""
    config, documented = load(name)
    broken = copy.deepcopy(config)
    mutate(broken)
    assert validate_config(broken, documented) == []  # still a valid collector config
    assert any(expected in e for e in check_policy(broken)), check_policy(broken)


def test_fleet_routing_rejects_metrics_routed_by_service() -> None:
    """Tier 1 routing metrics by service (valid for the collector) fails the fleet routing rule."""
    config, documented = load(TIER1)
    config["exporters"]["load_balancing/metrics"]["routing_key"] = "service"
    assert validate_config(config, documented) == []
    assert fleet_routing_errors(config) == ["metrics: 'load_balancing/metrics' routes by 'service', expected 'streamID'"]
