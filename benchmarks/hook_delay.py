"""Control-hook isolation: a hook that raises, or blocks for seconds, delays the span thread by at most ~50 ms.

Every tool span here carries a `remind` verdict (repeat-tool-reminder, thresholds [2..]), so every
span end delivers a reminder to the control hook. Three hooks: a Mailbox (fast), a hook that raises,
and a hook that blocks for 5 s. The figure is the time the span thread spent in each span (start to
end, empty body) minus the same span's time with the fast Mailbox, median and max over the spans;
the design bound is the processor's `hook_wait_s` (0.05 s). The blocked hook's calls finish in the
background; the processor is flushed and shut down after the blocked hooks are released.

Run: .venv/bin/python benchmarks/hook_delay.py [--quick]
"""

from __future__ import annotations

import logging
import statistics
import sys
import threading
import time
from typing import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import otelguard
from _bench import arguments

BOUND_S = 0.05
SLACK_S = 0.005  # scheduling slack on a shared machine, on top of the designed wait
CONFIG = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": list(range(2, 200))}}]}


class NoOpExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class RaisingHook:
    def inject(self, message):
        raise RuntimeError("broken hook")

    steer = inject

    def cancel(self, cause, verdict):
        raise RuntimeError("broken hook")


class BlockingHook:
    def __init__(self) -> None:
        self.release = threading.Event()

    def inject(self, message):
        self.release.wait(5)

    steer = inject

    def cancel(self, cause, verdict):
        self.release.wait(5)


def span_times(control, spans: int) -> list[float]:
    processor = otelguard.GuardSpanProcessor(CONFIG, downstream=[SimpleSpanProcessor(NoOpExporter())],
                                             control=control)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench")
    times: list[float] = []
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for _ in range(spans + 1):
            started = time.perf_counter()
            with tracer.start_as_current_span("execute_tool probe", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
                    "gen_ai.tool.call.arguments": '{"q": 1}'}):
                pass
            times.append(time.perf_counter() - started)
    if isinstance(control, BlockingHook):
        control.release.set()
    processor.force_flush(30_000)
    provider.shutdown()
    return times[1:]  # the first call has no verdict


def main() -> int:
    args = arguments(__doc__.splitlines()[0], rounds=1)
    logging.getLogger("otelguard").setLevel(logging.CRITICAL)  # the raising hook is logged once: expected here
    spans = 10 if args.quick else 40
    fast = span_times(otelguard.Mailbox(), spans)
    base = statistics.median(fast)
    print(f"hook_delay: {spans} verdict-carrying tool spans per hook; span thread time beyond a fast "
          f"Mailbox hook (median {base * 1e6:.0f} us per span)")
    ok = True
    for label, control in (("raising hook", RaisingHook()), ("hook blocked for 5 s", BlockingHook())):
        extra = [t - base for t in span_times(control, spans)]
        worst = max(extra)
        passed = worst <= BOUND_S + SLACK_S
        ok &= passed
        print(f"  {label:<22} extra delay median {statistics.median(extra) * 1e3:7.2f} ms, max {worst * 1e3:7.2f} ms"
              f"  bound {BOUND_S * 1e3:.0f} ms (+{SLACK_S * 1e3:.0f} ms slack)  {'PASS' if passed else 'FAIL'}")
    print("hook_delay:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
