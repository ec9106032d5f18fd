"""Strict offline validation of OpenTelemetry Collector configs (the ones in `collector-config/`).

No collector binary is installable from our package registries, so this module carries a small
validator modelled on the collector's own config schemas (`config.schema.yaml` of each component):
a table of the component types we allow per kind with the keys each accepts, the pipeline graph
rules the collector enforces at startup (every id defined, connectors used on both sides with a
valid signal pair, no cycles), env placeholders, and this project's own policy (bounded
span_metrics dimensions, seconds, memory_limiter first, metric names that match the dashboards).
It needs no Prometheus and no collector. Every rule has a negative test in
tests/project/test_collector_config.py that breaks a real config and expects the rule to fire;
tests/project/test_fleet_session_routing.py validates the fleet configs with it too.
(Moved out of test_collector_config.py.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import yaml

import paths

CONFIG_DIR = paths.COLLECTOR_CONFIG
CONFIG_FILES = (
    "agent-metrics-only.yaml", "agent-to-prometheus.yaml", "fleet-tier1-loadbalancer.yaml", "fleet-tier2-backend.yaml",
    "fleet-serve-sessions.yaml",
)
# The oldest otelcol-contrib that knows every component name the configs use (collector-config/README.md).
MINIMUM_COLLECTOR = "otelcol-contrib >= v0.154.0"
SIGNALS = frozenset({"traces", "metrics", "logs"})

# --------------------------------------------------------------------------------------------
# Value shapes
# --------------------------------------------------------------------------------------------

_ENV_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_ENV_WELL_FORMED = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?$")
_BARE_ENV = re.compile(r"(?<!\$)\$(?!\{|\$)[A-Za-z_]")
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$")


def _is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and _ENV_PLACEHOLDER.fullmatch(value) is not None


@dataclass(frozen=True)
class Scalar:
    kind: str  # str | int | bool | number | duration

    def check(self, value: Any, path: str, errors: list[str]) -> None:
        if _is_placeholder(value):
            return
        ok = {
            "str": lambda v: isinstance(v, str),
            "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "bool": lambda v: isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "duration": lambda v: (isinstance(v, str) and _DURATION.fullmatch(v) is not None)
            or (isinstance(v, int) and not isinstance(v, bool) and v == 0),
        }[self.kind](value)
        if not ok:
            errors.append(f"{path}: expected {self.kind}, got {value!r}")


@dataclass(frozen=True)
class Enum:
    values: tuple[str, ...]

    def check(self, value: Any, path: str, errors: list[str]) -> None:
        if value not in self.values:
            errors.append(f"{path}: {value!r} is not one of {list(self.values)}")


@dataclass(frozen=True)
class ListOf:
    item: Any

    def check(self, value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {value!r}")
            return
        for i, item in enumerate(value):
            check_shape(self.item, item, f"{path}[{i}]", errors)


@dataclass(frozen=True)
class MapOf:
    value: Any

    def check(self, value: Any, path: str, errors: list[str]) -> None:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping, got {value!r}")
            return
        for k, v in value.items():
            check_shape(self.value, v, f"{path}.{k}", errors)


@dataclass(frozen=True)
class Deprecated:
    instead: str

    def check(self, value: Any, path: str, errors: list[str]) -> None:
        errors.append(f"{path}: deprecated key, use {self.instead}")


class _Any:
    def check(self, value: Any, path: str, errors: list[str]) -> None:
        return


ANY = _Any()
STR, INT, BOOL, NUM, DURATION = (Scalar(k) for k in ("str", "int", "bool", "number", "duration"))


def check_shape(shape: Any, value: Any, path: str, errors: list[str]) -> None:
    """Check `value` against `shape`: a dict of allowed keys (recursively) or a marker object."""
    if isinstance(shape, dict):
        if value is None:  # `key:` with nothing after it means "all defaults"
            return
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping, got {value!r}")
            return
        for key, sub in value.items():
            if key not in shape:
                errors.append(f"{path}: unknown key {key!r} (allowed: {sorted(shape)})")
                continue
            check_shape(shape[key], sub, f"{path}.{key}", errors)
        return
    shape.check(value, path, errors)


# --------------------------------------------------------------------------------------------
# Shared config blocks (collector core: configtls, configgrpc, confighttp, configretry,
# exporterhelper queue_batch_config)
# --------------------------------------------------------------------------------------------

_TLS_COMMON = {
    "ca_file": STR, "ca_pem": STR, "cert_file": STR, "cert_pem": STR, "key_file": STR, "key_pem": STR,
    "cipher_suites": ListOf(STR), "curve_preferences": ListOf(STR), "include_system_ca_certs_pool": BOOL,
    "min_version": STR, "max_version": STR, "reload_interval": DURATION, "tpm": ANY,
}
TLS_CLIENT = {**_TLS_COMMON, "insecure": BOOL, "insecure_skip_verify": BOOL, "server_name_override": STR}
TLS_SERVER = {**_TLS_COMMON, "client_ca_file": STR, "client_ca_file_reload": BOOL}
RETRY = {
    "enabled": BOOL, "initial_interval": DURATION, "max_elapsed_time": DURATION, "max_interval": DURATION,
    "max_retries": INT, "multiplier": NUM, "randomization_factor": NUM,
}
_SIZER = Enum(("requests", "items", "bytes"))
QUEUE = {
    "enabled": BOOL, "num_consumers": INT, "queue_size": INT, "sizer": _SIZER, "block_on_overflow": BOOL,
    "wait_for_result": BOOL, "storage": STR,
    "batch": {
        "flush_timeout": DURATION, "min_size": INT, "max_size": INT, "sizer": _SIZER,
        "partition": {"metadata_keys": ListOf(STR), "cardinality_limit": INT},
    },
}
_COMPRESSION = Enum(("", "none", "gzip", "zstd", "snappy", "zlib", "deflate", "lz4", "x-snappy-framed"))
GRPC_CLIENT = {
    "endpoint": STR, "compression": _COMPRESSION, "tls": TLS_CLIENT, "headers": MapOf(STR),
    "keepalive": {"time": DURATION, "timeout": DURATION, "permit_without_stream": BOOL},
    "balancer_name": STR, "authority": STR, "auth": {"authenticator": STR}, "middlewares": ListOf(ANY),
    "read_buffer_size": INT, "write_buffer_size": INT, "wait_for_ready": BOOL,
}
GRPC_SERVER = {
    "endpoint": STR, "transport": Enum(("tcp", "tcp4", "tcp6", "udp", "unix")), "tls": TLS_SERVER,
    "max_recv_msg_size_mib": INT, "max_concurrent_streams": INT, "read_buffer_size": INT,
    "write_buffer_size": INT, "include_metadata": BOOL, "auth": {"authenticator": STR},
    "middlewares": ListOf(ANY),
    "keepalive": {
        "server_parameters": {
            "max_connection_idle": DURATION, "max_connection_age": DURATION,
            "max_connection_age_grace": DURATION, "time": DURATION, "timeout": DURATION,
        },
        "enforcement_policy": {"min_time": DURATION, "permit_without_stream": BOOL},
    },
}
HTTP_SERVER = {
    "endpoint": STR, "tls": TLS_SERVER, "include_metadata": BOOL, "max_request_body_size": INT,
    "compression_algorithms": ListOf(STR), "middlewares": ListOf(ANY),
    "auth": {"authenticator": STR, "request_params": ListOf(STR)},
    "cors": {"allowed_origins": ListOf(STR), "allowed_headers": ListOf(STR),
             "exposed_headers": ListOf(STR), "max_age": INT},
    "keepalive": {"enabled": BOOL, "idle_timeout": DURATION},
    "read_timeout": DURATION, "read_header_timeout": DURATION, "write_timeout": DURATION,
    "response_headers": MapOf(STR),
}
HTTP_CLIENT = {
    "endpoint": STR, "tls": TLS_CLIENT, "headers": MapOf(STR), "timeout": DURATION, "compression": _COMPRESSION,
    "compression_params": ANY, "proxy_url": STR, "read_buffer_size": INT, "write_buffer_size": INT,
    "max_conns_per_host": INT, "force_attempt_http2": BOOL, "http2_ping_timeout": DURATION,
    "http2_read_idle_timeout": DURATION, "auth": {"authenticator": STR}, "cookies": ANY,
    "middlewares": ListOf(ANY),
    "keepalive": {"enabled": BOOL, "idle_conn_timeout": DURATION, "max_idle_conns": INT,
                  "max_idle_conns_per_host": INT},
}

# --------------------------------------------------------------------------------------------
# The component table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Component:
    shape: dict[str, Any]
    signals: frozenset[str] = SIGNALS
    # connectors only: (signal it consumes as an exporter, signal it produces as a receiver)
    pairs: frozenset[tuple[str, str]] = frozenset()
    # extra whole-config checks: (config, path, errors) -> None
    check: Callable[[dict[str, Any], str, list[str]], None] | None = None


def _require(*keys: str) -> Callable[[dict[str, Any], str, list[str]], None]:
    def check(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
        for key in keys:
            if key not in cfg:
                errors.append(f"{path}: missing required key {key!r}")

    return check


def _check_otlp_receiver(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
    protocols = cfg.get("protocols") or {}
    if not ({"grpc", "http"} & set(protocols)):
        errors.append(f"{path}.protocols: at least one of 'grpc' or 'http' must be set")


def _check_otlp_http(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
    if not ({"endpoint", "traces_endpoint", "metrics_endpoint", "logs_endpoint"} & set(cfg)):
        errors.append(f"{path}: missing required key 'endpoint' (or a per-signal *_endpoint)")


def _check_load_balancing(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
    if "otlp" not in (cfg.get("protocol") or {}):
        errors.append(f"{path}.protocol: missing required key 'otlp'")
    if "endpoint" in ((cfg.get("protocol") or {}).get("otlp") or {}):
        errors.append(f"{path}.protocol.otlp.endpoint: set by the resolver, must not be configured")
    resolvers = set(cfg.get("resolver") or {})
    if len(resolvers) != 1:
        errors.append(f"{path}.resolver: exactly one of static, dns, k8s, aws_cloud_map must be set")
    if cfg.get("routing_key") == "attributes" and not cfg.get("routing_attributes"):
        errors.append(f"{path}.routing_attributes: routing_key 'attributes' needs at least one attribute")


def _check_span_metrics(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
    histogram = cfg.get("histogram") or {}
    if "explicit" in histogram and "exponential" in histogram:
        errors.append(f"{path}.histogram: use either 'explicit' or 'exponential' buckets")
    seen: set[str] = set()
    for i, dim in enumerate(cfg.get("dimensions") or []):
        name = (dim or {}).get("name")
        if name is None:
            errors.append(f"{path}.dimensions[{i}]: missing required key 'name'")
        elif name in seen or name in {"service.name", "span.name", "span.kind", "status.code"}:
            errors.append(f"{path}.dimensions[{i}]: duplicate dimension name {name!r}")
        seen.add(name)


_DIMENSION = {"name": STR, "default": STR, "glob": STR}
_TAIL_POLICY_TYPES = (
    "always_sample", "latency", "numeric_attribute", "probabilistic", "status_code", "string_attribute",
    "rate_limiting", "bytes_limiting", "span_count", "trace_state", "boolean_attribute", "ottl_condition",
    "and", "composite", "drop", "not",
)
_TAIL_POLICY = {
    "name": STR, "type": Enum(_TAIL_POLICY_TYPES),
    "latency": {"threshold_ms": INT, "upper_threshold_ms": INT},
    "numeric_attribute": {"key": STR, "min_value": INT, "max_value": INT, "invert_match": BOOL},
    "probabilistic": {"hash_salt": STR, "sampling_percentage": NUM},
    "status_code": {"status_codes": ListOf(Enum(("OK", "ERROR", "UNSET")))},
    "string_attribute": {"key": STR, "values": ListOf(STR), "enabled_regex_matching": BOOL,
                         "cache_max_size": INT, "invert_match": BOOL},
    "rate_limiting": {"spans_per_second": INT},
    "bytes_limiting": {"bytes_per_second": INT, "burst_capacity": INT},
    "span_count": {"min_spans": INT, "max_spans": INT},
    "trace_state": {"key": STR, "values": ListOf(STR)},
    "boolean_attribute": {"key": STR, "value": BOOL, "invert_match": BOOL},
    "ottl_condition": {"error_mode": Enum(("ignore", "silent", "propagate")), "span": ListOf(STR),
                       "spanevent": ListOf(STR)},
    "and": ANY, "composite": ANY, "drop": ANY, "not": ANY,
}


def _check_filter(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
    if not any(conditions for signal in ("traces", "metrics", "logs") for conditions in (cfg.get(signal) or {}).values()):
        errors.append(f"{path}: at least one condition is required (traces, metrics or logs)")


def _check_tail_sampling(cfg: dict[str, Any], path: str, errors: list[str]) -> None:
    policies = cfg.get("policies") or []
    if not policies:
        errors.append(f"{path}.policies: at least one policy is required")
    for i, policy in enumerate(policies):
        kind = (policy or {}).get("type")
        if "name" not in (policy or {}):
            errors.append(f"{path}.policies[{i}]: missing required key 'name'")
        if kind not in ("always_sample", None) and kind in _TAIL_POLICY_TYPES and kind not in policy:
            errors.append(f"{path}.policies[{i}]: type {kind!r} needs its {kind!r} block")


RECEIVERS = {
    "otlp": Component(
        {"protocols": {"grpc": GRPC_SERVER,
                       "http": {**HTTP_SERVER, "traces_url_path": STR, "metrics_url_path": STR,
                                "logs_url_path": STR}}},
        check=_check_otlp_receiver,
    ),
}
PROCESSORS = {
    "memory_limiter": Component(
        {"check_interval": DURATION, "limit_mib": INT, "spike_limit_mib": INT, "limit_percentage": INT,
         "spike_limit_percentage": INT, "min_gc_interval_when_soft_limited": DURATION,
         "min_gc_interval_when_hard_limited": DURATION, "max_gc_interval_when_soft_limited": DURATION,
         "max_gc_interval_when_hard_limited": DURATION},
        check=_require("check_interval"),
    ),
    "batch": Component(
        {"timeout": DURATION, "send_batch_size": INT, "send_batch_max_size": INT,
         "metadata_keys": ListOf(STR), "metadata_cardinality_limit": INT},
    ),
    # Drops the telemetry matching any of its OTTL conditions.
    "filter": Component(
        {"error_mode": Enum(("ignore", "silent", "propagate")),
         "traces": {"span": ListOf(STR), "spanevent": ListOf(STR)},
         "metrics": {"metric": ListOf(STR), "datapoint": ListOf(STR)},
         "logs": {"log_record": ListOf(STR)}},
        check=_check_filter,
    ),
    "tail_sampling": Component(
        {"decision_wait": DURATION, "decision_wait_after_root_received": DURATION, "num_traces": INT,
         "expected_new_traces_per_sec": INT, "maximum_trace_size_bytes": INT, "block_on_overflow": BOOL,
         "drop_pending_traces_on_shutdown": BOOL, "sample_on_first_match": BOOL,
         "sampling_strategy": Enum(("trace-complete", "span-ingest")),
         "decision_cache": {"sampled_cache_size": INT, "non_sampled_cache_size": INT},
         "policies": ListOf(_TAIL_POLICY)},
        signals=frozenset({"traces"}),
        check=_check_tail_sampling,
    ),
}
EXPORTERS = {
    "otlp_grpc": Component(
        {**GRPC_CLIENT, "timeout": DURATION, "sending_queue": QUEUE, "retry_on_failure": RETRY},
        check=_require("endpoint"),
    ),
    "otlp_http": Component(
        {**HTTP_CLIENT, "traces_endpoint": STR, "metrics_endpoint": STR, "logs_endpoint": STR,
         "profiles_endpoint": STR, "encoding": Enum(("proto", "json")), "sending_queue": QUEUE,
         "retry_on_failure": RETRY},
        check=_check_otlp_http,
    ),
    "prometheus": Component(
        {**HTTP_SERVER, "const_labels": MapOf(STR), "namespace": STR, "send_timestamps": BOOL,
         "metric_expiration": DURATION, "enable_open_metrics": BOOL, "without_scope_info": BOOL,
         "translation_strategy": Enum(("UnderscoreEscapingWithSuffixes", "UnderscoreEscapingWithoutSuffixes",
                                       "NoUTF8EscapingWithSuffixes", "NoTranslation")),
         "resource_constant_labels": {"enabled": BOOL, "include": ListOf(STR), "exclude": ListOf(STR)},
         "sending_queue": QUEUE,
         "add_metric_suffixes": Deprecated("translation_strategy"),
         "resource_to_telemetry_conversion": Deprecated("resource_constant_labels")},
        signals=frozenset({"metrics"}),
        check=_require("endpoint"),
    ),
    "load_balancing": Component(
        {"protocol": {"otlp": {**GRPC_CLIENT, "timeout": DURATION, "sending_queue": QUEUE,
                               "retry_on_failure": RETRY}},
         "resolver": {
             "static": {"hostnames": ListOf(STR)},
             "dns": {"hostname": STR, "port": STR, "interval": DURATION, "timeout": DURATION},
             "k8s": {"service": STR, "ports": ListOf(INT), "timeout": DURATION, "return_hostnames": BOOL},
             "aws_cloud_map": {"namespace": STR, "service_name": STR, "port": INT, "interval": DURATION,
                               "timeout": DURATION, "health_status": STR, "owner_account": STR},
         },
         "routing_key": Enum(("traceID", "service", "resource", "metric", "streamID", "attributes")),
         "routing_attributes": ListOf(STR), "timeout": DURATION, "sending_queue": QUEUE,
         "retry_on_failure": RETRY},
        check=_check_load_balancing,
    ),
    "debug": Component(
        {"verbosity": Enum(("basic", "normal", "detailed")), "sampling_initial": INT,
         "sampling_thereafter": INT, "use_internal_logger": BOOL, "sending_queue": QUEUE},
    ),
}
CONNECTORS = {
    "span_metrics": Component(
        {"dimensions": ListOf(_DIMENSION), "calls_dimensions": ListOf(_DIMENSION),
         "exclude_dimensions": ListOf(STR), "aggregation_cardinality_limit": INT,
         "aggregation_temporality": Enum(("AGGREGATION_TEMPORALITY_CUMULATIVE",
                                          "AGGREGATION_TEMPORALITY_DELTA")),
         "histogram": {"disable": BOOL, "unit": Enum(("ms", "s")), "dimensions": ListOf(_DIMENSION),
                       "explicit": {"buckets": ListOf(DURATION)}, "exponential": {"max_size": INT}},
         "namespace": STR, "metrics_flush_interval": DURATION, "metrics_expiration": DURATION,
         "series_expiration": DURATION, "exemplars": {"enabled": BOOL, "max_per_data_point": INT},
         "events": {"enabled": BOOL, "dimensions": ListOf(_DIMENSION)},
         "resource_metrics_key_attributes": ListOf(STR), "resource_metrics_cache_size": INT,
         "metric_timestamp_cache_size": INT, "add_resource_attributes": BOOL,
         "include_instrumentation_scope": ListOf(STR), "enable_metrics_sampling_method": BOOL,
         "dimensions_cache_size": Deprecated("aggregation_cardinality_limit")},
        pairs=frozenset({("traces", "metrics")}),
        check=_check_span_metrics,
    ),
    "forward": Component({}, pairs=frozenset((s, s) for s in SIGNALS)),
}
EXTENSIONS = {
    "health_check": Component(
        {**HTTP_SERVER, "path": STR, "response_body": {"healthy": STR, "unhealthy": STR},
         "check_collector_pipeline": {"enabled": BOOL, "interval": DURATION,
                                      "exporter_failure_threshold": INT}},
    ),
}
KINDS: dict[str, dict[str, Component]] = {
    "receivers": RECEIVERS, "processors": PROCESSORS, "exporters": EXPORTERS,
    "connectors": CONNECTORS, "extensions": EXTENSIONS,
}
# Old spellings the collector still accepts with a deprecation warning; the issue asks for the
# current names, so they are rejected here with the replacement.
DEPRECATED_TYPES = {
    "exporters": {"otlp": "otlp_grpc", "otlphttp": "otlp_http", "loadbalancing": "load_balancing"},
    "connectors": {"spanmetrics": "span_metrics"},
}
_SINGULAR = {"receivers": "receiver", "processors": "processor", "exporters": "exporter",
             "connectors": "connector", "extensions": "extension"}
# load_balancing routing keys by the signals they can route (the exporter's README).
_ROUTING_KEY_SIGNALS = {
    "traceID": {"traces", "logs"}, "service": SIGNALS, "attributes": SIGNALS,
    "resource": {"metrics"}, "metric": {"metrics"}, "streamID": {"metrics"},
}

_COMPONENT_ID = re.compile(r"^([a-z][a-z0-9_]*)(?:/([^/\s]+))?$")
_PIPELINE_ID = re.compile(r"^([a-z]+)(?:/([^/\s]+))?$")

# --------------------------------------------------------------------------------------------
# The validator
# --------------------------------------------------------------------------------------------


def _component_type(component_id: str) -> str | None:
    match = _COMPONENT_ID.match(component_id)
    return match.group(1) if match else None


def _walk_strings(value: Any, path: str):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk_strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk_strings(v, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def documented_env_vars(text: str) -> set[str]:
    """Names listed in the file's leading comment block (its `Environment` section)."""
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    return set(re.findall(r"^#\s+([A-Z][A-Z0-9_]*)\s", "\n".join(header), flags=re.MULTILINE))


