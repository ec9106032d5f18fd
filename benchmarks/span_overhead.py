"""Span overhead: a guarded pipeline against the same pipeline without the guard.

Two pipelines, each case timed against its own baseline:

1. Realistic pipeline (what users run; the bars are judged here):
   baseline: TracerProvider + BatchSpanProcessor(OTLPSpanExporter over HTTP/protobuf) sending to a sink
             in a subprocess (a tiny http.server answering 200 with an empty body on /v1/traces);
   guarded:  TracerProvider + GuardSpanProcessor(downstream=[that BatchSpanProcessor]).
   Cost: this process's CPU time (time.process_time, which counts the exporter's background thread and
   not the sink) for the batch plus force_flush, so all export work is inside the measurement. The
   queue is sized to hold a whole batch: a full queue drops spans, which would make exporting cheaper.
2. No-op pipeline (the cheapest possible, so the guard's share is the largest), reported as the worst
   case and not judged: with nothing exported, the bar would measure the SDK's own span cost, and a
   processor that wraps the downstream and does nothing already takes a third of the plain-span bar:
   baseline: TracerProvider + SimpleSpanProcessor(no-op exporter);
   guarded:  TracerProvider + GuardSpanProcessor(downstream=[SimpleSpanProcessor(no-op exporter)]).
   Cost: wall time (perf_counter) of the batch.

Cases (each timed in the same round as its baseline, order alternating; median of per-round ratios;
many short rounds rather than a few long ones: the noise is slow drift, so the median of 105 rounds
of 1 000 spans is steadier than that of 21 rounds of 5 000):

- plain spans, no agent run open (HTTP client spans, a web app's own spans): target <= 1.06x;
- plain spans inside an open `invoke_agent` span (HTTP requests a tool makes during an agent run;
  the agent span is opened once, outside the clock, on the case's own provider): <= 1.06x (the
  guard notes each such span's agent, so that the spans below it find their run);
- agent runs: `invoke_agent` around chat model spans (real `gen_ai.output.messages` JSON with text,
  short reasoning and tool_call parts) and `execute_tool` spans, distinct arguments so no verdict
  fires: target <= 2.5x the bare exporting pipeline (the guard's own CPU a span is printed beside
  it). Two span shapes (benchmarks/_spans.py), the same steps and model output:
  - pydantic-ai-shaped: the attributes pydantic-ai writes (request parameters, tool definitions,
    system instructions, the conversation so far as input messages, response model and id: about
    5 KB per chat span, like the fixtures'). The spans users' pipelines carry;
  - minimal: only the attributes the guard reads. The worst case (the smallest spans give the guard
    its largest share), shown with it, and with the guard's metrics going to an SDK MeterProvider too.
- agent runs replayed from the captured fixtures (benchmarks/_fixture_runs.py): the spans of real
  instrumentations (OpenLLMetry on the OpenAI Agents SDK, OpenInference on LangGraph, pydantic-ai),
  as they wrote them, on which the guard reaches no verdict: target <= 2.5x, as the agent runs.
- noise: the plain-span baseline against an identical second baseline, in each pipeline: how far
  apart two equal pipelines measure in this run.
  The guard's metrics go to the no-op API meter unless said otherwise.

Exits 0 when every judged case meets its target: its pooled median's 90% bootstrap interval lies
within it (`_bench.pooled_interval`; AT THE BAR when the interval holds the target).

Run: .venv/bin/python benchmarks/span_overhead.py [--rounds N] [--processes N] [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import time
from functools import partial
from typing import Any, Callable, Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.trace import SpanKind

import otelguard
from _bench import (WARMUP_ROUNDS, Times, Timed, interleaved, overall, per_item, report_pooled,
                    run_pooled, timed)
from _fixture_runs import FIXTURES
from _fixture_runs import RUNS as FIXTURE_RUNS
from _fixture_runs import load_run, replay, span_count
from _spans import SPANS_PER_RUN, minimal_agent_runs, pydantic_ai_run, replay_pydantic_ai_runs

PLAIN_TARGET = 1.06  # spans of the application itself (no GenAI marker)
NESTED_TARGET = 1.06  # the same inside an agent run
GENAI_TARGET = 2.5  # agent, model and tool spans against the bare exporting pipeline


class NoOpExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def baseline_tracer():
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(NoOpExporter()))
    return provider, provider.get_tracer("bench")


def guarded_tracer(meter_provider=None):
    provider = TracerProvider()
    processor = otelguard.GuardSpanProcessor(
        downstream=[SimpleSpanProcessor(NoOpExporter())], meter_provider=meter_provider
    )
    provider.add_span_processor(processor)
    return provider, provider.get_tracer("bench")


# --- the realistic pipeline: OTLP/HTTP to a sink in another process ------------------------------
# The sink answers every POST with 200 and an empty body (an empty ExportTraceServiceResponse),
# keeping connections alive as a collector does (a thread each). It prints its port, then serves until killed.
SINK = r"""
import http.server, sys

