"""What a loop cost: the tokens since the loop's first repeated step, and their price in USD from
genai-prices' bundled table (the real package, no network), on the judged spans, the evaluation
events, the `otelguard.loop.cost` metric, and in `otelguard analyze`'s report."""

from __future__ import annotations

import json
import socket
from types import SimpleNamespace
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_support import FIXTURES, Guarded, metric_points, output_messages
from service_support import running_service
from loopback_support import Recorder

import otelguard.engine.loop_spend
from otelguard.model.actions import Action
from otelguard.analyzer import analyze
from otelguard.cli import main
from otelguard.engine.loop_spend import AgentSpend, LoopStep, loop_step
from otelguard.engine.pricing import price_usd, wait_until_loaded
from otelguard.model.records import ModelCall, ModelUsage, Verdict

THINKING = {"guards": [{"id": "thinking-loop-guard"}]}
PRICED_MODEL = "gpt-4o"


@pytest.fixture(autouse=True)
def price_table() -> None:
    """The table loads in the background (never on an agent's thread); these tests need it in."""
    assert wait_until_loaded(timeout=30)


def test_a_known_model_is_priced_from_the_bundled_table_without_the_network(monkeypatch):
    """The price is genai-prices' own, computed with every connection refused."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pricing tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    expected = float(calc_price(Usage(input_tokens=1200, output_tokens=700), model_ref=PRICED_MODEL).total_price)
    assert expected > 0
    assert price_usd(PRICED_MODEL, 1200, 700) == pytest.approx(expected)


def test_a_provider_prefixed_model_is_priced_as_the_model():
    """LiteLLM and routers name a model `provider/model` (the real runs' `deepseek/deepseek-chat`)."""
    assert price_usd("deepseek/deepseek-chat", 1200, 700) == price_usd("deepseek-chat", 1200, 700) > 0
    assert price_usd("openai/gpt-4o", 1200, 700) == price_usd(PRICED_MODEL, 1200, 700)
    assert price_usd("nowhere/scripted-planner", 1200, 700) is None


def test_an_unknown_model_has_no_price():
    assert price_usd("scripted-planner", 1200, 700) is None
    assert price_usd(None, 1200, 700) is None


def stalled_calls(g: Guarded, model: str, calls: int, *, input_tokens: int = 1200, output_tokens: int = 700) -> None:
    """An agent making `calls` long reasoning-only model calls (each a stalled step)."""
    with g.tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
        for index in range(calls):
            reasoning = " ".join(f"angle {index} thought {i} about the bug" for i in range(120))
            with g.tracer.start_as_current_span(f"chat {model}", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                "gen_ai.output.messages": output_messages(reasoning=reasoning),
                "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens,
            }):
                pass


def loop_events(exporter: InMemoryLogRecordExporter) -> list[dict[str, Any]]:
    return [dict(readable.log_record.attributes) for readable in exporter.get_finished_logs()]


def test_each_stalled_step_carries_the_loop_spend_so_far(logger_provider, log_exporter):
    """Three stalled calls of a priced model: the events carry the running totals since the first
    stalled call, and the cost metric their sum, labelled like the verdicts."""
    step_price = price_usd(PRICED_MODEL, 1200, 700)
    with Guarded(THINKING, logger_provider=logger_provider, evaluation_events="all") as g:
        stalled_calls(g, PRICED_MODEL, 3)
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
        judged = [s for s in g.exporter.get_finished_spans() if s.name.startswith("chat")]
    events = loop_events(log_exporter)
    # The judged spans carry the same running totals as their events.
    assert [{key: value for key, value in span.attributes.items() if key.startswith("otelguard.loop.")}
            for span in judged] == [{key: value for key, value in e.items() if key.startswith("otelguard.loop.")}
                                    for e in events]
    assert [e["gen_ai.evaluation.score.label"] for e in events] == ["none", "none", "steer"]
    assert [(e["otelguard.loop.input_tokens"], e["otelguard.loop.output_tokens"]) for e in events] == [
        (1200, 700), (2400, 1400), (3600, 2100)]
    assert [e["otelguard.loop.cost_usd"] for e in events] == pytest.approx([step_price, 2 * step_price, 3 * step_price])
    ((labels, total),) = cost
    assert labels == {"otelguard.guard": "thinking-loop-guard", "otelguard.rule": "reasoning-only",
                      "gen_ai.agent.name": "planner", "gen_ai.request.model": PRICED_MODEL}
    assert total == pytest.approx(3 * step_price)


