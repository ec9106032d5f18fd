"""The `otelguard.spans` metric: every agent, model and tool span the guard read, counted exactly."""

from __future__ import annotations

import random
import threading

from otel_support import Guarded, metric_points

from otelguard.reactions.metrics import PROCESSING_SAMPLE_EVERY

SPANS = [  # (name, attributes, (kind, convention) it is counted under)
    ("chat m", {"gen_ai.operation.name": "chat"}, ("model", "genai")),
    ("execute_tool f", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"}, ("tool", "genai")),
    ("openai.chat", {"llm.request.type": "chat"}, ("model", "openllmetry")),
    ("agent", {"openinference.span.kind": "AGENT"}, ("agent", "openinference")),
    ("GET", {"http.request.method": "GET"}, None),  # none of ours: not counted
]


def counted(g: Guarded) -> dict[tuple[str, str], int]:
    return {(labels["otelguard.span.kind"], labels["otelguard.convention"]): value
            for labels, value in metric_points(g.metric_reader, "otelguard.spans")}


def test_span_counts_are_exact_under_threads():
    """Eight threads ending spans of every kind at once: each kind and convention counted exactly."""
    per_thread = 1500
    with Guarded(export=False) as g:
        def work(seed: int) -> None:
            rng = random.Random(seed)
            for _ in range(per_thread):
                name, attributes, _ = SPANS[rng.randrange(len(SPANS))]
                g.tracer.start_span(name, attributes=attributes).end()

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        expected: dict[tuple[str, str], int] = {}
        for seed in range(8):
            rng = random.Random(seed)
            for _ in range(per_thread):
                label = SPANS[rng.randrange(len(SPANS))][2]
                if label is not None:
                    expected[label] = expected.get(label, 0) + 1
        assert counted(g) == expected


def test_span_counts_are_labelled_with_plain_strings():
    with Guarded(export=False) as g:
        with g.tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            pass
        points = metric_points(g.metric_reader, "otelguard.spans")
    assert [value for _, value in points] == [1]
    labels = points[0][0]
    assert labels == {"otelguard.span.kind": "model", "otelguard.convention": "genai"}
    assert all(type(value) is str for value in labels.values())


def test_model_calls_left_unread_are_counted_too():
    """Model output too short for any guard is not read, but the span is counted as read."""
    with Guarded(export=False) as g:
        for _ in range(3):
            with g.tracer.start_as_current_span("chat m", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.output.messages": "[]"}):
                pass
        assert counted(g) == {("model", "genai"): 3}


def test_processing_time_is_sampled_from_the_first_judged_span():
    """One span in PROCESSING_SAMPLE_EVERY is timed, the first one included."""
    with Guarded(export=False) as g:
        def chat_spans(n: int) -> None:
            for _ in range(n):
                with g.tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
                    pass

        chat_spans(1)
        assert [count for _, count in metric_points(g.metric_reader, "otelguard.processing.duration")] == [1]
        chat_spans(PROCESSING_SAMPLE_EVERY)
        assert [count for _, count in metric_points(g.metric_reader, "otelguard.processing.duration")] == [2]
        assert counted(g) == {("model", "genai"): 1 + PROCESSING_SAMPLE_EVERY}


def test_span_counts_total_each_kind_and_convention():
    """`GuardMetrics.span` counts per kind and convention, and `span_counts` totals them."""
    from opentelemetry.sdk.metrics import MeterProvider

    from otelguard.reactions.metrics import GuardMetrics

    metrics = GuardMetrics(MeterProvider())
    for _ in range(3):
        metrics.span("tool", "genai")
    metrics.span("model", "genai")
    assert metrics.span_counts() == {("tool", "genai"): 3, ("model", "genai"): 1}