def check_env_placeholders(config: dict[str, Any], documented: set[str], errors: list[str]) -> None:
    """Every `${...}` must be `${env:NAME}` or `${env:NAME:-default}`, named in the header."""
    for path, value in _walk_strings(config, "config"):
        if _BARE_ENV.search(value):
            errors.append(f"{path}: bare $VAR is not expanded by the collector, use ${{env:NAME}}: {value!r}")
        for inner in _ENV_PLACEHOLDER.findall(value):
            match = _ENV_WELL_FORMED.match(inner)
            if match is None:
                errors.append(f"{path}: malformed placeholder ${{{inner}}} (expected ${{env:NAME}})")
            elif match.group(1) not in documented:
                errors.append(f"{path}: ${{env:{match.group(1)}}} is not listed in the file header")


def validate_config(config: Any, documented_env: set[str] = frozenset()) -> list[str]:
    """Return every problem found in a collector config (an empty list means valid)."""
    errors: list[str] = []
    if not isinstance(config, dict):
        return ["config: expected a mapping at the top level"]
    for key in config:
        if key not in {*KINDS, "service"}:
            errors.append(f"config: unknown top-level key {key!r}")

    # Components: known types, current names, allowed keys, per-type checks.
    defined: dict[str, dict[str, Component]] = {kind: {} for kind in KINDS}
    for kind, table in KINDS.items():
        section = config.get(kind) or {}
        if not isinstance(section, dict):
            errors.append(f"{kind}: expected a mapping")
            continue
        for component_id, component_cfg in section.items():
            path = f"{kind}.{component_id}"
            ctype = _component_type(str(component_id))
            if ctype is None:
                errors.append(f"{path}: malformed component id (expected type[/name])")
                continue
            if ctype in DEPRECATED_TYPES.get(kind, {}):
                errors.append(f"{path}: {ctype!r} is a deprecated alias, use "
                              f"{DEPRECATED_TYPES[kind][ctype]!r}")
                continue
            if ctype not in table:
                errors.append(f"{path}: unknown {_SINGULAR[kind]} type {ctype!r} (known: {sorted(table)})")
                continue
            component = table[ctype]
            check_shape(component.shape, component_cfg, path, errors)
            if component.check is not None and isinstance(component_cfg, (dict, type(None))):
                component.check(component_cfg or {}, path, errors)
            defined[kind][component_id] = component

    service = config.get("service")
    if not isinstance(service, dict):
        errors.append("service: missing")
        return errors
    for key in service:
        if key not in {"extensions", "pipelines", "telemetry"}:
            errors.append(f"service: unknown key {key!r}")

    enabled_extensions = service.get("extensions") or []
    for ext in enabled_extensions:
        if ext not in defined["extensions"]:
            errors.append(f"service.extensions: {ext!r} is not defined under extensions")
    for ext in defined["extensions"]:
        if ext not in enabled_extensions:
            errors.append(f"extensions.{ext}: defined but not enabled in service.extensions")

    pipelines = service.get("pipelines") or {}
    if not pipelines:
        errors.append("service.pipelines: at least one pipeline is required")
    used: set[tuple[str, str]] = set()
    # connector id -> signals of the pipelines where it is an exporter / a receiver
    conn_as_exporter: dict[str, set[str]] = {}
    conn_as_receiver: dict[str, set[str]] = {}
    signal_of: dict[str, str] = {}
    for pipeline_id, pipeline in pipelines.items():
        path = f"service.pipelines.{pipeline_id}"
        match = _PIPELINE_ID.match(str(pipeline_id))
        if match is None or match.group(1) not in SIGNALS:
            errors.append(f"{path}: pipeline id must be <traces|metrics|logs>[/name]")
            continue
        signal = signal_of[pipeline_id] = match.group(1)
        if not isinstance(pipeline, dict):
            errors.append(f"{path}: expected a mapping")
            continue
        for key in pipeline:
            if key not in {"receivers", "processors", "exporters"}:
                errors.append(f"{path}: unknown key {key!r}")
        for role in ("receivers", "exporters"):
            if not pipeline.get(role):
                errors.append(f"{path}.{role}: at least one is required")
        for role in ("receivers", "processors", "exporters"):
            ids = pipeline.get(role) or []
            for dup in sorted({i for i in ids if ids.count(i) > 1}):
                errors.append(f"{path}.{role}: {dup!r} is listed more than once")
            for component_id in ids:
                if role != "processors" and component_id in defined["connectors"]:
                    used.add(("connectors", component_id))
                    table = conn_as_exporter if role == "exporters" else conn_as_receiver
                    table.setdefault(component_id, set()).add(signal)
                    continue
                if component_id not in defined[role]:
                    errors.append(f"{path}.{role}: {component_id!r} is not defined under {role}"
                                  + ("" if role == "processors" else " or connectors"))
                    continue
                used.add((role, component_id))
                component = defined[role][component_id]
                if signal not in component.signals:
                    errors.append(f"{path}.{role}: {component_id!r} does not support {signal}")
                if role == "exporters" and _component_type(component_id) == "load_balancing":
                    routing_key = ((config["exporters"] or {}).get(component_id) or {}).get("routing_key", "traceID")
                    if signal not in _ROUTING_KEY_SIGNALS.get(routing_key, SIGNALS):
                        errors.append(f"{path}.exporters: {component_id!r} routes by {routing_key!r}, "
                                      f"which cannot route {signal}")

    # Connectors: on both sides, with a pair the connector supports.
    for conn_id, component in defined["connectors"].items():
        exp_signals = conn_as_exporter.get(conn_id, set())
        rec_signals = conn_as_receiver.get(conn_id, set())
        if not exp_signals and not rec_signals:
            continue  # reported as unused below
        for sig in sorted(exp_signals):
            if not any((sig, r) in component.pairs for r in rec_signals):
                errors.append(f"connectors.{conn_id}: used as exporter in a {sig} pipeline but not used "
                              f"as a receiver in any pipeline it can feed ({sorted(component.pairs)})")
        for sig in sorted(rec_signals):
            if not any((e, sig) in component.pairs for e in exp_signals):
                errors.append(f"connectors.{conn_id}: used as receiver in a {sig} pipeline but not used "
                              f"as an exporter in any pipeline that can feed it ({sorted(component.pairs)})")

    # No cycles through connectors.
    edges: dict[str, set[str]] = {p: set() for p in signal_of}
    for src, pipeline in pipelines.items():
        if src not in signal_of or not isinstance(pipeline, dict):
            continue
        for conn_id in pipeline.get("exporters") or []:
            if conn_id not in defined["connectors"]:
                continue
            for dst, other in pipelines.items():
                if dst in signal_of and isinstance(other, dict) and conn_id in (other.get("receivers") or []):
                    if (signal_of[src], signal_of[dst]) in defined["connectors"][conn_id].pairs:
                        edges[src].add(dst)
    errors.extend(_find_cycles(edges))

    for kind in ("receivers", "processors", "exporters", "connectors"):
        for component_id in defined[kind]:
            if (kind, component_id) not in used:
                errors.append(f"{kind}.{component_id}: defined but not used in any pipeline")

    check_env_placeholders(config, set(documented_env), errors)
    return errors