def test_a_new_loop_starts_its_own_total(logger_provider, log_exporter):
    """After the guard reacted, the next stalled call starts a new loop: its total restarts."""
    with Guarded(THINKING, logger_provider=logger_provider, evaluation_events="all") as g:
        stalled_calls(g, PRICED_MODEL, 4)
    events = loop_events(log_exporter)
    assert [e["otelguard.loop.output_tokens"] for e in events] == [700, 1400, 2100, 700]


def test_an_unknown_model_reports_tokens_only(logger_provider, log_exporter):
    """A model genai-prices does not know: the events carry the tokens and no price; no cost is counted."""
    with Guarded(THINKING, logger_provider=logger_provider) as g:
        stalled_calls(g, "scripted-planner", 3)
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
    (event,) = loop_events(log_exporter)  # the steer (action none is left out by default)
    assert (event["otelguard.loop.input_tokens"], event["otelguard.loop.output_tokens"]) == (3600, 2100)
    assert "otelguard.loop.cost_usd" not in event
    assert cost == []


# ---------------------------------------------------------------------------------------------
# `otelguard analyze`: each loop's cost, per agent and in total
# ---------------------------------------------------------------------------------------------

RECORDED_LOOP = FIXTURES / "pydantic-ai-v5-reasoning-only-loop.otlp.jsonl"  # a captured pydantic-ai run


