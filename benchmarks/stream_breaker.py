"""Mid-stream breaker: per-chunk cost against a minimal pass-through wrapper, and per-character scaling.

Baseline: a minimal pass-through generator (`for item in stream: yield item`) consumed by a loop.
Target case, consumed by the same loop over the same deltas of non-repeating prose (nothing trips):

- watch_stream: `otelguard.watch_stream(list_of_deltas)`, the breaker as an agent runs it (default
  settings, no processor installed). Target: per-chunk cost <= 3x the pass-through wrapper, on
  4-character and on 1-character deltas.

Also printed, without a target:
- push: a pass-through generator that calls `StreamBreaker.push` on every delta (the breaker alone,
  as the analyzer feeds it recorded chunks);
- watch_stream over structured text (pretty-printed JSON, generated CSS rows), where the cycle rule
  finds candidate periods and evaluates more often than on prose.

Scaling: per-character cost of `StreamBreaker.push` at 10k, 100k and 1M characters (it must not grow
with the length the stream has run; push, not watch_stream, so no per-stream set-up cost is spread
over the characters); target: each longer stream's per-character cost against the shortest's <= 1.5
(the median of per-round ratios, pooled: a cost growing with length). Each case is timed over
as many characters as the longest (a shorter stream is run again, with a fresh breaker): a short
batch timed once is timed cold, paying cache misses that do not depend on the stream's length.

Each figure pools the rounds of several fresh processes (`--processes`, 11; see `_bench.in_processes`);
each judged ratio is printed with its 90 % interval.

Run: .venv/bin/python benchmarks/stream_breaker.py [--rounds N] [--processes N] [--quick]
"""

from __future__ import annotations

import json
import sys

from _bench import Times, interleaved, overall, per_item, report_pooled, run_pooled, timed
from _text import deltas, prose

import otelguard
from otelguard.detectors.stream import StreamBreaker

CHUNK_TARGET = 3.0
SCALING_TARGET = 1.5


def passthrough(stream):
    for item in stream:
        yield item


def pushing(stream, breaker: StreamBreaker):
    push = breaker.push
    for item in stream:
        if push(item) is not None:
            raise RuntimeError("the benchmark text tripped the breaker")
        yield item


def consume(iterator) -> None:
    for _ in iterator:
        pass


def run_passthrough(items: list[str]):
    return lambda: consume(passthrough(items))


def run_push(items: list[str]):
    return lambda: consume(pushing(items, StreamBreaker()))


def run_push_repeated(items: list[str], times: int):
    run = run_push(items)

    def batch() -> None:
        for _ in range(times):
            run()

    return batch


def run_watch(items: list[str]):
    return lambda: consume(otelguard.watch_stream(items))


def json_text(chars: int) -> str:
    rows = [{"id": i, "name": f"item-{i}", "enabled": i % 2 == 0, "tags": ["a", "b"], "score": i * 37 % 101}
            for i in range(chars // 60)]
    return json.dumps(rows, indent=2)[:chars]


def css_text(chars: int) -> str:
    rows = (f".row-{i} {{ display: flex; align-items: center; gap: {i % 17}px; }}\n" for i in range(chars // 50))
    return "".join(rows)[:chars]


def stream_sizes(quick: bool) -> tuple[int, tuple[int, ...]]:
    """Characters of the per-chunk streams; stream lengths of the scaling check."""
    return (50_000, (10_000, 100_000, 300_000)) if quick else (100_000, (10_000, 100_000, 1_000_000))


def measure(rounds: int, quick: bool) -> Times:
    """One process's rounds: seconds per case per round, every group's cases prefixed by its name."""
    chars, lengths = stream_sizes(quick)
    times: Times = {}
    for size in (4, 1):
        items = deltas(prose(chars, seed=1), size)
        group = interleaved({
            "passthrough": timed(run_passthrough(items)),
            "watch_stream": timed(run_watch(items)),
            "push": timed(run_push(items)),
        }, rounds=rounds)
        times.update({f"prose {size}/{case}": values for case, values in group.items()})
    for label, text in (("JSON", json_text(chars)), ("CSS", css_text(chars))):
        for size in (4, 1):
            items = deltas(text, size)
            group = interleaved({
                "passthrough": timed(run_passthrough(items)),
                "watch_stream": timed(run_watch(items)),
            }, rounds=rounds_of(rounds)["other"])
            times.update({f"{label} {size}/{case}": values for case, values in group.items()})
    # Per-character cost independent of how long the stream has run.
    long_text = prose(lengths[-1], seed=2)
    streams = {n: deltas(long_text[:n], 4) for n in lengths}
    repeats = {n: lengths[-1] // n for n in lengths}
    times.update(interleaved({f"push/{n}": timed(run_push_repeated(streams[n], repeats[n])) for n in lengths},
                             rounds=rounds_of(rounds)["lengths"], warmup=1))
    return times


def rounds_of(rounds: int) -> dict[str, int]:
    """Rounds a process runs: the judged prose cases `rounds`, the JSON and CSS ones and the stream
    lengths fewer (each round of the lengths pushes the longest stream's characters three times)."""
    return {"prose": rounds, "other": max(3, rounds // 2), "lengths": max(3, rounds // 3)}


def main() -> int:
    # In a worker process, run_pooled writes its times and exits.
    args, per_process, times = run_pooled(__file__, __doc__.splitlines()[0], measure, rounds=15,
                                          quick_rounds=7, processes=11, quick_processes=5)
    chars, lengths = stream_sizes(args.quick)
    text = prose(chars, seed=1)  # the text measure() cut into deltas, to count them

    def ratio(label: str, group: str, case: str, target: float | None) -> str | None:
        return report_pooled(label, per_process, f"{group}/{case}", f"{group}/passthrough", target)

    verdicts = []
    rounds = rounds_of(args.rounds)
    print(f"stream_breaker: {args.processes} processes x {rounds['prose']} interleaved rounds over {chars:,} "
          f"characters (JSON and CSS {rounds['other']}, the stream lengths {rounds['lengths']}), pooled; median of "
          "per-round ratios against the pass-through wrapper")
    for size in (4, 1):
        count, group = len(deltas(text, size)), f"prose {size}"
        print(f"  prose, {size}-char deltas, ns/chunk: pass-through {per_item(times, f'{group}/passthrough', count, 1e-9):.0f}, "
              f"watch_stream {per_item(times, f'{group}/watch_stream', count, 1e-9):.0f}, "
              f"push per delta {per_item(times, f'{group}/push', count, 1e-9):.0f}")
        verdicts.append(ratio(f"watch_stream per chunk, prose, {size}-char deltas", group, "watch_stream", CHUNK_TARGET))
        ratio(f"  (no target) StreamBreaker.push per delta, {size}-char", group, "push", None)
    for label in ("JSON", "CSS"):
        for size in (4, 1):
            ratio(f"  (no target) watch_stream, {label}, {size}-char deltas", f"{label} {size}", "watch_stream", None)

    # Every length is timed over as many characters (a shorter stream run again), so the per-round
    # ratio of two lengths' times is the ratio of their per-character costs.
    print("  per-character cost of push (4-char deltas), ns/char: " + ", ".join(
        f"{n:,} chars {per_item(times, f'push/{n}', lengths[-1], 1e-9):.1f}" for n in lengths))
    for n in lengths[1:]:
        verdicts.append(report_pooled(f"per-char cost, {n:,} / {lengths[0]:,} chars", per_process, f"push/{n}",
                                      f"push/{lengths[0]}", SCALING_TARGET))
    return overall("stream_breaker", verdicts)


if __name__ == "__main__":
    sys.exit(main())