def _find_cycles(edges: dict[str, set[str]]) -> list[str]:
    white, grey, black = 0, 1, 2
    color = {node: white for node in edges}
    found: list[str] = []

    def visit(node: str, trail: list[str]) -> None:
        color[node] = grey
        for nxt in sorted(edges[node]):
            if color[nxt] == grey:
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                found.append("service.pipelines: cycle through connectors: " + " -> ".join(cycle))
            elif color[nxt] == white:
                visit(nxt, trail + [nxt])
        color[node] = black

    for node in sorted(edges):
        if color[node] == white:
            visit(node, [node])
    return found


# --------------------------------------------------------------------------------------------
# Project policy (otelguard's choices, on top of what the collector itself accepts)
# --------------------------------------------------------------------------------------------

# Attributes with a small, fixed set of values: safe as span_metrics dimensions.
BOUNDED_DIMENSIONS = frozenset({
    "gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.system", "otelguard.verdict", "otelguard.guard",
    "otelguard.rule", "otelguard.action", "openinference.span.kind",
})


def check_policy(config: dict[str, Any]) -> list[str]:
    """Return violations of otelguard's own rules for collector configs."""
    errors: list[str] = []
    for pipeline_id, pipeline in ((config.get("service") or {}).get("pipelines") or {}).items():
        processors = (pipeline or {}).get("processors") or []
        if not processors or _component_type(processors[0]) != "memory_limiter":
            errors.append(f"service.pipelines.{pipeline_id}: memory_limiter must be the first processor")
    for conn_id, cfg in (config.get("connectors") or {}).items():
        if _component_type(conn_id) != "span_metrics":
            continue
        cfg = cfg or {}
        if (cfg.get("histogram") or {}).get("unit") != "s":
            errors.append(f"connectors.{conn_id}.histogram.unit: must be 's' (dashboards use seconds)")
        if not cfg.get("aggregation_cardinality_limit"):
            errors.append(f"connectors.{conn_id}.aggregation_cardinality_limit: must be set (bounded series)")
        for dim in (cfg.get("dimensions") or []) + (cfg.get("calls_dimensions") or []):
            name = (dim or {}).get("name")
            if name not in BOUNDED_DIMENSIONS:
                errors.append(f"connectors.{conn_id}.dimensions: {name!r} is not a bounded attribute "
                              f"(allowed: {sorted(BOUNDED_DIMENSIONS)})")
    for exp_id, cfg in (config.get("exporters") or {}).items():
        if _component_type(exp_id) == "prometheus":
            if (cfg or {}).get("translation_strategy") != "UnderscoreEscapingWithSuffixes":
                errors.append(f"exporters.{exp_id}.translation_strategy: must be UnderscoreEscapingWithSuffixes "
                              "so names match the dashboards (otelguard_verdicts_total, ..._seconds)")
    return errors


def load(name: str) -> tuple[dict[str, Any], set[str]]:
    text = (CONFIG_DIR / name).read_text()
    return yaml.safe_load(text), documented_env_vars(text)
