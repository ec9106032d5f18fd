"""Canonical arguments compare JSON numbers by value, as the seed's JavaScript (JSON.parse, then
JSON.stringify) does: `100`, `100.0` and `1e2` are one call, so are `1e21` and
`1000000000000000000000`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelguard.model.canonical import canonical_arguments, js_number
from otelguard.engine import GuardEngine
from otelguard.model.records import SpanView

from hypothesis_support import examples


@pytest.mark.parametrize(("text", "javascript"), [
    # What `JSON.stringify(JSON.parse(text))` prints in Node.
    ('{"n":100}', '{"n":100}'),
    ('{"n":100.0}', '{"n":100}'),
    ('{"n":1e2}', '{"n":100}'),
    ('{"n":1E+2}', '{"n":100}'),
    ('{"n":1e21}', '{"n":1e+21}'),
    ('{"n":1000000000000000000000}', '{"n":1e+21}'),
    ('{"n":100000000000000000000}', '{"n":100000000000000000000}'),
    ('{"n":-0}', '{"n":0}'),
    ('{"n":-0.0}', '{"n":0}'),
    ('{"n":0.000001}', '{"n":0.000001}'),
    ('{"n":1e-7}', '{"n":1e-7}'),
    ('{"n":1.50}', '{"n":1.5}'),
    ('{"n":9007199254740993}', '{"n":9007199254740992}'),
    ('{"n":12345678901234567890}', '{"n":12345678901234567000}'),
    ('{"n":1.7976931348623157e308}', '{"n":1.7976931348623157e+308}'),
    ('{"n":5e-324}', '{"n":5e-324}'),
    ('[1.0,{"b":2.50,"a":"x:1.5"}]', '[1,{"a":"x:1.5","b":2.5}]'),
    ('{"version":"1.0","n":[3,4.25e1]}', '{"n":[3,42.5],"version":"1.0"}'),
    ('2.0', '2'),
])
def test_numbers_are_written_as_javascript_writes_them(text, javascript):
    assert canonical_arguments(text)[0] == javascript


def test_one_value_written_three_ways_is_one_key():
    keys = {canonical_arguments(f'{{"limit": {n}, "q": "x"}}')[0] for n in ("100", "100.0", "1e2")}
    assert keys == {'{"limit":100,"q":"x"}'}


def test_arguments_given_as_objects_match_their_text():
    assert canonical_arguments({"n": 1e2, "m": [10**21]})[0] == canonical_arguments('{"m":[1e21],"n":100}')[0]


def _tool_span(span_id: int, arguments: str) -> SpanView:
    return SpanView("execute_tool probe", trace_id=7, span_id=span_id, attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
        "gen_ai.tool.call.arguments": arguments})


@pytest.mark.parametrize("spellings", [("100", "100.0", "1e2"), ("1e21", "1000000000000000000000", "1E21")])
def test_the_repeat_reminder_counts_one_number_spelled_three_ways_as_three_identical_calls(spellings):
    """Through the engine (the default four guards): the third call gets the short reminder."""
    engine = GuardEngine()
    reminded = []
    for span_id, number in enumerate(spellings, start=1):
        span = _tool_span(span_id, f'{{"page": {number}}}')
        engine.start(span)
        judged = engine.end(span)
        reminded.append([(v.guard, v.repeat_count) for v in judged.verdicts if v.action == "remind"])
    assert reminded == [[], [], [("repeat-tool-reminder", 3)]]


@settings(max_examples=examples(1000), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_written_number_reads_back_as_the_same_double(number):
    written = js_number(number)
    assert float(written) == number
    assert canonical_arguments(json.dumps([number]))[0] == f"[{written}]"


@settings(max_examples=examples(500), deadline=None)
@given(st.integers(min_value=-(2**53), max_value=2**53))
def test_integers_a_double_holds_are_written_as_integers(number):
    assert js_number(number) == str(number)
    assert js_number(float(number)) == str(number)
