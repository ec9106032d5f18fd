"""Shared measuring helpers: interleaved rounds, medians, ratios against a baseline run alongside.

The machine is shared and noisy, so no figure here is an absolute time held against a bar. Every
case is timed in the same round as its baseline, the order alternates from round to round, and the
reported figure is the median over rounds of the per-round ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable, Mapping

Timed = Callable[[], float]  # runs one batch, returns its elapsed seconds


def timed(batch: Callable[[], object]) -> Timed:
    """Wrap a batch function so it returns its elapsed perf_counter seconds."""

    def run() -> float:
        started = time.perf_counter()
        batch()
        return time.perf_counter() - started

    return run


def interleaved(cases: Mapping[str, Timed], rounds: int, warmup: int = 2) -> dict[str, list[float]]:
    """Run every case once per round, alternating the order; elapsed seconds per case per round.

    A full collection before each batch keeps one case's garbage from being collected on the
    next case's clock; the collector stays enabled inside the batch (its cost is real).
    """
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(warmup + rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            gc.collect()
            elapsed = cases[name]()
            if index >= warmup:
                times[name].append(elapsed)
    return times


def ratios(times: dict[str, list[float]], case: str, baseline: str) -> list[float]:
    return [c / b for c, b in zip(times[case], times[baseline])]


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float]) -> str:
    """Interquartile range of the per-round values, for judging the noise."""
    if len(values) < 4:
        return f"[{min(values):.3f}..{max(values):.3f}]"
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"IQR [{q1:.3f}..{q3:.3f}]"


def verdict(value: float, target: float) -> str:
    return "PASS" if value <= target else "FAIL"


def report_ratio(label: str, values: list[float], target: float | None, *, judged: bool = True,
                 note: str = "") -> bool:
    """Print `label: median ratio (IQR) target -> PASS/FAIL`; True when it passes (or has no target).
    A case that is not `judged` (a worst case shown beside the bar) says where it falls and returns True."""
    med = median(values)
    line = f"{label:<58} {med:7.3f}x  {spread(values)}" + (f"  {note}" if note else "")
    if target is None:
        print(line)
        return True
    if not judged:
        print(f"{line}  target <= {target:g}x  {'within' if med <= target else 'over'} (not judged)")
        return True
    ok = med <= target
    print(f"{line}  target <= {target:g}x  {verdict(med, target)}")
    return ok


def argument_parser(description: str, rounds: int) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and smaller batches")
    return parser


def arguments(description: str, rounds: int) -> argparse.Namespace:
    return argument_parser(description, rounds).parse_args()


# --- pooling processes ------------------------------------------------------------------------------
# A process's layout (hash seeds, where objects land in memory) biases all of its rounds alike: two
# processes measuring the same ratio differ by a few per cent here, more than the rounds within one
# do. So a script measures in several fresh processes, one after another, and pools their rounds.
Times = dict[str, list[float]]


def pooled_parser(description: str, rounds: int, processes: int) -> argparse.ArgumentParser:
    """`argument_parser` plus `--processes` and the workers' own `--worker`."""
    parser = argument_parser(description, rounds)
    parser.add_argument("--processes", type=int, default=processes, help="worker processes, run one after another")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def print_worker_times(times: Times) -> None:
    """A worker's answer: its times, as the last line of its output."""
    print(json.dumps(times))


def in_processes(script: str, processes: int, arguments: list[str]) -> list[Times]:
    """Run `script --worker *arguments` in `processes` fresh processes one after another, each with
    its own hash seed; the times each printed."""
    results = []
    for index in range(processes):
        worker = subprocess.run([sys.executable, script, "--worker", *arguments], capture_output=True, text=True,
                                env={**os.environ, "PYTHONHASHSEED": str(index)}, check=False)
        if worker.returncode != 0:
            raise SystemExit(f"{os.path.basename(script)}: worker {index} failed:\n{worker.stderr}")
        results.append(json.loads(worker.stdout.strip().splitlines()[-1]))
    return results


def run_pooled(script: str, description: str, measure: Callable[[int, bool], Times], *, rounds: int,
               quick_rounds: int, processes: int, quick_processes: int) -> tuple[argparse.Namespace, list[Times], Times]:
    """A pooled script's `main`: parse its arguments; run as a worker, print `measure(rounds, quick)`'s
    times and exit; else run the workers and return the arguments (`rounds` and `processes` as run),
    each process's times and their pool."""
    args = pooled_parser(description, rounds, processes).parse_args()
    if args.quick and args.rounds == rounds:
        args.rounds = quick_rounds
    if args.worker:
        print_worker_times(measure(args.rounds, args.quick))
        raise SystemExit(0)
    if args.quick and args.processes == processes:
        args.processes = quick_processes
    per_process = in_processes(script, args.processes, ["--rounds", str(args.rounds), *(["--quick"] if args.quick else [])])
    return args, per_process, pool(per_process)


def pool(per_process: list[Times]) -> Times:
    """Every process's rounds, case by case (rounds stay paired: each process lists its cases alike)."""
    return {case: [value for times in per_process for value in times[case]] for case in per_process[0]}


def process_medians(per_process: list[Times], case: str, baseline: str) -> str:
    """The range of the processes' own median ratios, for judging the bias between processes."""
    each = [median(ratios(times, case, baseline)) for times in per_process]
    return f"processes {min(each):.3f}-{max(each):.3f}"
