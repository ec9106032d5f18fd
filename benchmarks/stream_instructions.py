"""The mid-stream breaker's instructions a delta, counted by callgrind: repeatable whatever the machine's load.

stream_breaker.py judges the bar (watch_stream per chunk <= 3x a pass-through generator) in time, which
moves by a third with this shared machine's load; this counts. One process under callgrind prepares
the deltas (the benchmark's prose, 4- and 1-character deltas), warms every case up, then runs each
case once between two `callgrind_control --dump`s; a case's instructions a delta are its phase's
total over its deltas. Cases, per delta size:

- `passthrough`: `for item in stream: yield item`, consumed by a loop (stream_breaker.py's baseline);
- `watch_stream`: `otelguard.watch_stream(deltas)` consumed by the same loop (default settings);
- `push_many`, `push_many:seed-rules`: `StreamBreaker.push_many` alone, fed the batches watch_stream
  makes, with the default rules and with the seed's two rules alone (what the added rules cost).

Instructions are not time (C iterator chains run at a lower rate than the generator's bytecode): the
ratio here is a floor of the timed one, for comparing code, not for judging the bar.

Run: .venv/bin/python benchmarks/stream_instructions.py   (about a minute)
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import tempfile
from itertools import islice
from pathlib import Path

CHARS = 100_000
SIZES = (4, 1)
CASES = ("passthrough", "watch_stream", "push_many", "push_many:seed-rules")


def run_cases() -> None:
    """The measured process: every case warmed up, then each between two dumps."""
    import otelguard
    from _text import deltas, prose
    from otelguard.detectors.stream import StreamBreaker

    def passthrough(stream):
        for item in stream:
            yield item

    def consume(iterator) -> None:
        for _ in iterator:
            pass

    def batches(items: list[str]) -> list[list[str]]:
        breaker, source, out = StreamBreaker(), iter(items), []
        while batch := list(islice(source, breaker.budget)):
            out.append(batch)
            breaker.push_many(batch)
        return out

    def judged(batched: list[list[str]], **rules) -> None:
        push_many = StreamBreaker(**rules).push_many
        for batch in batched:
            push_many(batch)

    text = prose(CHARS, seed=1)
    runs = {}
    for size in SIZES:
        items = deltas(text, size)
        batched = batches(items)
        runs[f"{size}/passthrough"] = lambda items=items: consume(passthrough(items))
        runs[f"{size}/watch_stream"] = lambda items=items: consume(otelguard.watch_stream(items))
        runs[f"{size}/push_many"] = lambda batched=batched: judged(batched)
        runs[f"{size}/push_many:seed-rules"] = lambda batched=batched: judged(
            batched, max_structured_repeat_chars=0, max_long_cycle_chars=0)
    for run in runs.values():
        run()
    gc.collect()
    gc.freeze()  # the deltas are old objects, as in stream_breaker.py's rounds
    for name, run in runs.items():
        _dump(f"before-{name}")
        run()
        _dump(name)


def _dump(label: str) -> None:
    subprocess.run(["callgrind_control", f"--dump={label}", str(os.getpid())], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def instructions() -> dict[str, int]:
    """Each case's instructions in its phase (dumps named for the case)."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out", sys.executable, __file__, "--run"],
            check=True, env={**os.environ, "PYTHONHASHSEED": "0"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        counts = {}
        for dump in Path(out).glob("cg.out.*"):
            text = dump.read_text()
            trigger = re.search(r"^desc: Trigger: dump (\S+)$", text, re.MULTILINE)
            if trigger is not None and not trigger.group(1).startswith("before-"):
                counts[trigger.group(1)] = int(re.search(r"^summary:\s*(\d+)", text, re.MULTILINE).group(1))
    return counts


def main(argv: list[str]) -> int:
    if argv[:1] == ["--run"]:
        run_cases()
        return 0
    counts = instructions()
    print(f"stream_instructions: instructions a delta (callgrind, {CHARS:,} characters of prose a case)")
    for size in SIZES:
        delta_count = -(-CHARS // size)
        per = {case: counts[f"{size}/{case}"] / delta_count for case in CASES}
        print(f"  {size}-char deltas: " + ", ".join(f"{case} {value:.0f}" for case, value in per.items())
              + f"; watch_stream / passthrough {per['watch_stream'] / per['passthrough']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    sys.exit(main(sys.argv[1:]))
