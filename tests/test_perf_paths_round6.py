"""Round 6 of the per-span shortcuts: each reaches the same answer as the long way it replaces.

- `gen_ai.output.messages` JSON text no longer than the output floor, with no number written with a
  fraction or an exponent, is left unread without being parsed (`genai._too_short_to_read`): nothing
  read out of it could have reached the floor.
- the live guard asks that question of a model span's attributes (`conventions.output_unread`) before
  building its view: `GuardEngine.model_ended_unread` then does what `span_ended` does for unread
  output (no guard, no state; a kept agent seen active), unless a live stream trip waits for the span.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_strategies import messages
from otel_support import output_messages

from otelguard.conventions import OutputFloor, classify, genai, output_unread, read
from otelguard.conventions._values import UNREAD_OUTPUT
from otelguard.detectors.stream import Trip
from otelguard.engine import GuardEngine
from otelguard.records import Content, SpanView

FLOOR = OutputFloor(256, 2048)

dump_styles = st.sampled_from([
    {"separators": (",", ":")},  # compact, as most instrumentations write it
    {},  # the standard library's default spacing
    {"separators": (",", ":"), "ensure_ascii": False},
    {"indent": 1},
])


def _read_in_full(raw: str) -> tuple[str, str]:
    output = genai.read_output_messages(raw)
    return "\n".join(output.texts), "\n".join(output.reasoning)


def _assert_left_unparsed_only_if_unreachable(raw: str, floor: OutputFloor) -> bool:
    """When `raw` is left unparsed under `floor`, what reading it in full gives stays under the floor;
    returns whether it was left unparsed."""
    if not genai._too_short_to_read(raw, floor):
        return False
    text, reasoning = _read_in_full(raw)
    assert len(text) < floor.text_chars and len(reasoning) < floor.reasoning_chars, raw
    assert genai.read_output_messages(raw, floor) is UNREAD_OUTPUT
    return True


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, dump_styles, st.integers(-3, 3), st.booleans())
def test_output_text_left_unparsed_could_not_have_reached_the_floor(decoded, style, margin, text_floor_lower):
    raw = json.dumps(decoded, **style)
    # Floors around the text's own length, so that the bound is tested where it is tight.
    low, high = len(raw) + margin, len(raw) + 3
    floor = OutputFloor(low, high) if text_floor_lower else OutputFloor(high, low)
    _assert_left_unparsed_only_if_unreachable(raw, floor)


# Numbers written as producers may write them. (The values dumped above cannot find these cases:
# json.dumps writes a float as Python prints it back.) Exponents and fractions, or integers past 64
# bits, each in a list of its own kind (a fraction anywhere sends the text to a parse), and values
# that print as written (integers of up to 18 digits: the rule takes 19 as may-be-longer), which are
# left unparsed: drop either number rule and an unparsed text of the first two kinds reads past the
# floor.
MAY_PRINT_LONGER, PRINT_AS_WRITTEN = "may print longer", "print as written"
written_numbers = st.one_of(
    st.tuples(st.just(MAY_PRINT_LONGER), st.lists(
        st.sampled_from(["1e-7", "1E5", "2.50", "1e0", "0.1", "-0.0", "7", "-12"]), min_size=30, max_size=160)),
    st.tuples(st.just(MAY_PRINT_LONGER), st.lists(
        st.sampled_from([str(2**64), str(-(2**63) - 1), str(2**63 - 1), "7", "-12"]), min_size=30, max_size=160)),
    st.tuples(st.just(PRINT_AS_WRITTEN), st.lists(
        st.sampled_from([str(10**18 - 1), str(-(10**18) + 1), "7", "-12", "0", "true", "false", "null"]),
        min_size=1, max_size=160)),
)


@settings(max_examples=1500, deadline=None)
@given(written_numbers, st.integers(-3, 3), st.booleans())
def test_output_of_written_numbers_left_unparsed_could_not_have_reached_the_floor(kind_numbers, margin, in_parts):
    kind, numbers = kind_numbers
    content = "[" + ",".join(numbers) + "]"
    raw = ('[{"role":"assistant","parts":[{"type":"text","content":' + content + "}]}]" if in_parts
           else '[{"role":"assistant","content":' + content + "}]")
    left_unparsed = _assert_left_unparsed_only_if_unreachable(raw, OutputFloor(len(raw) + margin, len(raw) + 3))
    if kind == PRINT_AS_WRITTEN and margin >= 1:  # no number rule applies, and the text fits the floor
        assert left_unparsed, raw


@pytest.mark.parametrize("number, why", [
    ("1e-7", "prints as 1e-07"),
    (str(2**64), "beyond 64 bits an integer reads as a float: 1.8446744073709552e+19"),
])
def test_a_number_that_prints_longer_than_written_is_why_such_text_is_parsed(number, why):
    """A hundred such numbers read to more text than the JSON they came in."""
    raw = '[{"role":"assistant","content":[' + ",".join([number] * 100) + "]}]"
    text, _ = _read_in_full(raw)
    assert len(text) > len(raw), why
    floor = OutputFloor(len(raw) + 1, len(raw) + 1)  # the raw text is under this floor; what it reads to is not
    assert not genai._too_short_to_read(raw, floor)
    assert genai.read_output_messages(raw, floor).texts == [text]  # read, and whole


def test_19_digits_is_where_an_integer_may_print_longer():
    """-2**63 - 1 reads as a float; shorter integers print as written."""
    assert not genai._too_short_to_read('[{"content":[-9223372036854775809]}]', FLOOR)
    assert genai._too_short_to_read('[{"content":[922337203685477580]}]', FLOOR)


def test_empty_output_text_reads_as_malformed_every_time():
    assert [genai.read_output_messages("").content for _ in range(2)] == [Content.MALFORMED] * 2


def test_longer_text_and_non_text_values_take_the_usual_way():
    short = output_messages(text="hello")
    assert genai._too_short_to_read(short, OutputFloor(256, 2048))
    assert not genai._too_short_to_read(short, OutputFloor(len(short) - 1, 2048))  # one character over
    assert not genai._too_short_to_read(short, OutputFloor(256, len(short) - 1))
    # Either exponent mark counts; a lone surrogate in the text does not break the test.
    assert not genai._too_short_to_read('[{"content":[1E5]}]', OutputFloor(256, 2048))
    assert genai._too_short_to_read('[{"content":"\ud800 x"}]', OutputFloor(256, 2048))
    # Already-decoded messages are walked as before (their length is not the JSON's).
    decoded = [{"role": "assistant", "parts": [{"type": "text", "content": "x" * 300}]}]
    assert genai.read_output_messages(decoded, OutputFloor(256, 2048)).texts == ["x" * 300]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, dump_styles, st.sampled_from(["chat", "openai.response"]))
def test_output_told_unread_from_the_attributes_is_read_as_unread(decoded, style, name):
    """GenAI and OpenLLMetry model spans: whenever `output_unread` says so, reading says so too."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(decoded, **style)}
    view = SpanView(name, 1, 2, None, attributes)
    classification = classify(name, attributes)
    if output_unread(attributes, classification, FLOOR):
        record = read(view, classification, output_floor=FLOOR)
        assert record.output_content is Content.UNREAD and not record.chunks
        whole = read(view, classification)  # everything, as the analyzer reads it: under every floor
        assert len(whole.text) < FLOOR.text_chars and len(whole.reasoning) < FLOOR.reasoning_chars


