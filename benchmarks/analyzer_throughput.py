"""Analyzer throughput and memory on a generated OTLP JSON Lines file of 100+ MB.

    .venv/bin/python benchmarks/analyzer_throughput.py [--size-mb 110] [--small-mb 30] [--repeat 5] [--profile]

Generates, in a temporary directory, trace files shaped like the Collector's file exporter output:
lines of ~128 spans from several concurrent traces, in end order, so most traces span two or three
lines. Each trace is one agent run with pydantic-ai's attributes (as in the fixtures: request
parameters, tool definitions, system instructions, the conversation so far as input messages; about
5 KB per model span, like the fixtures' pydantic-ai spans) with model calls (reasoning, text, tool
calls), tool calls, and filler spans (HTTP client, database) that are none of the guard's business;
one trace in ten loops on the same tool call, so the guards have work to do.

Measured in the same run:
- baseline: bare `json.loads` of every line of the big file;
- analyzer: `otelguard.analyzer.analyze` of the same file (read, replay, judge, report data);
- ratio = analyzer throughput / baseline throughput, per round (the two interleaved, the order
  alternating, as in the other benchmarks), and the median over rounds is held against the target
  (>= 0.2; the exit status is 1 below it); the best-of ratio is printed too;
- where the time goes: the reader alone, then the analyzer with the engine stubbed out and with the
  findings and coverage stubbed out, so that the differences give each stage's rough share;
- peak memory of a fresh subprocess that only analyses, for the small and the big file (RSS, and
  the analysis' own peak allocation by tracemalloc): it should not grow with the file.
Each stage's time is the best of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import interleaved, median, ratios, spread, timed
from _pydantic_ai import MODEL_SCHEMA, REQUEST_PARAMETERS, TOOL_DEFINITIONS, TOOL_SCHEMA, words

SPANS_PER_LINE = 128
CONCURRENT_TRACES = 8
T0 = 1_790_000_000_000_000_000
THROUGHPUT_TARGET = 0.2


def _attrs(mapping: dict) -> list[dict]:
    out = []
    for key, value in mapping.items():
        if isinstance(value, bool):
            out.append({"key": key, "value": {"boolValue": value}})
        elif isinstance(value, int):
            out.append({"key": key, "value": {"intValue": str(value)}})
        else:
            out.append({"key": key, "value": {"stringValue": value}})
    return out


class _Ids:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def trace(self) -> str:
        return f"{self.rng.getrandbits(128):032x}"

    def span(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"


def _span(trace: str, span_id: str, parent: str | None, name: str, start: int, end: int, attrs: dict,
          kind: int = 1, scope: str = "pydantic-ai") -> tuple[str, dict]:
    span = {"traceId": trace, "spanId": span_id, "name": name, "kind": kind,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
            "attributes": _attrs(attrs), "status": {}, "flags": 256}
    if parent:
        span["parentSpanId"] = parent
    return scope, span


def _trace(rng: random.Random, ids: _Ids, start: int, looping: bool) -> list[tuple[str, dict]]:
    """One agent run shaped like pydantic-ai's spans (the fixtures' attributes, a longer conversation)."""
    trace = ids.trace()
    root = ids.span()
    conversation, call_id = ids.span(), ids.span()
    common = {"gen_ai.agent.name": "weather_agent", "gen_ai.agent.call.id": call_id,
              "gen_ai.conversation.id": conversation}
    instructions = json.dumps([{"type": "text", "content": words(rng, rng.randint(400, 1500))}])
    history: list[dict] = [{"role": "user", "parts": [{"type": "text", "content": words(rng, rng.randint(50, 300))}]}]
    spans: list[tuple[str, dict]] = []
    now = start
    steps = rng.randint(3, 8)
    for step in range(steps):
        model_id = ids.span()
        model_start, model_end = now, now + rng.randint(200, 2000) * 1_000_000
        last = step == steps - 1
        tool = "get_weather" if looping else rng.choice(["get_weather", "search", "lookup_user", "fetch_page"])
        arguments = {"q": "Paris"} if looping else {"q": words(rng, 20), "n": rng.randint(1, 9)}
        parts = [{"type": "thinking", "content": words(rng, rng.randint(200, 1500))}]
        if last:
            parts.append({"type": "text", "content": words(rng, rng.randint(100, 600))})
        else:
            parts.append({"type": "tool_call", "id": ids.span(), "name": tool, "arguments": arguments})
        output = [{"role": "assistant", "parts": parts, "finish_reason": "stop" if last else "tool_call"}]
        spans.append(_span(trace, model_id, root, "chat fake-model", model_start, model_end, {
            "gen_ai.operation.name": "chat", **common, "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
            "gen_ai.request.model": "fake-model", "model_request_parameters": REQUEST_PARAMETERS,
            "gen_ai.tool.definitions": json.dumps(TOOL_DEFINITIONS), "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(output), "gen_ai.system_instructions": instructions,
            "logfire.json_schema": MODEL_SCHEMA, "gen_ai.usage.input_tokens": rng.randint(100, 4000),
            "gen_ai.usage.output_tokens": rng.randint(10, 900), "gen_ai.response.model": "fake-model-2026",
            "gen_ai.response.finish_reasons": json.dumps(["stop" if last else "tool_call"]),
        }, kind=3))
        spans.append(_span(trace, ids.span(), model_id, "POST", model_start + 1_000_000, model_end - 1_000_000, {
            "http.request.method": "POST", "url.full": "https://api.example.com/v1/chat/completions",
            "http.response.status_code": 200, "server.address": "api.example.com", "server.port": 443,
            "network.protocol.version": "1.1", "http.request.body.size": rng.randint(1000, 90000),
        }, kind=3, scope="opentelemetry.instrumentation.httpx"))
        history.append(output[0])
        now = model_end + 1_000_000
        if last:
            break
        tool_id = ids.span()
        tool_end = now + rng.randint(5, 300) * 1_000_000
        result = words(rng, rng.randint(50, 400))
        spans.append(_span(trace, tool_id, root, f"execute_tool {tool}", now, tool_end, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": ids.span(),
            "gen_ai.tool.call.arguments": json.dumps(arguments, separators=(",", ":")), **common,
            "logfire.msg": f"running tool: {tool}", "logfire.json_schema": TOOL_SCHEMA,
            "gen_ai.tool.call.result": result,
        }))
        spans.append(_span(trace, ids.span(), tool_id, "SELECT weather", now + 1_000_000, tool_end - 1_000_000, {
            "db.system.name": "postgresql", "db.query.text": "SELECT * FROM weather WHERE city = $1",
            "db.namespace": "app", "server.address": "db", "db.response.returned_rows": rng.randint(0, 20),
        }, kind=3, scope="opentelemetry.instrumentation.psycopg"))
        history.append({"role": "user", "parts": [{"type": "tool_call_response", "id": "x", "name": tool,
                                                   "result": result}]})
        now = tool_end + 1_000_000
    spans.append(_span(trace, root, None, "invoke_agent weather_agent", start, now + 1_000_000, {
        "gen_ai.operation.name": "invoke_agent", **common, "logfire.msg": "weather_agent run",
        "pydantic_ai.all_messages": json.dumps(history), "gen_ai.system_instructions": instructions,
    }))
    return spans


def _line(batch: list[tuple[str, dict]]) -> str:
    scopes: dict[str, list[dict]] = {}
    for scope, span in batch:
        scopes.setdefault(scope, []).append(span)
    document = {"resourceSpans": [{
        "resource": {"attributes": _attrs({"service.name": "bench-agent", "telemetry.sdk.language": "python"})},
        "scopeSpans": [{"scope": {"name": scope}, "spans": spans} for scope, spans in scopes.items()],
    }]}
    return json.dumps(document, separators=(",", ":")) + "\n"


def generate(path: Path, size_mb: float, seed: int = 7) -> tuple[int, int, int]:
    """Write about `size_mb` MB of OTLP JSON Lines; returns (bytes, lines, spans)."""
    rng = random.Random(seed)
    ids = _Ids(rng)
    target = int(size_mb * 1024 * 1024)
    written = lines = spans = traces = 0
    clock = T0
    with path.open("w", encoding="utf-8") as handle:
        while written < target:
            group: list[tuple[str, dict]] = []
            for _ in range(CONCURRENT_TRACES):
                group.extend(_trace(rng, ids, clock + rng.randint(0, 10**9), looping=traces % 10 == 0))
                traces += 1
            clock += 30 * 10**9
            group.sort(key=lambda item: int(item[1]["endTimeUnixNano"]))  # exporters write in end order
            for i in range(0, len(group), SPANS_PER_LINE):
                text = _line(group[i : i + SPANS_PER_LINE])
                handle.write(text)
                written += len(text.encode("utf-8"))
                lines += 1
            spans += len(group)
    return written, lines, spans


def bare_json(path: Path) -> float:
    started = time.perf_counter()
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            json.loads(line)
    return time.perf_counter() - started


def reader_only(path: Path) -> float:
    """otlp_json.iter_spans consumed, as the analyzer reads: lines, parsing (json), every span read."""
    from otelguard.otlp.json_spans import iter_spans

    started = time.perf_counter()
    for _ in iter_spans(path):
        pass
    return time.perf_counter() - started


class _StubEngine:
    """Judges nothing: every agent, model or tool span (classified, as the engine does) ends as a step
    of one agent, without a record or verdicts; the driver's interface (`start`, `end`,
    `report_stream_trip`) and nothing else."""

    def __init__(self, config=None, **kwargs):
        from otelguard import conventions
        from otelguard.guards.config import GuardConfig
        from otelguard.engine import AgentRef, Judged

        self.config = GuardConfig()
        self.agent = AgentRef("stub", None)
        self.judged = Judged
        self.classify = conventions.classify

    def start(self, source):
        return None

    def end(self, source, *, timed_out_ms=None):
        classification = self.classify(source.name, source.attributes)
        return None if classification is None else self.judged(classification, self.agent)

    def report_stream_trip(self, trace_id, span_id, verdict):
        return None


def analyzer_without(path: Path, *, engine: bool, bookkeeping: bool) -> float:
    """The analyzer with parts stubbed out, to tell their shares apart: `engine` False judges nothing
    (a stub engine); `bookkeeping` False drops the judged spans instead of putting them in the
    findings (steps, verdict rows) and the coverage counts. Reading, trace buffering, event order and
    the decoding of the agent/model/tool spans always run."""
    from otelguard.analyzer import run as run_module

    class _NoFindings(run_module.Findings):
        def add(self, span, judged):
            return None

    class _NoCoverage(run_module.Coverage):
        def judged_span(self, *args, **kwargs):
            return None

    real = run_module.GuardEngine, run_module.Findings, run_module.Coverage
    if not engine:
        run_module.GuardEngine = _StubEngine  # type: ignore[misc]
    if not bookkeeping:
        run_module.Findings, run_module.Coverage = _NoFindings, _NoCoverage  # type: ignore[misc]
    try:
        started = time.perf_counter()
        run_module.analyze([path])
        return time.perf_counter() - started
    finally:
        run_module.GuardEngine, run_module.Findings, run_module.Coverage = real  # type: ignore[misc]


def full_analyzer(path: Path) -> tuple[float, int, int]:
    from otelguard.analyzer import analyze

    started = time.perf_counter()
    analysis = analyze([path])
    elapsed = time.perf_counter() - started
    return elapsed, analysis.coverage.steps, analysis.findings_count()


_MEMORY_PROBE = """
import resource, sys, tracemalloc
from otelguard.analyzer import analyze
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
analysis = analyze([sys.argv[1]])
peak_traced = tracemalloc.get_traced_memory()[1]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before, after, peak_traced, analysis.coverage.buffer.peak_buffered, analysis.coverage.spans_read)
"""


def peak_memory(path: Path) -> tuple[float, float, float, int, int]:
    """(RSS MiB after imports, peak RSS MiB, peak MiB allocated by the analysis (tracemalloc), peak
    buffered spans, spans) of a fresh process that only analyses `path`."""
    done = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path)], capture_output=True, text=True,
                          check=True)
    before, after, traced, buffered, spans = (int(x) for x in done.stdout.split())
    return before / 1024, after / 1024, traced / 2**20, buffered, spans  # ru_maxrss is KiB on Linux


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=110.0, help="size of the big file (default 110)")
    parser.add_argument("--small-mb", type=float, default=30.0, help="size of the small file for memory (default 30)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds of bare json and analyzer, and runs per stage (best kept) (default 5)")
    parser.add_argument("--profile", action="store_true", help="also profile the analyzer with pyinstrument")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="otelguard-bench-") as tmp:
        big, small = Path(tmp) / "big.otlp.jsonl", Path(tmp) / "small.otlp.jsonl"
        started = time.perf_counter()
        size, lines, spans = generate(big, args.size_mb)
        small_size, _, small_spans = generate(small, args.small_mb, seed=11)
        print(f"generated {size / 2**20:.1f} MiB ({lines:,} lines, {spans:,} spans) and "
              f"{small_size / 2**20:.1f} MiB ({small_spans:,} spans) in {time.perf_counter() - started:.1f} s")
        # One run of each, untimed, warms up (the page cache, imports) and counts what the analyzer found.
        bare_json(big)
        steps, found = full_analyzer(big)[1:]
        # Round by round, as the other benchmarks: a round's ratio compares runs made moments apart.
        times = interleaved({"bare json": timed(lambda: bare_json(big)), "analyzer": timed(lambda: full_analyzer(big))},
                            rounds=args.repeat, warmup=0)
        throughput = ratios(times, "bare json", "analyzer")  # bare json's time over the analyzer's
        baseline, analyzer = min(times["bare json"]), min(times["analyzer"])
        mib = size / 2**20
        print(f"bare json.loads: {baseline:6.2f} s  {mib / baseline:7.1f} MiB/s  (best of {args.repeat})")
        print(f"analyzer:        {analyzer:6.2f} s  {mib / analyzer:7.1f} MiB/s  ({steps:,} steps judged, "
              f"{found:,} findings)")
        ratio = median(throughput)
        verdict = "PASS" if ratio >= THROUGHPUT_TARGET else "FAIL"
        print(f"throughput ratio analyzer/bare json: {ratio:.3f}x median of {len(throughput)} rounds {spread(throughput)}, "
              f"best-of {baseline / analyzer:.3f}x  target >= {THROUGHPUT_TARGET}x  {verdict}")
        reader = min(reader_only(big) for _ in range(args.repeat))
        replay = min(analyzer_without(big, engine=False, bookkeeping=False) for _ in range(args.repeat))
        judged = min(analyzer_without(big, engine=True, bookkeeping=False) for _ in range(args.repeat))
        print("where the time goes (share of the full analyzer; each stage is the best of its runs, so "
              "shares are rough):")
        for label, seconds in (("otlp_json: lines read, parsed, spans read", reader),
                               ("analyzer: buffering, order, spans decoded", replay - reader),
                               ("engine, conventions, guards", judged - replay),
                               ("analyzer: findings and coverage counts", analyzer - judged)):
            print(f"  {label:<42} {seconds:6.3f} s  {seconds / analyzer:4.0%}")
        for label, path in (("small", small), ("big", big)):
            before, peak, traced, buffered, read = peak_memory(path)
            print(f"peak memory, {label:5} file ({path.stat().st_size / 2**20:6.1f} MiB, {read:,} spans): "
                  f"{peak:6.1f} MiB RSS ({before:.1f} MiB after imports); analysis peak {traced:5.1f} MiB "
                  f"allocated; peak {buffered:,} spans buffered")
        print("  (buffered spans stay flat; what grows is bounded or is the report itself: the LRU of replayed span "
              "ids (capped at 65,536) and every verdict with its step)")
        if args.profile:
            try:
                from pyinstrument import Profiler
            except ImportError:
                print("pyinstrument is not installed: pip install pyinstrument")
            else:
                from otelguard.analyzer import analyze

                profiler = Profiler()
                profiler.start()
                analyze([small])
                profiler.stop()
                print(profiler.output_text(unicode=True, color=False, show_all=False))
    print(f"analyzer_throughput: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
