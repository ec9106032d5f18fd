"""Round 6 of the per-span shortcuts: each reaches the same answer as the long way it replaces.

- `gen_ai.output.messages` JSON text no longer than the output floor, with no number written with a
  fraction or an exponent, is left unread without being parsed (`genai._too_short_to_read`): nothing
  read out of it could have reached the floor.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelguard.conventions import OutputFloor, genai
from otelguard.conventions._values import UNREAD_OUTPUT

# Any JSON value, as a part's or a message's content may be (instrumentations put odd things there).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)
part_types = st.sampled_from(["text", "refusal", "thinking", "reasoning", "reasoning_text", "tool_call", "image", None])


@st.composite
def parts(draw) -> dict:
    part: dict = {}
    kind = draw(part_types)
    if kind is not None:
        part["type"] = kind
    if draw(st.booleans()):
        part["content"] = draw(json_values)
    if kind == "tool_call":
        part["name"] = draw(st.text(max_size=8))
        part["arguments"] = draw(json_values)
    return part


messages = st.lists(
    st.one_of(
        st.fixed_dictionaries({"role": st.just("assistant"), "parts": st.lists(parts(), max_size=4)}),
        st.fixed_dictionaries({"role": st.just("assistant"), "content": json_values}),
        json_values,
    ),
    max_size=3,
)
dump_styles = st.sampled_from([
    {"separators": (",", ":")},  # compact, as most instrumentations write it
    {},  # the standard library's default spacing
    {"separators": (",", ":"), "ensure_ascii": False},
    {"indent": 1},
])


def _read_in_full(raw: str) -> tuple[str, str]:
    output = genai.read_output_messages(raw)
    return "\n".join(output.texts), "\n".join(output.reasoning)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, dump_styles, st.integers(-3, 3), st.booleans())
def test_output_text_left_unparsed_could_not_have_reached_the_floor(decoded, style, margin, text_floor_lower):
    raw = json.dumps(decoded, **style)
    # Floors around the text's own length, so that the bound is tested where it is tight.
    low, high = len(raw) + margin, len(raw) + 3
    floor = OutputFloor(low, high) if text_floor_lower else OutputFloor(high, low)
    if not genai._too_short_to_read(raw, floor):
        return
    text, reasoning = _read_in_full(raw)
    assert len(text) < floor.text_chars and len(reasoning) < floor.reasoning_chars, raw
    assert genai.read_output_messages(raw, floor) is UNREAD_OUTPUT


def test_a_number_with_an_exponent_is_why_such_text_is_parsed():
    """`1e-7` prints as `1e-07`: a hundred of them read to more text than the JSON they came in."""
    raw = '[{"role":"assistant","content":[' + ",".join(["1e-7"] * 100) + "]}]"
    text, _ = _read_in_full(raw)
    assert len(text) > len(raw)
    floor = OutputFloor(len(raw) + 1, len(raw) + 1)  # the raw text is under this floor; what it reads to is not
    assert not genai._too_short_to_read(raw, floor)
    assert genai.read_output_messages(raw, floor).texts == [text]  # read, and whole


def test_longer_text_and_non_text_values_take_the_usual_way():
    short = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}])
    assert genai._too_short_to_read(short, OutputFloor(256, 2048))
    assert not genai._too_short_to_read(short, OutputFloor(len(short) - 1, 2048))  # one character over
    assert not genai._too_short_to_read(short, OutputFloor(256, len(short) - 1))
    # Either exponent mark counts; a lone surrogate in the text does not break the test.
    assert not genai._too_short_to_read('[{"content":[1E5]}]', OutputFloor(256, 2048))
    assert genai._too_short_to_read('[{"content":"\ud800 x"}]', OutputFloor(256, 2048))
    # Already-decoded messages are walked as before (their length is not the JSON's).
    decoded = [{"role": "assistant", "parts": [{"type": "text", "content": "x" * 300}]}]
    assert genai.read_output_messages(decoded, OutputFloor(256, 2048)).texts == ["x" * 300]
