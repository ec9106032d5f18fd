"""Guard state: bytes per tracked agent, and the bound holding under 100 000 agents / 1 000 000 spans.

1. Bytes per tracked agent (tracemalloc, net of everything the guard freed): N agent runs through a
   real TracerProvider + GuardSpanProcessor (downstream: SimpleSpanProcessor + no-op exporter), each
   a few chat and execute_tool spans, for two kinds of agent:
   - tool-using agent: short reasoning (below `min_reasoning_chars`), 3 tool calls, 4 model calls;
   - long-reasoning agent: the same, but its model calls carry 3 000 characters of reasoning (above
     the default `min_reasoning_chars` 2048), so the thinking detector keeps that call's 4-gram set;
   - agent with large tool arguments: the tool-using agent whose tool calls carry 20 KB of content
     (a file-writing tool), so the repeat chain keeps the last call's canonical arguments.
   Each run is its own conversation (a durable identity), so every agent's state is kept after its
   run. Target: <= 4 KB per tracked agent. The same growth, split by the source file that allocated
   it (the engine's maps, each detector's state), says where the bytes are.
2. Bound: 100 000 agents (1 000 000 spans) through a processor with max_agents 10 000 and an SDK
   MeterProvider: tracked agents never exceed the bound, every eviction is counted in
   `otelguard.state.evictions` (read from an InMemoryMetricReader), and RSS stops growing once the
   bound is reached (growth over the second half of the run <= 10% of the RSS at half-way).

Run: .venv/bin/python benchmarks/state_memory.py [--quick]
"""

from __future__ import annotations

import gc
import json
import sys
import time
import tracemalloc
from typing import Any, Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import otelguard
from otelguard.engine import pricing
from _bench import arguments
from _text import prose

BYTES_TARGET = 4096
RSS_GROWTH_TARGET = 0.10


class NoOpExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def build(max_agents: int, meter_provider=None):
    provider = TracerProvider()
    processor = otelguard.GuardSpanProcessor(
        downstream=[SimpleSpanProcessor(NoOpExporter())], max_agents=max_agents, meter_provider=meter_provider
    )
    provider.add_span_processor(processor)
    return provider, provider.get_tracer("bench"), processor


def output(text: str, reasoning: str, tool: tuple[str, dict] | None) -> str:
    parts: list[dict[str, Any]] = [{"type": "thinking", "content": reasoning}, {"type": "text", "content": text}]
    if tool is not None:
        parts.append({"type": "tool_call", "id": "c1", "name": tool[0], "arguments": tool[1]})
    return json.dumps([{"role": "assistant", "parts": parts}])


def agent_run(tracer, index: int, reasoning: list[str], http_spans: int = 0, payload: str = "") -> int:
    """One agent run: 3 x (chat -> execute_tool) then a final chat; returns the spans made.

    `payload` goes into every tool call's arguments (a file-writing tool's content)."""
    spans = 1
    # Each run its own conversation: a durable identity, so the agent's state outlives the run (the
    # state of a run without one goes when the run ends, and would never be tracked here).
    with tracer.start_as_current_span("invoke_agent helper", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper",
        "gen_ai.conversation.id": f"conversation-{index}",
    }):
        for step in range(3):
            args = {"city": f"city-{index}-{step}"}
            if payload:
                args["content"] = payload
            with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                "gen_ai.output.messages": output("Checking.", reasoning[step % len(reasoning)],
                                                 ("get_weather", args)),
                "gen_ai.usage.output_tokens": 40,
            }):
                pass
            with tracer.start_as_current_span("execute_tool get_weather", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.arguments": json.dumps(args),
            }) as span:
                for _ in range(http_spans if step == 0 else 0):
                    with tracer.start_as_current_span("GET", attributes={"http.request.method": "GET"}):
                        spans += 1
                span.set_attribute("gen_ai.tool.call.result", "sunny")
            spans += 2
        with tracer.start_as_current_span("chat m", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
            "gen_ai.output.messages": output("It is sunny.", reasoning[-1], None),
        }):
            spans += 1
    return spans


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """sys.getsizeof over everything reachable through slots, dicts, lists, tuples and sets."""
    seen = set() if seen is None else seen
    if id(obj) in seen or obj is None or isinstance(obj, (bool, type)):
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        size += sum(deep_size(item, seen) for item in obj)
    elif not isinstance(obj, (str, bytes, int, float)):
        for name in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, name):
                size += deep_size(getattr(obj, name), seen)
        if hasattr(obj, "__dict__"):
            size += deep_size(vars(obj), seen)
    return size


