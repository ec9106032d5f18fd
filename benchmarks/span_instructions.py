"""The guard's instructions a span, counted by callgrind: repeatable whatever the machine's load.

Timed figures on this shared 2-core machine move by a third with its load; instruction counts do not
(`valgrind --tool=callgrind` counts the same total for the same binary and input). This script is the
tool for working on the guard's CPU bar (span_overhead.py judges it, in µs). One process per case, under
callgrind, builds an unguarded and a guarded no-op pipeline, warms both up, then runs the same batch
on each, alternately, twice; callgrind dumps its counts at each phase's end (`callgrind_control
--dump`), and the guard's instructions a span are the guarded phases' minus the unguarded phases'.

Cases:
- `plain`: spans of the application, no agent run open;
- `nested`: the same spans inside an open agent run;
- `minimal`: agent runs of minimal spans (benchmarks/_spans.py: an agent span, 4 chat spans, 3 tool
  spans), a span on average;
- `pydantic`: the same runs with the attributes pydantic-ai writes.

Run: .venv/bin/python benchmarks/span_instructions.py [--guards ID,ID] [case ...]   (about half a minute a case)
(`--guards` runs only those guards, e.g. `--guards ""` for none: one guard's share is the difference.)
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CASES = ("plain", "nested", "minimal", "pydantic")
WARMUP, BATCH = 20, 60  # agent runs (x 8 spans), or 8 x as many plain spans
PHASES = ("unguarded", "guarded", "unguarded", "guarded")
GUARDS_VARIABLE = "OTELGUARD_BENCH_GUARDS"  # set by --guards: the guard ids to run (default config: all four)


def run_case(case: str) -> None:
    """The measured process: both pipelines, warmed up, then PHASES, each ended by a callgrind dump."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    import otelguard
    from _spans import SPANS_PER_RUN, minimal_agent_runs, pydantic_ai_run, replay_pydantic_ai_runs

    class Discard(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

        def shutdown(self):
            pass

    def pipeline(guarded: bool):
        provider = TracerProvider()
        exporting = SimpleSpanProcessor(Discard())
        guards = os.environ.get(GUARDS_VARIABLE)
        config = None if guards is None else {"guards": [{"id": guard} for guard in guards.split(",") if guard]}
        provider.add_span_processor(
            otelguard.GuardSpanProcessor(config, downstream=[exporting]) if guarded else exporting)
        return provider, provider.get_tracer("span_instructions")

    pipelines = {guarded: pipeline(guarded) for guarded in (False, True)}
    runs = [pydantic_ai_run(seed) for seed in range(WARMUP + 2 * BATCH)] if case == "pydantic" else []
    served = {False: 0, True: 0}

    def batch(guarded: bool, n: int) -> None:
        tracer = pipelines[guarded][1]
        if case == "minimal":
            minimal_agent_runs(tracer, n)
        elif case == "pydantic":
            first = served[guarded]
            replay_pydantic_ai_runs(tracer, runs[first:first + n])
        else:
            for _ in range(n * SPANS_PER_RUN):
                with tracer.start_as_current_span("GET /weather", attributes={"http.request.method": "GET"}):
                    pass
        served[guarded] += n

    agents = {}
    if case == "nested":  # an agent run open on each pipeline for the whole process
        for guarded, (_, tracer) in pipelines.items():
            agents[guarded] = tracer.start_span("invoke_agent weather", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})

    def inside_agent(guarded: bool, n: int) -> None:
        if guarded in agents:
            with trace.use_span(agents[guarded], end_on_exit=False):
                batch(guarded, n)
        else:
            batch(guarded, n)

    for guarded in (False, True):
        inside_agent(guarded, WARMUP)
    for phase in PHASES:
        gc.collect()
        _dump(f"before {phase}")
        inside_agent(phase == "guarded", BATCH)
        _dump(phase)


def _dump(label: str) -> None:
    subprocess.run(["callgrind_control", f"--dump={label}", str(os.getpid())], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def guard_instructions(case: str) -> tuple[float, float]:
    """(the guard's instructions a span, the unguarded span's), from one process under callgrind."""
    from _spans import SPANS_PER_RUN

    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out", sys.executable, __file__,
             "--run", case],
            check=True, env={**os.environ, "PYTHONHASHSEED": "0"},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        phases: dict[str, list[int]] = {"guarded": [], "unguarded": []}
        for dump in Path(out).glob("cg.out.*"):
            text = dump.read_text()
            trigger = re.search(r"^desc: Trigger: dump (\w+)$", text, re.MULTILINE)
            if trigger is not None and trigger.group(1) in phases:
                phases[trigger.group(1)].append(int(re.search(r"^summary:\s*(\d+)", text, re.MULTILINE).group(1)))
    assert all(len(counts) == 2 for counts in phases.values()), f"callgrind dumps missing: {phases}"
    spans = 2 * BATCH * SPANS_PER_RUN
    return (sum(phases["guarded"]) - sum(phases["unguarded"])) / spans, sum(phases["unguarded"]) / spans


def main(argv: list[str]) -> int:
    if argv[:1] == ["--run"]:
        run_case(argv[1])
        return 0
    if argv[:1] == ["--guards"]:
        os.environ[GUARDS_VARIABLE] = argv[1]
        argv = argv[2:]
    cases = argv or list(CASES)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(cases, pool.map(guard_instructions, cases)))
    print("span_instructions: the guard's instructions a span (callgrind; guarded minus unguarded phases)")
    for case, (guard, unguarded) in results.items():
        print(f"  {case:9} guard {guard / 1000:7.1f}k a span (the unguarded span {unguarded / 1000:.1f}k)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main(sys.argv[1:]))