def test_only_gen_ai_output_messages_text_is_told_unread_without_reading():
    short = output_messages(text="ok")
    genai_span = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": short}
    assert output_unread(genai_span, classify("chat m", genai_span), FLOOR)
    decoded = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.loads(short)}  # not text
    assert not output_unread(decoded, classify("chat m", decoded), FLOOR)
    missing = {"gen_ai.operation.name": "chat"}  # not captured: read, and recorded as absent
    assert not output_unread(missing, classify("chat m", missing), FLOOR)
    openinference = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "ok"}
    assert not output_unread(openinference, classify("ChatOpenAI", openinference), FLOOR)  # read whole


def _model_attributes(text: str = "ok") -> dict:
    return {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output_messages(text=text)}


def _run_view(span_id: int, conversation: str = "c") -> SpanView:
    """An agent run of agent `a` in `conversation` (its state is kept across runs)."""
    return SpanView("invoke_agent a", 1, span_id, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": conversation})


def test_the_engine_ends_an_unread_model_span_without_its_view_as_span_ended_would():
    engine = GuardEngine(full_records=False)
    attributes = _model_attributes()
    classification = classify("chat m", attributes)
    engine.span_started(_run_view(10))
    engine.model_started(11, 10)
    assert engine.model_ended_unread(11, 10, 1, attributes, classification)
    assert engine.agent_of(11) is None  # the span left its run, as span_ended has it
    assert engine.tracked_agents == 1  # the agent's state from its run start, and none made for the call
    # Output long enough for a rule, or a live trip waiting for the span: span_ended's to judge.
    long = _model_attributes("x" * 300)
    assert not engine.model_ended_unread(12, 10, 1, long, classify("chat m", long))
    trip = engine.thinking.break_verdict(Trip("identical-chunks", 240, run=60), cut=False)
    engine.record_stream_trip(13, trip)
    assert not engine.model_ended_unread(13, 10, 1, attributes, classification)
    assert engine.span_ended(SpanView("chat m", 1, 13, 10, attributes), classification=classification
                             ).stream_verdict is trip
    # The analyzer's engine reads everything: never.
    assert not GuardEngine().model_ended_unread(14, 10, 1, attributes, classification)


def test_an_unread_model_span_keeps_its_agent_seen_active():
    """Two kept agents in a map of two: the one whose (unread) model call ended last stays when a
    third arrives; the other, least recently seen, is evicted."""
    evicted: list[tuple] = []
    engine = GuardEngine(full_records=False, max_agents=2, on_evict=lambda *report: evicted.append(report))
    attributes = _model_attributes()
    classification = classify("chat m", attributes)

    engine.span_started(_run_view(10, "first"))
    engine.span_started(_run_view(20, "second"))
    assert engine.model_ended_unread(11, 10, 1, attributes, classification)  # the first agent, seen again
    engine.span_started(_run_view(30, "third"))
    assert evicted == [("agent", "capacity", 1)]
    assert set(engine._agents._items) == {"conv:first:a", "conv:third:a"}


def test_output_longer_than_the_floor_is_parsed_to_be_told_unread_or_read(monkeypatch):
    """Text over the floor is parsed to be walked: told unread (one parse) when its text and reasoning
    stay under it, else read whole, the same whether or not `output_unread` asked first."""
    parsed: list[str] = []
    real_load_json = genai.load_json
    monkeypatch.setattr(genai, "load_json", lambda text: parsed.append(text) or real_load_json(text))
    reasoning, text = "r" * 130, "t" * 30
    unread = json.dumps([{"role": "assistant", "parts": [
        {"type": "thinking", "content": reasoning}, {"type": "text", "content": text},
        {"type": "tool_call", "id": "c", "name": "f", "arguments": {"city": "Paris", "units": "metric"}}]}] * 2)
    assert len(unread) > FLOOR.text_chars  # too long to be told unread without parsing
    assert output_unread({"gen_ai.output.messages": unread}, classify("chat m", {"gen_ai.operation.name": "chat"}),
                         FLOOR)
    assert parsed == [unread]
    reaching = output_messages(text="x" * 300)
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": reaching}
    view, classification = SpanView("chat m", 1, 2, None, attributes), classify("chat m", attributes)
    alone = read(view, classification, output_floor=FLOOR)
    assert not output_unread(attributes, classification, FLOOR)
    after = read(view, classification, output_floor=FLOOR)
    assert after == alone and after.text == "x" * 300 and after.output_content is Content.OK


def test_a_guards_state_is_made_when_its_hook_first_needs_it():
    """An agent's guard states start unmade: a tool call makes the repeat chain, only judged model
    output makes the thinking detector, and a new run resets only what was made."""
    from otelguard.detectors.repeat import RepeatChain
    from otelguard.detectors.thinking import ThinkingLoopDetector
    from otelguard.engine import UNMADE

    engine = GuardEngine(full_records=False)
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", "gen_ai.tool.call.arguments": '{"q":1}'}
    engine.span_started(_run_view(10))
    (state,) = (entry[0] for entry in engine._agents._items.values())

    def kinds() -> list:
        return [type(s) if s is not UNMADE else UNMADE for s in state.guard_states]

    assert kinds() == [type(None), UNMADE, UNMADE]  # timeout policy (keeps none), repeat chain, thinking
    engine.span_started(SpanView("execute_tool f", 1, 11, 10, tool))
    engine.span_ended(SpanView("execute_tool f", 1, 11, 10, tool))
    assert kinds() == [type(None), RepeatChain, UNMADE]
    assert engine.model_ended_unread(12, 10, 1, _model_attributes(), classify("chat m", _model_attributes()))
    assert kinds() == [type(None), RepeatChain, UNMADE]  # short output: nothing judged it
    reasoning = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output_messages(reasoning="step " * 500)}
    engine.span_ended(SpanView("chat m", 1, 13, 10, reasoning))
    assert kinds() == [type(None), RepeatChain, ThinkingLoopDetector]
    assert state.guard_states[1].count == 1
    engine.run_ended(10, None, 1)
    engine.span_started(_run_view(20))  # a new prompt, the same conversation
    assert state.guard_states[1].count == 0  # the chain made in the first run starts again
