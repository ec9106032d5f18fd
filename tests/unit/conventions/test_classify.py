"""Classifying spans: each span's kind and convention, by the conventions' marker keys and names."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from otelguard.conventions import (
    MARKER_KEYS,
    NAMED_SPANS,
    classify,
    genai,
    openinference,
    openllmetry,
)
from otelguard.model.records import SpanKind

SPANS = [  # (name, attributes, (kind, convention) or None)
    ("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}, ("model", "genai")),
    ("invoke_agent weather", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}, ("agent", "genai")),
    ("execute_tool f", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"}, ("tool", "genai")),
    ("execute_tool f", {"gen_ai.operation.name": "bogus"}, None),
    ("execute_tool f", {"gen_ai.operation.name": 3}, None),
    ("openai.chat", {"gen_ai.operation.name": "chat"}, ("model", "openllmetry")),  # OpenLLMetry by its name
    ("chat x", {"gen_ai.operation.name": "chat", "llm.request.type": "chat"}, ("model", "openllmetry")),
    ("chat x", {"gen_ai.operation.name": "chat", "llm.is_streaming": False}, ("model", "genai")),  # not a key of its own
    ("chat x", {"gen_ai.operation.name": "chat", "gen_ai.openai.api_base": "https://x"}, ("model", "openllmetry")),
    ("chat x", {"gen_ai.operation.name": "chat", "traceloop.span.kind": None, "llm.request.type": None}, ("model", "genai")),
    ("x", {"openinference.span.kind": "LLM", "gen_ai.operation.name": "invoke_agent"}, ("model", "openinference")),
    ("x", {"openinference.span.kind": "chain"}, None),
    ("x", {"openinference.span.kind": 7}, None),
    ("x", {"traceloop.span.kind": "tool"}, ("tool", "openllmetry")),
    ("x", {"traceloop.span.kind": "workflow"}, None),
    ("x", {"llm.request.type": "completion"}, ("model", "openllmetry")),
    ("x", {"llm.request.type": "embedding"}, None),
    ("agent run", {"agent_name": "a"}, ("agent", "genai")),
    ("agent run", {"gen_ai.agent.name": None}, None),
    ("running tool", {"gen_ai.tool.name": "f"}, ("tool", "genai")),
    ("openai.response", {}, ("model", "openllmetry")),
    ("x", {"gen_ai.operation.name": None, "traceloop.span.kind": "agent"}, ("agent", "openllmetry")),
    ("GET /weather", {"http.request.method": "GET"}, None),
]


@pytest.mark.parametrize(("name", "attributes", "expected"), SPANS)
def test_each_span_gets_its_kind_and_convention(name, attributes, expected):
    """`classify` names each span's kind and convention."""
    found = classify(name, attributes)
    assert (None if found is None else (found.kind.value, found.convention)) == expected


def test_what_is_not_a_mapping_is_none_of_ours():
    """Attributes that are not a mapping, or carry no marker, are classified as nothing, never an error."""
    assert classify("chat", None) is None  # type: ignore[arg-type]
    assert classify("chat", ["gen_ai.operation.name"]) is None  # type: ignore[arg-type]
    assert classify("chat x", {"http.method": "GET"}) is None


def reference_is_openllmetry(name: Any, attributes: Mapping[str, Any]) -> bool:
    """OpenLLMetry's marks, tested the plain way: one of its keys set, or a dotted name it writes."""
    if any(attributes.get(key) is not None for key in openllmetry.OWN_MARKER_KEYS):
        return True
    return isinstance(name, str) and " " not in name and name.endswith(openllmetry.NAME_SUFFIXES)


def reference_classify(name: Any, attributes: Mapping[str, Any]):
    """The classification rules written out plainly, in the order the conventions take precedence."""
    if MARKER_KEYS.isdisjoint(attributes) and name not in NAMED_SPANS:
        return None
    get = attributes.get
    span_kind = get("openinference.span.kind")
    if span_kind is not None:
        return openinference.classify_span_kind(span_kind)
    operation = get("gen_ai.operation.name")
    if operation is not None:
        kind = genai.OPERATION_KINDS.get(operation) if isinstance(operation, str) else None
        if kind is None:
            return None
        if reference_is_openllmetry(name, attributes):
            return openllmetry.classification(kind)
        return genai.classification(kind)
    traceloop_kind = get("traceloop.span.kind")
    if traceloop_kind is not None:
        return openllmetry.classify_span_kind(traceloop_kind)
    request_type = get("llm.request.type")
    if request_type is not None:
        return openllmetry.classify_request_type(request_type)
    # Spans known by name: OpenLLMetry's Responses span, and pydantic-ai v2's agent and tool spans when
    # they carry a key of their own (a user's span called "agent run" is none of ours).
    if name == "openai.response":
        return openllmetry.classification(SpanKind.MODEL)
    if name == "agent run" and (get("agent_name") is not None or get("gen_ai.agent.name") is not None):
        return genai.classification(SpanKind.AGENT)
    if name == "running tool" and (get("gen_ai.tool.name") is not None or get("tool_arguments") is not None):
        return genai.classification(SpanKind.TOOL)
    return None


class _StrSubclass(str):
    pass


@pytest.mark.parametrize("seed", range(20))
def test_classification_follows_the_plain_rules_on_random_spans(seed):
    """Random mixes of every convention's keys, names and odd values classify as the rules say."""
    rng = random.Random(seed)
    operations = ["chat", "invoke_agent", "execute_tool", "text_completion", "generate_content", "embeddings",
                  "", 3, None, _StrSubclass("chat"), ("chat",)]
    names = ["chat gpt-4o", "openai.chat", "x.tool", "my.agent", "a b.chat", "", "agent run", "running tool",
             "openai.response", "x", "thing.completion", "y.response", "my.tool", None]
    optional = {
        "llm.request.type": ["chat", "completion", "embedding", None],
        "traceloop.span.kind": ["tool", "agent", "workflow", None],
        "llm.is_streaming": [False, True, None],
        "gen_ai.openai.api_base": ["https://x", None],
        "openinference.span.kind": ["LLM", "chain", 7, None],
        "gen_ai.agent.name": ["a", None],
        "gen_ai.tool.name": ["f", None],
        "agent_name": ["a", None],
        "tool_arguments": ['{"a": 1}', None],
    }
    for _ in range(400):
        attributes: dict[str, Any] = {}
        if rng.random() < 0.85:
            attributes["gen_ai.operation.name"] = rng.choice(operations)
        for key, values in optional.items():
            if rng.random() < 0.25:
                attributes[key] = rng.choice(values)
        name = rng.choice(names)
        expected = reference_classify(name, attributes)
        assert classify(name, attributes) == expected, (name, attributes)