def test_analyze_reports_each_loop_and_its_cost_per_agent_and_in_total(tmp_path, capsys):
    """The captured run's two loops of stalled reasoning, its model renamed to a priced one: each
    loop's tokens from its first stalled step, priced; the one the guard steered (steps 1-3) counts,
    per agent and in the summary, the one only flagged (step 4, a stall below the limit) does not."""
    recorded = tmp_path / "loop.otlp.jsonl"
    recorded.write_text(RECORDED_LOOP.read_text().replace('"fake-reasoner-1"', f'"{PRICED_MODEL}"'))
    (agent,) = analyze([recorded]).findings.agents()
    assert [(loop.kind, loop.first_step, loop.last_step) for loop in agent.loops] == [
        ("thinking_loop", 1, 3), ("thinking_loop", 4, 4)]
    for loop in agent.loops:
        expected = price_usd(PRICED_MODEL, loop.spend.input_tokens, loop.spend.output_tokens)
        assert loop.spend.output_tokens > 0 and loop.spend.cost_usd == pytest.approx(expected)
    assert main(["analyze", "--json", str(recorded)]) == 0
    report = json.loads(capsys.readouterr().out)
    summary = report["summary"]["loops"]
    assert summary["count"] == 1 and summary["unpriced"] == 0
    steered = agent.loops[0]
    assert summary["cost_usd"] == pytest.approx(steered.spend.cost_usd, abs=1e-6)
    assert [(loop["first_step"], loop["last_step"]) for loop in report["agents"][0]["loops"]] == [(1, 3)]
    assert main(["analyze", str(recorded)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # (a long line is wrapped)
    assert f"loops: 1 loop of model calls, {summary['input_tokens']:,} tokens in" in text
    assert f"{agent.label}: 1 loop" in text


def test_analyze_says_when_a_loop_has_no_price(capsys):
    """The captured model is in no price table: tokens only, said so."""
    assert main(["analyze", str(RECORDED_LOOP)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # (a long line is wrapped)
    assert "cost unknown (1 not priced: model not in genai-prices' table)" in text


def model_loop_step(spend: AgentSpend, verdict: Verdict, usage: ModelUsage) -> LoopStep:
    """What the engine does with a model call judged part of a loop: its usage counted, the loop stepped."""
    spend.model_ended(usage)
    step = loop_step(spend, verdict, ModelCall(), usage)
    assert step is not None
    return step


def stalled(n: int, action: Action = Action.NONE) -> Verdict:
    return Verdict("thinking-loop-guard", "thinking_loop", "reasoning-only", action, thinking_stalled=n)


def test_steps_before_the_table_was_loaded_are_priced_once_it_is(monkeypatch):
    """A loop whose first step came before the price table was in: the next step prices the whole
    loop, and what is newly counted covers the earlier step too."""
    spend = AgentSpend()
    usage = ModelUsage(PRICED_MODEL, output_tokens=700, input_tokens=1200)
    # Before the table is in, `price_usd` answers None (its documented answer) for every model.
    monkeypatch.setattr(otelguard.engine.pricing, "price_usd", lambda model, input_tokens, output_tokens: None)
    first = model_loop_step(spend, stalled(1, Action.REMIND), usage)
    assert (first.spend.cost_usd, first.new_cost_usd) == (None, 0.0)
    monkeypatch.undo()  # the table is in
    second = model_loop_step(spend, stalled(2), usage)
    whole = price_usd(PRICED_MODEL, 2400, 1400)
    assert second.spend.cost_usd == pytest.approx(whole) == pytest.approx(second.new_cost_usd)
    third = model_loop_step(spend, stalled(3), usage)
    assert third.new_cost_usd == pytest.approx(price_usd(PRICED_MODEL, 1200, 700))


def test_without_a_downstream_the_run_s_verdict_events_carry_the_spend():
    """Beside other processors (no downstream to enrich), the verdict events on the agent-run span
    carry the loop's spend so far."""
    with Guarded(THINKING, export=False, siblings=[SimpleSpanProcessor(exporter := InMemorySpanExporter())]) as g:
        stalled_calls(g, PRICED_MODEL, 3)
    (run,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    spends = [(e.attributes["otelguard.loop.output_tokens"], e.attributes["otelguard.loop.cost_usd"])
              for e in run.events if e.name == "otelguard.verdict"]
    assert [tokens for tokens, _ in spends] == [700, 1400, 2100]
    assert spends[-1][1] == pytest.approx(price_usd(PRICED_MODEL, 3600, 2100))


def test_a_text_loop_is_a_loop_of_its_own_never_a_step_of_the_stalled_reasoning_one():
    """text-loop and the stalled-reasoning rule share the verdict name `thinking_loop`: a text-loop
    verdict starts its own loop, so the reasoning loop's tokens are not added to it, nor its to them."""
    spend = AgentSpend()
    usage = ModelUsage("unknown-model", output_tokens=50, input_tokens=100)
    for n in (1, 2):
        model_loop_step(spend, stalled(n), usage)
    text_loop = Verdict("thinking-loop-guard", "thinking_loop", "text-loop", Action.STEER, "stop restating")
    step = model_loop_step(spend, text_loop, usage)
    assert step.started and (step.spend.input_tokens, step.spend.output_tokens) == (100, 50)
    resumed = model_loop_step(spend, stalled(3), usage)
    assert not resumed.started and (resumed.spend.input_tokens, resumed.spend.output_tokens) == (300, 150)


def test_a_loop_that_changes_model_sums_each_model_s_tokens_and_prices_each_at_its_own_rate():
    """A loop whose agent switched model midway: the totals count every step, and the price is each
    model's own tokens at that model's price (an unpriced model leaves the loop unpriced)."""
    spend = AgentSpend()
    steps = [("gpt-4o", 1000, 100), ("gpt-4o-mini", 2000, 200), ("gpt-4o", 500, 50)]
    for n, (model, input_tokens, output_tokens) in enumerate(steps, start=1):
        step = model_loop_step(spend, stalled(n), ModelUsage(model, output_tokens=output_tokens,
                                                             input_tokens=input_tokens))
    assert (step.spend.input_tokens, step.spend.output_tokens) == (3500, 350)
    assert step.spend.cost_usd == pytest.approx(price_usd("gpt-4o", 1500, 150) + price_usd("gpt-4o-mini", 2000, 200))
    unpriced = model_loop_step(spend, stalled(4), ModelUsage("scripted-planner", output_tokens=10, input_tokens=10))
    assert (unpriced.spend.input_tokens, unpriced.spend.output_tokens, unpriced.spend.cost_usd) == (3510, 360, None)
    assert unpriced.spend.unpriced == "model not in genai-prices' table"


def test_the_service_forwards_each_stalled_step_with_the_live_processor_s_spend():
    """The same stalled calls sent to `otelguard serve --forward`: the forwarded model spans carry the
    loop's spend so far, as the live processor's exported spans do."""
    def loop_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in attributes.items() if key.startswith("otelguard.loop.")}

    with Guarded(THINKING) as g:
        stalled_calls(g, PRICED_MODEL, 3)
        live = [loop_attributes(dict(s.attributes)) for s in g.exporter.get_finished_spans() if s.name.startswith("chat")]
    with Recorder() as next_hop, running_service(THINKING, forward=next_hop.base) as service:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces")))
        stalled_calls(SimpleNamespace(tracer=provider.get_tracer("agent")), PRICED_MODEL, 3)
        provider.shutdown()
        assert service.flush()
        assert next_hop.wait_for("/v1/traces")
    forwarded = sorted((span for body in next_hop.bodies["/v1/traces"]
                        for resource in ExportTraceServiceRequest.FromString(body).resource_spans
                        for scope in resource.scope_spans for span in scope.spans if span.name.startswith("chat")),
                       key=lambda span: span.start_time_unix_nano)
    assert [loop_attributes({entry.key: getattr(entry.value, entry.value.WhichOneof("value"))
                             for entry in span.attributes}) for span in forwarded] == live
    assert [attributes["otelguard.loop.output_tokens"] for attributes in live] == [700, 1400, 2100]
