"""collector-config/fleet-serve-sessions.yaml on the CLIs' real telemetry: every session in the
captures (tests/fixtures/agent-clis/) maps to exactly one load-balancing key on both signals, and
the two filters split every span and log record between the session and the trace-id pipelines.

The load_balancing exporter's key is computed as its source does for `routing_key: attributes`: for
each routing attribute, the resource's value, else the first scope's, else (spans) the first span's
of the trace in that request or (logs) the record's own; a missing one is `name=` (empty). The
filters' OTTL conditions are read from the file and evaluated by a small reader of the forms used
there (`PATH == nil` joined by `and`, `PATH != nil` joined by `or`).
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from collections import defaultdict
from typing import Any

import pytest

from collector_config_validator import load, validate_config
import paths

FLEET = "fleet-serve-sessions.yaml"
CAPTURES = paths.AGENT_CLI_CAPTURES
CLIS = ("claude", "codex", "gemini", "opencode")
# How each CLI names its session (see tests/fixtures/agent-clis/README.md), read independently of the config.
SESSION_NAMES = ("session.id", "conversation.id", "gen_ai.conversation.id")
_TERM = re.compile(r'^(resource\.)?attributes\["([^"]+)"\] (==|!=) nil$')


def _attributes(entries: list[dict] | None) -> dict[str, Any]:
    return {entry["key"]: next(iter(entry.get("value", {}).values()), None) for entry in entries or ()}


def _drops(condition: str, resource: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether a filter condition (one of the forms this file uses) matches a record."""
    joiner = " and " if " and " in condition else " or "
    results = []
    for term in condition.split(joiner):
        match = _TERM.match(term.strip())
        assert match, f"a condition form this test cannot read: {term!r}"
        present = (resource if match.group(1) else record).get(match.group(2)) is not None
        results.append(present if match.group(3) == "!=" else not present)
    return all(results) if joiner == " and " else any(results)


def _kept(config: dict, processor: str, signal: str, resource: dict, record: dict) -> bool:
    block = config["processors"][processor][signal]
    conditions = block["span" if signal == "traces" else "log_record"]
    return not any(_drops(condition, resource, record) for condition in conditions)


def _key(attributes: list[str], *levels: dict[str, Any]) -> str:
    key = ""
    for name in attributes:
        value = next((level[name] for level in levels if name in level), None)
        key += f"{name}={'' if value is None else value}|"
    return key


def _session(resource: dict, record: dict) -> str | None:
    return next((record[name] for name in SESSION_NAMES if record.get(name)), None) or resource.get("session.id")


def _pipeline_filters(config: dict, exporter: str) -> dict[str, str]:
    """signal -> the filter processor of the pipeline feeding `exporter`."""
    found = {}
    for pipeline_id, pipeline in config["service"]["pipelines"].items():
        if exporter in pipeline["exporters"]:
            found[pipeline_id.split("/")[0]] = next(p for p in pipeline["processors"] if p.startswith("filter/"))
    return found


def routing(config: dict, cli: str) -> tuple[dict[str, set[tuple[str, str]]], list[str]]:
    """(session -> {(signal, key)} for records going the session way, problems: records kept by
    no filter or by both)."""
    sessions_exporter = next(e for e, c in config["exporters"].items() if (c or {}).get("routing_key") == "attributes")
    attributes = config["exporters"][sessions_exporter]["routing_attributes"]
    session_filters = _pipeline_filters(config, sessions_exporter)
    other_filters = {signal: f for e, c in config["exporters"].items() if e != sessions_exporter
                     for signal, f in _pipeline_filters(config, e).items()}
    keys: dict[str, set[tuple[str, str]]] = defaultdict(set)
    problems = []
    for signal, resources_key, scopes_key, records_key in (("traces", "resourceSpans", "scopeSpans", "spans"),
                                                           ("logs", "resourceLogs", "scopeLogs", "logRecords")):
        with gzip.open(CAPTURES / cli / f"{signal}.jsonl.gz", "rt") as lines:
            for line in lines:
                request = json.loads(line)
                kept = []  # (resource, scope, record, trace id) going the session way, in request order
                for resource_records in request.get(resources_key, []):
                    resource = _attributes(resource_records.get("resource", {}).get("attributes"))
                    for scope_records in resource_records.get(scopes_key, []):
                        scope = _attributes(scope_records.get("scope", {}).get("attributes"))
                        for item in scope_records.get(records_key, []):
                            record = _attributes(item.get("attributes"))
                            to_sessions = _kept(config, session_filters[signal], signal, resource, record)
                            to_others = _kept(config, other_filters[signal], signal, resource, record)
                            if to_sessions == to_others:
                                problems.append(f"{cli} {signal}: a record kept by {'both' if to_sessions else 'no'} filter")
                            if to_sessions:
                                kept.append((resource, scope, record, item.get("traceId", "")))
                if signal == "logs":
                    for resource, scope, record, _ in kept:
                        keys[_session(resource, record)].add((signal, _key(attributes, resource, scope, record)))
                    continue
                # Spans: split by trace; each trace's key from its resource, else the first scope, else its first span.
                first: dict[str, tuple[dict, dict]] = {}
                for resource, scope, record, trace_id in kept:
                    first.setdefault(trace_id, (scope, record))
                for resource, _, record, trace_id in kept:
                    scope, first_span = first[trace_id]
                    keys[_session(resource, record)].add((signal, _key(attributes, resource, scope, first_span)))
    return keys, problems


@pytest.fixture(scope="module")
def fleet() -> dict:
    config, documented = load(FLEET)
    assert validate_config(config, documented) == []
    return config


@pytest.mark.parametrize("cli", CLIS)
def test_every_session_maps_to_one_key_on_both_signals(fleet, cli: str) -> None:
    keys, problems = routing(fleet, cli)
    assert problems == []
    assert keys and None not in keys, "a record sent the session way names no session"
    for session, routed in keys.items():
        assert len({key for _, key in routed}) == 1, (session, routed)
        signals = {signal for signal, _ in routed}
        # opencode exports no log records with a session; the others tell of a session on both signals.
        assert signals == ({"traces"} if cli == "opencode" else {"traces", "logs"}), (session, signals)


def test_routing_by_every_session_name_would_split_a_gemini_session(fleet) -> None:
    """The check can fail: keyed also by gen_ai.conversation.id, Gemini CLI's spans (which carry it)
    and its log records (which do not) get different keys."""
    broken = copy.deepcopy(fleet)
    broken["exporters"]["load_balancing/sessions"]["routing_attributes"] = ["session.id", "gen_ai.conversation.id"]
    keys, _ = routing(broken, "gemini")
    assert any(len({key for _, key in routed}) > 1 for routed in keys.values())


def test_sessionless_records_go_by_trace_id(fleet) -> None:
    pipelines = fleet["service"]["pipelines"]
    assert fleet["exporters"]["load_balancing/traces"]["routing_key"] == "traceID"
    assert {p for p, c in pipelines.items() if "load_balancing/traces" in c["exporters"]} == {"traces", "logs"}
