"""The verdict attributes the guard writes in-process are plain values, as an exporter will write them:
`otelguard.action` reads "remind", not `<Action.REMIND: 'remind'>`, on an exported span, on the run's
verdict event, and in a metric's attributes."""

from __future__ import annotations

from otel_support import Guarded, tool_span


def test_the_action_is_a_plain_string_on_spans_events_and_metrics() -> None:
    with Guarded() as guarded:
        with guarded.tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
            for _ in range(3):
                tool_span(guarded.tracer)
        actions = [span.attributes["otelguard.action"] for span in guarded.exporter.get_finished_spans()
                   if "otelguard.action" in span.attributes]
        points = [point.attributes["otelguard.action"]
                  for metric in guarded.metric_reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
                  if metric.name == "otelguard.verdicts" for point in metric.data.data_points]
    assert [(type(action), repr(action)) for action in actions] == [(str, "'none'"), (str, "'remind'")]
    assert {(type(action), action) for action in points} == {(str, "none"), (str, "remind")}
    with Guarded(export=False) as siblings:  # no exporter downstream: verdicts become events on the run
        with siblings.tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}) as run:
            for _ in range(3):
                tool_span(siblings.tracer)
            events = [event.attributes["otelguard.action"] for event in run.events]
    assert [repr(action) for action in events] == ["'none'", "'remind'"]