class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def start_sink() -> tuple[subprocess.Popen, str]:
    sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    port = int(sink.stdout.readline())
    return sink, f"http://127.0.0.1:{port}/v1/traces"


def otlp_tracer(endpoint: str, queue_size: int, guarded: bool):
    batch = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), max_queue_size=queue_size)
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[batch]) if guarded else batch)
    return provider, provider.get_tracer("bench")


def cpu_timed(batch: Callable[[], object], provider: TracerProvider) -> Timed:
    """Process CPU seconds of the batch and of exporting it (force_flush waits for the export thread)."""

    def run() -> float:
        started = time.process_time()
        batch()
        provider.force_flush()
        return time.process_time() - started

    return run


# --- workloads ------------------------------------------------------------------------------------
def http_spans(tracer, n: int) -> None:
    for i in range(n):
        with tracer.start_as_current_span(
            "GET", kind=SpanKind.CLIENT,
            attributes={"http.request.method": "GET", "url.full": f"https://api.example.com/items/{i % 50}",
                        "server.address": "api.example.com", "server.port": 443},
        ) as span:
            span.set_attribute("http.response.status_code", 200)


def http_inside_agent(tracer, n: int):
    """Open an agent span once (outside the clock); return a batch of HTTP spans inside it."""
    agent = tracer.start_span("invoke_agent bench", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"})
    context = trace.set_span_in_context(agent)

    def batch() -> None:
        token = context_api.attach(context)
        try:
            http_spans(tracer, n)
        finally:
            context_api.detach(token)

    return batch, agent


def fixture_verdicts(runs: dict, replays: dict[str, int], batches: int) -> dict[str, list[str]]:
    """Verdicts the guard writes on each fixture run replayed as often as its timed guarded provider
    replays it in a process (`batches` of `replays`; none expected: runs with a conversation id keep
    one agent's state across the replays), off the clock."""
    found = {}
    for label, run in runs.items():
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[SimpleSpanProcessor(exporter)]))
        replay(provider.get_tracer("bench"), run, replays[label] * batches)
        provider.shutdown()
        verdicts = [str(span.attributes["otelguard.verdict"]) for span in exporter.get_finished_spans()
                    if span.attributes and "otelguard.verdict" in span.attributes]
        if verdicts:
            found[label] = verdicts
    return found


def sizes(quick: bool) -> tuple[int, int]:
    """Spans a plain batch makes, and agent runs an agent-run batch makes (x SPANS_PER_RUN spans each)."""
    return (500, 40) if quick else (1_000, 80)


