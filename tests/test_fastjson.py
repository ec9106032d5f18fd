"""`fastjson.loads` reads exactly what the standard library's `json.loads` reads.

orjson parses first; the standard library is asked again only when orjson's refusal may be one it
would not make (the literals NaN/Infinity, numbers out of float range, lone surrogates): text that
is not JSON at all fails once. Either way the outcome is the standard library's.
"""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import json_strategies
from hypothesis_support import examples

from otelguard import fastjson
from otelguard.canonical import canonical_arguments

json_values = json_strategies.json_values(nan=True, max_leaves=20)
NOISE = st.text(alphabet='{}[]":,0123456789eE+-.nultrefasNIiy \\u\t\n\'é\ud800', max_size=30)


def outcome(loads, text: str):
    try:
        return "value", _comparable(loads(text))
    except (ValueError, RecursionError):
        return "error", None


def _holds_a_big_int(value) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return not -(2**63) <= value < 2**64
    if isinstance(value, list):
        return any(map(_holds_a_big_int, value))
    if isinstance(value, dict):
        return any(map(_holds_a_big_int, value.values()))
    return False


def _comparable(value):
    """NaN never equals itself: compare it by its repr."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    return value


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=list(HealthCheck))
@given(value=json_values, noise=NOISE, cut=st.integers(0, 300), ascii_only=st.booleans())
def test_loads_reads_what_the_standard_library_reads(value, noise, cut, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    for candidate in (text, noise, text[:cut], text[:cut] + noise + text[cut:], noise + text):
        want = outcome(json.loads, candidate)
        if want[0] == "value" and _holds_a_big_int(want[1]):
            continue  # beyond 64 bits orjson reads a float (documented in fastjson)
        assert outcome(fastjson.loads, candidate) == want, candidate


def test_the_literals_and_numbers_only_the_standard_library_reads_are_still_read():
    for text, expected in [("[NaN]", ["nan"]), ("[Infinity]", [math.inf]), ("[-Infinity]", [-math.inf]),
                           ("[1e400]", [math.inf]), ('"\\ud800"', "\ud800"), ('"a\udc80"', "a\udc80"),
                           ('["é😀", NaN]', ["é😀", "nan"])]:  # the refusal's position counted after non-ASCII text
        assert _comparable(fastjson.loads(text)) == expected, text


def test_text_that_is_not_json_is_not_parsed_twice(monkeypatch):
    """A Python repr (LangChain's tool input) fails in orjson at its first quote: `json` is not asked,
    after non-ASCII text too (orjson's refusal position counts characters)."""
    asked = []
    real_json_loads = json.loads
    monkeypatch.setattr(fastjson.json, "loads", lambda text: asked.append(text) or real_json_loads(text))
    for text in ("{'city': 'Paris'}", "<html>", "{'a': [1, 2]}", "Error: timed out", "{'ville': 'Zürich'}",
                 '["é", <html>]'):
        try:
            fastjson.loads(text)
        except ValueError:
            pass
    assert asked == []
    assert _comparable(fastjson.loads("[NaN]")) == ["nan"]
    assert asked == ["[NaN]"]  # what orjson refuses but `json` reads is still asked


_CANONICAL_IN_A_HOOK_PROCESS = """
import pickle, sys
from otelguard import fastjson
fastjson.use_standard_library()
from otelguard.canonical import canonical_arguments
values = pickle.load(sys.stdin.buffer)
pickle.dump([canonical_arguments(value) for value in values], sys.stdout.buffer)
"""


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.lists(json_strategies.json_values(nan=True, big_integers=True, max_leaves=20)
                       | st.text(max_size=60), min_size=40, max_size=40))
def test_canonical_arguments_are_the_same_with_the_standard_library_alone(values):
    """A CLI hook's process reads and writes JSON with the standard library alone (see fastjson): its
    canonical arguments are the processor's, for the values and for their JSON text alike."""
    values = values + [json.dumps(value) for value in values]
    done = subprocess.run([sys.executable, "-c", _CANONICAL_IN_A_HOOK_PROCESS], input=pickle.dumps(values),
                          capture_output=True, check=True)
    assert pickle.loads(done.stdout) == [canonical_arguments(value) for value in values]


def test_a_process_that_chose_the_standard_library_never_imports_orjson():
    probe = ("import sys\nfrom otelguard import fastjson\nfastjson.use_standard_library()\n"
             "fastjson.loads('[1]'), fastjson.dumps_canonical({'b': 1, 'a': [2.5]})\n"
             "print('orjson' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
