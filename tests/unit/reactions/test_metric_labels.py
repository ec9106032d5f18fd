"""Label and content hardening: bounded metric labels, no argument previews in metrics, no new content on spans.

Tool, agent and model names come from the model or the application; as metric labels they must stay
a bounded set (the first MAX_LABEL_VALUES values, then `_other`). Reminder texts quote the tool's
arguments; they go to the agent, never into metrics or exported spans. The guard adds only
`otelguard.*` attributes and `otelguard.verdict` events to what the instrumentation exported.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from contextlib import ExitStack
from typing import Any, Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelguard
from otelguard.reactions.metrics import MAX_LABEL_VALUES, OTHER, LabelCap
from otel_support import Guarded, metric_points, output_messages

SECRET = "PREVIEW-MARKER-7f3a"  # a value inside tool arguments, quoted by the detailed reminder
MODEL_CONTROLLED = ("gen_ai.tool.name", "gen_ai.agent.name", "gen_ai.request.model")
MAX_LABEL_CHARS = 256


class Pipeline(Guarded):
    """A guarded provider (exporting through the guard) plus a sibling exporter that sees the original spans."""

    def __init__(self, config: Any = None, **guarded_kwargs: Any):
        self.original = InMemorySpanExporter()
        self.mailbox = otelguard.Mailbox()
        super().__init__(config, siblings=[SimpleSpanProcessor(self.original)], control=self.mailbox,
                         **guarded_kwargs)

    def agent(self, name: str = "agent", **attributes: Any):
        return self.tracer.start_as_current_span(f"invoke_agent {name}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attributes})

    def tool(self, name: str, arguments: str, result: str = "same result", **attributes: Any) -> None:
        with self.tracer.start_as_current_span(f"execute_tool {name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": arguments, **attributes}) as span:
            span.set_attribute("gen_ai.tool.call.result", result)

    def model(self, *, text: str = "", reasoning: str = "", model: str = "m", tokens: int = 100) -> None:
        with self.tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                "gen_ai.output.messages": output_messages(text=text, reasoning=reasoning),
                "gen_ai.usage.output_tokens": tokens}):
            pass

    def labels(self) -> dict[tuple[str, str], set[Any]]:
        """(metric, label key) -> the distinct label values recorded."""
        values: dict[tuple[str, str], set[Any]] = defaultdict(set)
        data = self.metric_reader.get_metrics_data()
        for rm in (data.resource_metrics if data else []):
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    for point in metric.data.data_points:
                        for key, value in point.attributes.items():
                            values[(metric.name, key)].add(value)
        return values


@pytest.fixture
def pipeline() -> Iterator[Any]:
    with ExitStack() as pipelines:  # each one built is shut down after the test
        yield lambda config=None, **kwargs: pipelines.enter_context(Pipeline(config, **kwargs))


REPEAT_2 = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]}
# The guard steers at the second stalled call: a loop it acted on, whose tokens the loop metrics count.
THINKING = {"guards": [{"id": "thinking-loop-guard", "config": {"min_reasoning_chars": 256, "max_thinking_steps": 2}}]}


def test_500_distinct_tool_names_make_at_most_the_cap_plus_other(pipeline):
    """A verdict on each of 500 distinct tool names leaves at most MAX_LABEL_VALUES tool labels plus `_other`."""
    p = pipeline(REPEAT_2)
    with p.agent():
        for index in range(500):
            p.tool(f"tool_{index}", '{"q": 1}')
            p.tool(f"tool_{index}", '{"q": 1}')
    tools = p.labels()[("otelguard.verdicts", "gen_ai.tool.name")]
    assert OTHER in tools
    assert len(tools - {""}) <= MAX_LABEL_VALUES + 1


def test_500_distinct_agent_names_make_at_most_the_cap_plus_other(pipeline):
    """Verdicts from 500 distinct agent names leave at most MAX_LABEL_VALUES agent labels plus `_other`."""
    p = pipeline(REPEAT_2)
    for index in range(500):
        with p.agent(f"agent_{index}"):
            p.tool("probe", '{"q": 1}')
            p.tool("probe", '{"q": 1}')
    agents = p.labels()[("otelguard.verdicts", "gen_ai.agent.name")]
    assert OTHER in agents
    assert len(agents) <= MAX_LABEL_VALUES + 1


def test_500_distinct_model_names_make_at_most_the_cap_plus_other(pipeline):
    """Loop-token spend from 500 distinct model names leaves at most MAX_LABEL_VALUES model labels plus `_other`."""
    p = pipeline(THINKING)
    reasoning = "Let me think about the problem from another side. " * 8  # 400 chars, no output: a stall
    for index in range(500):
        with p.agent(f"agent_{index}"):
            for _ in range(2):
                p.model(reasoning=reasoning, model=f"model-{index}")
    models = p.labels()[("otelguard.loop.tokens", "gen_ai.request.model")]
    assert OTHER in models
    assert len(models) <= MAX_LABEL_VALUES + 1


def test_every_label_of_every_metric_stays_bounded(pipeline):
    """Across all of otelguard's metrics, no label key takes more than MAX_LABEL_VALUES values plus `_other`
    (and the empty value that says "no tool" on verdicts that are not about a tool)."""
    p = pipeline({"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}},
                             {"id": "thinking-loop-guard", "config": {"min_reasoning_chars": 256,
                                                                      "max_thinking_steps": 2}}]})
    reasoning = "Maybe the cache is stale, or maybe the index is. " * 8
    for index in range(300):
        with p.agent(f"agent_{index}"):
            p.tool(f"tool_{index}", json.dumps({"n": index}))
            p.tool(f"tool_{index}", json.dumps({"n": index}))
            for _ in range(2):
                p.model(reasoning=reasoning, model=f"model-{index}")
    assert p.processor.force_flush(10_000)
    labels = p.labels()
    assert {("otelguard.verdicts", "gen_ai.tool.name"), ("otelguard.verdicts", "gen_ai.agent.name"),
            ("otelguard.loop.tokens", "gen_ai.request.model")} <= set(labels)  # the loop below checks them
    for (metric, key), values in labels.items():
        assert len(values - {""}) <= MAX_LABEL_VALUES + 1, (metric, key, len(values))


def test_a_huge_model_controlled_name_is_not_a_huge_label(pipeline):
    """A 5 000-character tool name (a hallucinated name) is not recorded as a 5 000-character label value."""
    p = pipeline(REPEAT_2)
    name = "t" * 5000
    with p.agent("a" * 5000):
        p.tool(name, '{"q": 1}')
        p.tool(name, '{"q": 1}')
    labels = p.labels()
    assert labels[("otelguard.verdicts", "gen_ai.tool.name")] and labels[("otelguard.verdicts", "gen_ai.agent.name")]
    for (metric, key), values in labels.items():
        for value in values:
            assert not isinstance(value, str) or len(value) <= MAX_LABEL_CHARS, (metric, key, len(value))


def _all_metric_strings(p: Pipeline) -> list[str]:
    strings = [str(v) for values in p.labels().values() for v in values]
    data = p.metric_reader.get_metrics_data()
    for rm in (data.resource_metrics if data else []):
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                strings += [metric.name, metric.description or "", metric.unit or ""]
    return strings


def test_argument_previews_never_appear_in_metrics(pipeline):
    """The detailed reminders quote the arguments to the agent; no metric label or name carries them."""
    p = pipeline({"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [3, 5, 8], "stop_after": 9}}]})
    arguments = json.dumps({"path": f"/tmp/{SECRET}", "content": SECRET * 3})
    with p.agent():
        for _ in range(10):
            p.tool("write_file", arguments)
    assert p.processor.force_flush(10_000)
    delivered = [m.text for m in p.mailbox.drain()]
    assert any(SECRET in text for text in delivered)  # the preview did reach the agent...
    assert not [s for s in _all_metric_strings(p) if SECRET in s]  # ...and nothing else


def _strings_of(span: ReadableSpan) -> Iterator[str]:
    for value in (span.attributes or {}).values():
        yield str(value)
    for event in span.events:
        yield event.name
        for value in (event.attributes or {}).values():
            yield str(value)


def _loop_workload(p: Pipeline) -> None:
    """Every verdict kind: repeat reminders, a thinking-loop steer, a repetitive-output flag, a tool timeout."""
    arguments = json.dumps({"query": SECRET})
    with p.agent(conversation="c"):
        for _ in range(5):
            p.tool("search", arguments)
        for index in range(3):
            p.model(reasoning=f"Angle {index}: " + "I could try the other index, or re-read the docs. " * 8)
        p.model(text="Let me check.\n" + "I'll run the tests now.\n" * 40)
        with p.tracer.start_as_current_span("execute_tool slow", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow",
                "gen_ai.tool.call.arguments": arguments, "otelguard.tool.timeout_ms": 20}):
            assert otelguard.tool_signal().wait(10)


ALL_GUARDS = {"guards": [{"id": "timeout-policy"},
                         {"id": "repeat-tool-reminder", "config": {"thresholds": [3, 5]}},
                         {"id": "thinking-loop-guard", "config": {"min_reasoning_chars": 256}}]}


def test_exported_spans_gain_only_otelguard_attributes_and_verdict_events(pipeline):
    """Each span the guard exports has exactly the original attributes plus otelguard.* ones, the original
    events plus `otelguard.verdict` events whose attributes are all otelguard.*."""
    p = pipeline(ALL_GUARDS)
    _loop_workload(p)
    assert p.processor.force_flush(10_000)
    originals = {s.context.span_id: s for s in p.original.get_finished_spans()}
    exported = p.exporter.get_finished_spans()
    assert len(exported) == len(originals)
    verdicts = set()
    for span in exported:
        original = originals[span.context.span_id]
        added = set(span.attributes) - set(original.attributes)
        assert all(key.startswith("otelguard.") for key in added), added
        assert {k: v for k, v in span.attributes.items() if k in original.attributes} == dict(original.attributes)
        extra_events = list(span.events)[len(original.events):]
        assert list(span.events)[:len(original.events)] == list(original.events)
        for event in extra_events:
            assert event.name == "otelguard.verdict"
            assert all(key.startswith("otelguard.") for key in event.attributes), dict(event.attributes)
        verdicts.add(span.attributes.get("otelguard.verdict"))
    assert verdicts >= {"repeated_tool_call", "thinking_loop", "repetitive_output", "tool_timeout"}


def test_no_guard_message_text_is_exported(pipeline):
    """The reminder, steer and timeout texts go to the agent only: no exported string contains them."""
    p = pipeline(ALL_GUARDS)
    _loop_workload(p)
    assert p.processor.force_flush(10_000)
    messages = [m.text for m in p.mailbox.drain()]
    assert messages
    exported = [s for span in p.exporter.get_finished_spans() for s in _strings_of(span)]
    originals = {s for span in p.original.get_finished_spans() for s in _strings_of(span)}
    for text in messages:
        assert not [s for s in exported if text in s and s not in originals]
    assert not [s for s in exported if "consecutive_calls" in s]


# The verdicts _loop_workload produces, by kind; each gets exactly one otelguard.verdict event.
LOOP_WORKLOAD_VERDICTS = Counter({"repeated_tool_call": 4, "thinking_loop": 3, "repetitive_output": 1,
                                  "tool_timeout": 1})


def test_sibling_mode_adds_only_otelguard_verdict_events_to_the_run(pipeline):
    """Without a downstream, the only thing the guard adds to any exported span is otelguard.verdict events
    with otelguard.* attributes on the agent run: one per verdict, and none on any other span."""
    p = pipeline(ALL_GUARDS, export=False)  # sibling mode: the guard has no downstream
    _loop_workload(p)
    assert p.processor.force_flush(10_000)
    run_verdicts: Counter[str] = Counter()
    for span in p.original.get_finished_spans():
        assert not [k for k in span.attributes if k.startswith("otelguard.") and k != "otelguard.tool.timeout_ms"]
        for event in span.events:
            assert event.name == "otelguard.verdict"
            assert all(key.startswith("otelguard.") for key in event.attributes)
        if span.attributes.get("gen_ai.operation.name") == "invoke_agent":
            run_verdicts.update(event.attributes["otelguard.verdict"] for event in span.events)
        else:
            assert not span.events, span.name
    assert run_verdicts == LOOP_WORKLOAD_VERDICTS
    recorded = sum(value for _, value in metric_points(p.metric_reader, "otelguard.verdicts"))
    assert recorded == LOOP_WORKLOAD_VERDICTS.total()  # every verdict the guard recorded is on the run


def test_watch_stream_records_no_chunk_text_unless_asked(pipeline):
    """watch_stream without record_chunks=True adds no event (and so no model text) to the span."""
    p = pipeline(ALL_GUARDS)
    with p.agent():
        with p.tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            assert list(otelguard.watch_stream([f"{SECRET} part {i} " for i in range(10)],
                                               processor=p.processor)) != []
    for span in p.exporter.get_finished_spans():
        assert not [s for s in _strings_of(span) if SECRET in s]


def test_a_configured_tool_name_keeps_its_label_after_junk_names_fill_the_cap(pipeline):
    """With include ["search", "junk_*"], 200 junk tool names fill the cap, and `search` still reports
    as itself, not `_other`."""
    p = pipeline({"guards": [{"id": "repeat-tool-reminder",
                              "config": {"thresholds": [2], "include": ["search", "junk_*"]}}]})
    with p.agent():
        for index in range(200):
            p.tool(f"junk_{index}", '{"q": 1}')
            p.tool(f"junk_{index}", '{"q": 1}')
        p.tool("search", '{"q": 1}')
        p.tool("search", '{"q": 1}')
    tools = p.labels()[("otelguard.verdicts", "gen_ai.tool.name")]
    assert OTHER in tools and "search" in tools


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_label_cap_ages_junk_names_out_and_keeps_names_in_use():
    """100 junk names fill the cap; a name in use through the junk keeps its slot; once the junk is
    unseen for two generations a new legitimate name gets its own label."""
    clock = FakeClock()
    cap = LabelCap(101, generation_s=60, clock=clock)
    assert cap("search") == "search"
    for index in range(100):
        assert cap(f"junk_{index}") == f"junk_{index}"
    assert cap("fetch") == OTHER  # full
    clock.now += 61  # one generation: `search` seen, the junk not
    assert cap("search") == "search"
    assert cap("fetch") == OTHER  # the junk of the last generation still holds its slots
    clock.now += 61  # two: the junk is forgotten, `search` kept
    assert cap("search") == "search"
    assert cap("fetch") == "fetch"


def test_the_label_cap_stays_bounded_within_two_generations():
    """However many names arrive, no more than `limit` of them hold a label at once."""
    clock = FakeClock()
    cap = LabelCap(10, generation_s=60, clock=clock)
    for step in range(1000):
        clock.now = step  # 1000 s: 16 generations
        cap(f"name_{step}")
        cap("steady")
    labelled = {f"name_{step}" for step in range(940, 1000) if cap(f"name_{step}") != OTHER}
    assert cap("steady") == "steady"
    assert len(labelled) <= 9
