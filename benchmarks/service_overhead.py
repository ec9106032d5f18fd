"""`otelguard serve` CPU per judged model or tool span, against the in-process SDK pipeline's.

Bar (issue 21): the service's CPU per judged model/tool span (receiving over OTLP/HTTP, decoding,
judging, forwarding) at most 2x what an in-process SDK pipeline spends on the same span (creating it,
the guard, exporting it over OTLP/HTTP).

- in-process: TracerProvider + GuardSpanProcessor(downstream=[BatchSpanProcessor(OTLPSpanExporter)])
  exporting to a sink in another process (span_overhead's realistic guarded pipeline); cost: this
  process's CPU for creating the spans and force_flush.
- service: `GuardService` in a subprocess with `--forward` to the same kind of sink; this process
  posts it the export requests the SDK's OTLP/HTTP exporter makes of the same workload (encoded
  before the clock, the agent's work), then asks it to judge and forward everything; cost: the
  service process's own CPU (getrusage, all its threads) over that.

Workload: pydantic-ai-shaped agent runs (benchmarks/_spans.py: 4 chat and 3 tool spans a run, ~5 KB
per chat span, distinct arguments so no verdict fires); both costs divided by the model and tool
spans. Each round uses fresh runs for both (the service skips spans it has seen). The figure is the
median over rounds of the per-round ratio (`_bench`).

Run: .venv/bin/python benchmarks/service_overhead.py [--rounds N] [--quick]
"""

from __future__ import annotations

import http.client
import subprocess
import sys
from collections.abc import Sequence
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from _bench import arguments, interleaved, median, ratios, spread
from _spans import SPANS_PER_RUN, pydantic_ai_run, replay_pydantic_ai_runs
from span_overhead import cpu_timed, otlp_tracer, start_sink

BAR = 2.0
JUDGED_PER_RUN = SPANS_PER_RUN - 1  # all but the agent span

SERVICE = r"""
import resource, sys
from otelguard.service import GuardService, ServiceOptions
service = GuardService(None, ServiceOptions(http=("127.0.0.1", 0), grpc=None, metrics=None, forward=sys.argv[1]))
service.start()
print(service.http_url, flush=True)
for line in sys.stdin:
    service.flush(60)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(usage.ru_utime + usage.ru_stime, flush=True)
service.stop()
"""


class Recorder(SpanExporter):
    """Keeps each export request as the SDK's OTLP/HTTP exporter would send it."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.bodies.append(encode_spans(spans).SerializeToString())
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def export_requests(runs: list) -> list[bytes]:
    recorder = Recorder()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(recorder, max_queue_size=max(2048, len(runs) * SPANS_PER_RUN + 1)))
    replay_pydantic_ai_runs(provider.get_tracer("bench"), runs)
    provider.shutdown()
    return recorder.bodies


class Service:
    def __init__(self, forward: str):
        self.process = subprocess.Popen([sys.executable, "-c", SERVICE, forward], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        url = urlsplit(self.process.stdout.readline().strip())
        self.connection = http.client.HTTPConnection(url.hostname, url.port)

    def cpu_s(self) -> float:
        """The service's CPU seconds so far, once everything sent is judged and forwarded."""
        self.process.stdin.write("cpu\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def post(self, body: bytes) -> None:
        self.connection.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        answer = self.connection.getresponse()
        answer.read()
        assert answer.status == 200, answer.status

    def close(self) -> None:
        self.connection.close()
        self.process.stdin.close()
        self.process.wait(30)


def main() -> int:
    args = arguments(__doc__.splitlines()[0], rounds=15)
    n_runs = 40 if args.quick else 150
    rounds = min(args.rounds, 5) if args.quick else args.rounds
    sink, endpoint = start_sink()
    service = Service(endpoint.removesuffix("/v1/traces"))
    try:
        total = rounds + 2  # warmup rounds included
        runs = [[pydantic_ai_run(seed=round_ * n_runs + i) for i in range(n_runs)] for round_ in range(total)]
        requests = [export_requests(batch) for batch in runs]
        provider, tracer = otlp_tracer(endpoint, queue_size=max(2048, n_runs * SPANS_PER_RUN + 1), guarded=True)
        in_process_round = iter(range(total))
        service_round = iter(range(total))

        def in_process() -> None:
            replay_pydantic_ai_runs(tracer, runs[next(in_process_round)])

        def served() -> float:
            bodies = requests[next(service_round)]
            before = service.cpu_s()
            for body in bodies:
                service.post(body)
            return service.cpu_s() - before

        times = interleaved({"in-process": cpu_timed(in_process, provider), "service": served}, rounds)
        provider.shutdown()
    finally:
        service.close()
        sink.kill()
    judged = n_runs * JUDGED_PER_RUN
    per_span = {name: median(values) / judged * 1e6 for name, values in times.items()}
    ratio = ratios(times, "service", "in-process")
    verdict = "PASS" if median(ratio) <= BAR else "FAIL"
    print(f"judged model/tool spans a round: {judged} ({n_runs} pydantic-ai-shaped runs), {rounds} rounds")
    print(f"in-process SDK pipeline (create + guard + OTLP/HTTP export): {per_span['in-process']:.1f} us CPU a span")
    print(f"otelguard serve (receive + decode + judge + forward):       {per_span['service']:.1f} us CPU a span")
    print(f"service / in-process: {median(ratio):.2f}x {spread(ratio, 2)}  (bar <= {BAR}x: {verdict})")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
