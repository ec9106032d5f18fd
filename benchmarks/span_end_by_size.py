"""The guard's time in `span.end()` on the application's thread, by the size of what the span carries.

A model or tool span ends on the thread that ran the call (in pydantic-ai, the event loop): whatever the
guard does there, the agent waits for. Each case ends spans of one size on a guarded provider and on an
unguarded one (no downstream, so the figure is the guard's own work and the SDK's, not an exporter's),
inside an agent run, alternating; the figure is the median of the guarded minus the unguarded time.
Target: <= 10 ms for any single span.

Cases, each at 30 KiB and 250 KiB (just under the guard's read limits, `conventions.READ_LIMITS`: the
most it reads), 2 MiB and 25 MB (8 MB with --quick):
- reasoning: GenAI `gen_ai.output.messages` with a reasoning part of that size and a short answer;
- reasoning as a Python repr: OpenLLMetry's legacy `gen_ai.completion.0.reasoning`, as the OpenAI
  Agents SDK writes it (`[Content(text='...', type='reasoning_text')]`);
- text: a visible answer of that size;
- tool call: arguments and a result of that size.

Run: .venv/bin/python benchmarks/span_end_by_size.py [--quick]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from opentelemetry.sdk.trace import TracerProvider

import otelguard
from _text import prose

TARGET_MS = 10.0
# Just under each of the guard's read limits (otelguard.conventions.READ_LIMITS: the largest values it
# reads), and past them.
SIZES = {"30 KiB": 30 * 1024, "250 KiB": 250 * 1024, "2 MiB": 2 * 1024 * 1024, "25 MB": 25_000_000}
QUICK_SIZES = {**SIZES, "25 MB": 8_000_000}


def messages(reasoning: str, text: str) -> str:
    return json.dumps([{"role": "assistant", "finish_reason": "stop", "parts": [
        {"type": "thinking", "content": reasoning}, {"type": "text", "content": text}]}])


def shapes(size: int) -> dict[str, tuple[str, dict, dict]]:
    """case -> (span name, attributes at start, attributes set before the end)."""
    body = prose(size, seed=size)
    model = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"}
    return {
        "reasoning": ("chat gpt-4o", model, {"gen_ai.output.messages": messages(body, "Sunny.")}),
        "reasoning as a Python repr": ("chat gpt-4o", {**model, "traceloop.span.kind": "llm"}, {
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Sunny.",
            "gen_ai.completion.0.reasoning": f"[Content(text={body!r}, type='reasoning_text')]"}),
        "text": ("chat gpt-4o", model, {"gen_ai.output.messages": messages("Short.", body)}),
        "tool call": ("execute_tool search", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
            "gen_ai.tool.call.arguments": json.dumps({"query": body[: size // 2]})},
            {"gen_ai.tool.call.result": body[: size // 2]}),
    }


def end_time(tracer, name: str, start: dict, end: dict) -> float:
    """Seconds `span.end()` took for one such span inside an agent run."""
    with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}):
        span = tracer.start_span(name, attributes=start)
        # A fresh copy of each value (outside the clock), as every real span brings its own.
        span.set_attributes({key: (value + " ")[:-1] if isinstance(value, str) else value for key, value in end.items()})
        began = time.perf_counter()
        span.end()
        return time.perf_counter() - began


def main() -> int:
    quick = "--quick" in sys.argv
    sizes = QUICK_SIZES if quick else SIZES
    rounds = 3 if quick else 7
    tracers = {}
    for guarded in (False, True):
        provider = TracerProvider()
        if guarded:
            provider.add_span_processor(otelguard.GuardSpanProcessor())
        tracers[guarded] = provider.get_tracer("span_end_by_size")
    print(f"span_end_by_size: the guard's time in span.end() (guarded - unguarded, median of {rounds}); "
          f"target <= {TARGET_MS:g} ms")
    worst = 0.0
    for label, size in sizes.items():
        for case, (name, start, end) in shapes(size).items():
            differences = []
            for _ in range(rounds):
                differences.append(end_time(tracers[True], name, start, end) - end_time(tracers[False], name, start, end))
            ms = statistics.median(differences) * 1e3
            worst = max(worst, ms)
            print(f"  {label:>8} {case:28} {ms:8.2f} ms")
    verdict = "PASS" if worst <= TARGET_MS else "FAIL"
    print(f"span_end_by_size: worst {worst:.2f} ms: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