def load_fixture_runs(n_runs: int) -> tuple[dict, dict[str, int]]:
    """The captured runs, each with as many replays as make about as many spans as the synthetic runs."""
    if not FIXTURES.is_dir():
        return {}, {}
    runs = {label: load_run(file_name) for label, file_name in FIXTURE_RUNS.items()}
    return runs, {label: max(1, n_runs * SPANS_PER_RUN // span_count(run)) for label, run in runs.items()}


def measure(rounds: int, quick: bool) -> Times:
    """One process's interleaved rounds: seconds per case per round.

    Each case's baseline and guarded pipelines are providers of their own that run that case alone:
    a pipeline's history showed in its cost (two identical baselines measured a few per cent apart
    when one of them also exported the agent runs), and the guard's state grows with the agents it
    has seen (each pydantic-ai-shaped replay is a new conversation)."""
    n_plain, n_runs = sizes(quick)
    pydantic_runs = [pydantic_ai_run(seed) for seed in range(n_runs)]  # attribute values built off the clock
    fixture_runs, fixture_replays = load_fixture_runs(n_runs)
    unexpected = fixture_verdicts(fixture_runs, fixture_replays, rounds + WARMUP_ROUNDS)
    if unexpected:
        raise SystemExit(f"span_overhead: the guard reached verdicts on fixture runs meant to have none: {unexpected}")
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    sink, endpoint = start_sink()
    queue_size = 2 * max(n_plain, n_runs * SPANS_PER_RUN)
    providers: list[TracerProvider] = []
    open_agents = []

    def noop(guarded: bool, meters: MeterProvider | None = None):
        provider, tracer = guarded_tracer(meters) if guarded else baseline_tracer()
        providers.append(provider)
        return tracer

    def otlp(guarded: bool):
        provider, tracer = otlp_tracer(endpoint, queue_size, guarded)
        providers.append(provider)
        return tracer, provider

    def nested(tracer):  # plain spans inside an agent run opened now, outside the clock
        batch, agent = http_inside_agent(tracer, n_plain)
        open_agents.append(agent)
        return batch

    cases: dict[str, Timed] = {}

    def sides(case: str, make: Callable[[bool], Timed], noise: bool = False) -> None:
        """The case's baseline and guarded pipelines (`make(guarded)`), and with `noise` a second,
        identical baseline: next to each other in every round, so slow drift reaches them alike."""
        for side, guarded in (("base", False), *((("base2", False),) if noise else ()), ("guard", True)):
            cases[f"{case}/{side}"] = make(guarded)

    def on_noop(work: Callable[[Any], object], meters: MeterProvider | None = None) -> Callable[[bool], Timed]:
        """`work(tracer)` timed on a no-op pipeline (the guard's metrics to `meters` if given)."""
        return lambda guarded: timed(partial(work, noop(guarded, meters if guarded else None)))

    def on_otlp(work: Callable[[Any], object]) -> Callable[[bool], Timed]:
        """`work(tracer)` timed on an OTLP pipeline, in process CPU."""
        def make(guarded: bool) -> Timed:
            tracer, provider = otlp(guarded)
            return cpu_timed(partial(work, tracer), provider)
        return make

    def otlp_nested(guarded: bool) -> Timed:
        tracer, provider = otlp(guarded)
        return cpu_timed(nested(tracer), provider)

    sides("plain", on_noop(lambda tracer: http_spans(tracer, n_plain)), noise=True)
    sides("otlp-plain", on_otlp(lambda tracer: http_spans(tracer, n_plain)), noise=True)
    sides("nested", lambda guarded: timed(nested(noop(guarded))))
    sides("otlp-nested", otlp_nested)
    sides("pydantic", on_noop(lambda tracer: replay_pydantic_ai_runs(tracer, pydantic_runs)))
    sides("otlp-pydantic", on_otlp(lambda tracer: replay_pydantic_ai_runs(tracer, pydantic_runs)))
    sides("minimal", on_noop(lambda tracer: minimal_agent_runs(tracer, n_runs)))
    sides("minimal-sdk-metrics", on_noop(lambda tracer: minimal_agent_runs(tracer, n_runs), meter_provider))
    sides("otlp-minimal", on_otlp(lambda tracer: minimal_agent_runs(tracer, n_runs)))
    for label, run in fixture_runs.items():
        sides(f"otlp-fixture {label}", on_otlp(partial(replay, roots=run, times=fixture_replays[label])))
    try:
        times = interleaved(cases, rounds=rounds)
        for agent in open_agents:
            agent.end()
    finally:
        for provider in providers:
            provider.shutdown()
        meter_provider.shutdown()
        sink.kill()
        sink.wait()
    return times


def main() -> int:
    # In a worker process, run_pooled writes its times and exits.
    args, per_process, times = run_pooled(__file__, __doc__.splitlines()[0], measure, rounds=21,
                                          quick_rounds=11, processes=5, quick_processes=5)
    n_plain, n_runs = sizes(args.quick)
    fixture_runs, fixture_replays = load_fixture_runs(n_runs)
    if not fixture_runs:
        print(f"span_overhead: no fixtures at {FIXTURES} (set OTELGUARD_FIXTURES): fixture runs not measured")
    run_spans = n_runs * SPANS_PER_RUN

    def us(case: str, spans: int) -> str:
        return f"{per_item(times, case, spans, 1e-6):.2f} us"

    def guard_us(case: str, spans: int) -> str:
        return f"{per_item(times, f'{case}/guard', spans, 1e-6) - per_item(times, f'{case}/base', spans, 1e-6):.2f} us"

    def report(label: str, case: str, target: float | None, side: str = "guard", judged: bool = True) -> str | None:
        return report_pooled(label, per_process, f"{case}/{side}", f"{case}/base", target, judged=judged)

    print(f"span_overhead: {args.processes} processes x {args.rounds} interleaved rounds, pooled; median of "
          "per-round ratios (guarded / baseline)")
    print(f"  baseline per span (context only): no-op pipeline wall time: plain {us('plain/base', n_plain)}, "
          f"pydantic-ai-shaped {us('pydantic/base', run_spans)}, minimal {us('minimal/base', run_spans)}")
    print(f"                                    OTLP/HTTP pipeline CPU time: plain {us('otlp-plain/base', n_plain)}, "
          f"pydantic-ai-shaped {us('otlp-pydantic/base', run_spans)}, minimal {us('otlp-minimal/base', run_spans)}")
    print(f"  the guard's own cost per span, no-op pipeline (guarded - baseline): plain {guard_us('plain', n_plain)}, "
          f"pydantic-ai-shaped {guard_us('pydantic', run_spans)}, minimal {guard_us('minimal', run_spans)}")
    verdicts = []
    print("OTLP/HTTP pipeline (BatchSpanProcessor, OTLPSpanExporter to a subprocess sink), process CPU time:")
    report("  noise: the baseline against an identical baseline", "otlp-plain", None, side="base2")
    verdicts.append(report("  plain spans, no agent run open", "otlp-plain", PLAIN_TARGET))
    verdicts.append(report("  plain spans inside an agent run", "otlp-nested", NESTED_TARGET))
    print(f"  agent runs (the guard's own CPU a span: pydantic-ai-shaped +{guard_us('otlp-pydantic', run_spans)}, "
          f"minimal +{guard_us('otlp-minimal', run_spans)}):")
    verdicts.append(report("    pydantic-ai-shaped spans", "otlp-pydantic", GENAI_TARGET))
    verdicts.append(report("    minimal spans", "otlp-minimal", GENAI_TARGET))
    print("  agent runs replayed from the captured fixtures (baseline a span, guard's own CPU a span):")
    for label, run in fixture_runs.items():
        spans = fixture_replays[label] * span_count(run)
        case = f"otlp-fixture {label}"
        verdicts.append(report(f"    {label} ({us(f'{case}/base', spans)}, +{guard_us(case, spans)})",
                               case, GENAI_TARGET))
    print("no-op pipeline (SimpleSpanProcessor, no-op exporter), wall time: the worst case, not judged")
    report("  noise: the baseline against an identical baseline", "plain", None, side="base2")
    report("  plain spans, no agent run open", "plain", PLAIN_TARGET, judged=False)
    report("  plain spans inside an agent run", "nested", NESTED_TARGET, judged=False)
    report("  agent runs, pydantic-ai-shaped spans", "pydantic", None)
    report("  agent runs, minimal spans", "minimal", None)
    report("  agent runs, minimal spans, SDK MeterProvider", "minimal-sdk-metrics", None)
    return overall("span_overhead", verdicts)


if __name__ == "__main__":
    sys.exit(main())