def per_agent_bytes(label: str, reasoning: list[str], agents: int, payload: str = "") -> float:
    provider, tracer, processor = build(max_agents=agents * 2)
    agent_run(tracer, -1, reasoning, payload=payload)  # warm-up: imports, caches, first-time structures
    # The price table of loop costs is the process's, loaded once in the background on the first loop
    # verdict (the warm-up's): wait for it, so that its load is not counted as the agents' state.
    pricing.wait_until_loaded(timeout=60)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for index in range(agents):
        agent_run(tracer, index, reasoning, payload=payload)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = after.compare_to(before, "filename")
    grown = sum(stat.size_diff for stat in growth)
    tracked = processor.engine.tracked_agents
    # Where the bytes are: the growth by the file that allocated it (the innermost frame), largest first.
    largest = sorted((stat for stat in growth if stat.size_diff > 0), key=lambda stat: -stat.size_diff)[:3]
    breakdown = ", ".join(f"{_short(stat.traceback[0].filename)} {stat.size_diff / tracked:,.0f} B"
                          for stat in largest)
    provider.shutdown()
    per_agent = grown / tracked
    ok = per_agent <= BYTES_TARGET
    print(f"  {label:<28} {agents} agents, {tracked} tracked: {per_agent:9,.0f} B/agent (tracemalloc; "
          f"largest: {breakdown})  target <= {BYTES_TARGET} B  {'PASS' if ok else 'FAIL'}")
    return per_agent


def _short(filename: str) -> str:
    """A source file's path from its package on (`otelguard/engine/bounded.py`), else its name."""
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[parts.index("otelguard"):]) if "otelguard" in parts else parts[-1]


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def eviction_counts(reader: InMemoryMetricReader) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    data = reader.get_metrics_data()
    for rm in (data.resource_metrics if data else []):
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "otelguard.state.evictions":
                    for point in metric.data.data_points:
                        key = (point.attributes.get("otelguard.state"), point.attributes.get("reason"))
                        counts[key] = counts.get(key, 0) + point.value
    return counts


def bound(agents: int, max_agents: int) -> bool:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    provider, tracer, processor = build(max_agents=max_agents, meter_provider=meter_provider)
    reasoning = [prose(200, seed=s) for s in range(4)]
    spans = 0
    peak_tracked = 0
    checkpoints = {agents // 4, agents // 2, 3 * agents // 4, agents}
    rss: dict[int, int] = {}
    started = time.perf_counter()
    for index in range(1, agents + 1):
        spans += agent_run(tracer, index, reasoning, http_spans=2)
        if index % 1000 == 0 or index in checkpoints:
            peak_tracked = max(peak_tracked, processor.engine.tracked_agents)
        if index in checkpoints:
            gc.collect()
            rss[index] = rss_bytes()
    elapsed = time.perf_counter() - started
    evictions = eviction_counts(reader)
    agent_evictions = sum(v for (what, _), v in evictions.items() if what == "agent")
    expected = agents - processor.engine.tracked_agents
    half, full = rss[agents // 2], rss[agents]
    growth = (full - half) / half
    print(f"  {agents:,} agents / {spans:,} spans, max_agents {max_agents:,} ({elapsed:.0f} s): "
          f"tracked at end {processor.engine.tracked_agents:,}, peak {peak_tracked:,}")
    counted = {f"{what}/{reason}": n for (what, reason), n in sorted(evictions.items()) if n}
    print(f"  evictions counted: {counted} (agent evictions expected {expected:,})")
    print("  RSS: " + ", ".join(f"{i:,} agents {r / 2**20:.1f} MiB" for i, r in sorted(rss.items()))
          + f"; growth over the second half {growth * 100:+.1f}%")
    checks = {
        "tracked agents <= max_agents": peak_tracked <= max_agents,
        "every agent eviction counted": agent_evictions == expected,
        f"RSS growth over the second half <= {RSS_GROWTH_TARGET:.0%}": growth <= RSS_GROWTH_TARGET,
    }
    for name, passed in checks.items():
        print(f"  {name:<56} {'PASS' if passed else 'FAIL'}")
    provider.shutdown()
    meter_provider.shutdown()
    return all(checks.values())


def main() -> int:
    args = arguments(__doc__.splitlines()[0], rounds=1)
    n = 300 if args.quick else 2000
    # The bound first: RSS is only meaningful before the per-agent runs below leave freed memory to
    # the allocator.
    agents, max_agents = (20_000, 2_000) if args.quick else (100_000, 10_000)
    print(f"state_memory: {agents:,} agents through max_agents {max_agents:,}")
    ok = bound(agents, max_agents)
    print("state_memory: bytes per tracked agent")
    short = [prose(120, seed=s) for s in range(4)]
    long = [prose(3000, seed=100 + s) for s in range(4)]
    tool_bytes = per_agent_bytes("tool-using agent", short, n)
    long_bytes = per_agent_bytes("long-reasoning agent", long, max(100, n // 4))
    args_bytes = per_agent_bytes("agent with 20 KB tool args", short, max(100, n // 4), payload=prose(20_000, 7))
    ok &= tool_bytes <= BYTES_TARGET and long_bytes <= BYTES_TARGET and args_bytes <= BYTES_TARGET
    worst = max(long_bytes, args_bytes)
    print(f"  worst case at the bound: max_agents {max_agents:,} x {worst:,.0f} B = "
          f"{max_agents * worst / 2**20:,.0f} MiB of agent state")
    print("state_memory:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
