"""Shared measuring helpers: interleaved rounds, medians, ratios against a baseline run alongside.

The machine is shared and noisy, so almost every figure here is a ratio, not an absolute time. Every
case is timed in the same round as its baseline, the order alternates from round to round, and the
reported figure is the median over rounds of the per-round ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
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


WARMUP_ROUNDS = 2  # rounds run before the timed ones, by default


def interleaved(cases: Mapping[str, Timed], rounds: int, warmup: int = WARMUP_ROUNDS) -> dict[str, list[float]]:
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


def spread(values: list[float], digits: int = 3) -> str:
    """Interquartile range of the per-round values, for judging the noise."""
    if len(values) < 4:
        return f"[{min(values):.{digits}f}..{max(values):.{digits}f}]"
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"IQR [{q1:.{digits}f}..{q3:.{digits}f}]"


def arguments(description: str, rounds: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds (median reported)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and smaller batches")
    return parser.parse_args()


# --- pooling processes ------------------------------------------------------------------------------
# A process's layout (hash seeds, where objects land in memory) biases all of its rounds alike: two
# processes measuring the same ratio differ by a few per cent here, more than the rounds within one
# do. So a script measures in several fresh processes, one after another, and pools their rounds.
Times = dict[str, list[float]]


def in_processes(script: str, processes: int, arguments: list[str]) -> list[Times]:
    """Run `script --worker FILE *arguments` in `processes` fresh processes one after another, each
    with a hash seed of its own, drawn now (printed, to run one again); the times each wrote to FILE.
    A worker's own output (exporter warnings, say) passes through."""
    seeds = [random.randrange(1, 2**32) for _ in range(processes)]
    print(f"{os.path.basename(script)}: {processes} worker processes, hash seeds {' '.join(map(str, seeds))}",
          flush=True)
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for index, seed in enumerate(seeds):
            answer = os.path.join(directory, f"worker-{index}.json")
            worker = subprocess.run([sys.executable, script, "--worker", answer, *arguments],
                                    env={**os.environ, "PYTHONHASHSEED": str(seed)}, check=False)
            if worker.returncode != 0:
                raise SystemExit(f"{os.path.basename(script)}: worker {index} (hash seed {seed}) exited "
                                 f"with {worker.returncode}")
            with open(answer, encoding="utf-8") as file:
                results.append(json.load(file))
    return results


def run_pooled(script: str, description: str, measure: Callable[[int, bool], Times], *, rounds: int,
               quick_rounds: int, processes: int, quick_processes: int) -> tuple[argparse.Namespace, list[Times], Times]:
    """A pooled script's `main`: parse its arguments; run as a worker, write `measure(rounds, quick)`'s
    times to the file it was given and exit; else run the workers and return the arguments (`rounds`
    and `processes` as run), each process's times and their pool."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, help=f"interleaved rounds a process (default {rounds}; "
                                                   f"{quick_rounds} with --quick)")
    parser.add_argument("--processes", type=int, help=f"worker processes, run one after another (default "
                                                      f"{processes}; {quick_processes} with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds and processes, smaller batches")
    parser.add_argument("--worker", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = quick_rounds if args.quick else rounds
    if args.worker:
        times = measure(args.rounds, args.quick)
        with open(args.worker, "w", encoding="utf-8") as file:
            json.dump(times, file)
        raise SystemExit(0)
    if args.processes is None:
        args.processes = quick_processes if args.quick else processes
    if args.processes < MIN_PROCESSES:
        parser.error(f"--processes: at least {MIN_PROCESSES} (fewer cannot show the bias between processes)")
    per_process = in_processes(script, args.processes, ["--rounds", str(args.rounds), *(["--quick"] if args.quick else [])])
    return args, per_process, pool(per_process)


def pool(per_process: list[Times]) -> Times:
    """Every process's rounds, case by case (rounds stay paired: each process lists its cases alike)."""
    return {case: [value for times in per_process for value in times[case]] for case in per_process[0]}


# A pooled ratio (or cost) is judged by a bootstrap interval of its median (`pooled_interval`).
CONFIDENCE = 0.90  # two-sided: each bound is a one-sided 95 % bound
RESAMPLES = 2000
# Fewer processes cannot show the bias between them: the interval would claim a precision it has not.
# Simulated, with that bias 1.5 times the round-to-round noise (150 runs each), a "90 %" interval
# held the true ratio in 25 % of runs over 1 process, 73 % over 2, 71 % over 3, 86 % over 5 and 89 %
# over 11.
MIN_PROCESSES = 5


def verdict(interval: tuple[float, float], target: float) -> str:
    """PASS when all of the interval is within the target, FAIL when all of it is over, AT THE BAR
    when it holds the target (either answer is within this run's noise)."""
    low, high = interval
    return "PASS" if high <= target else "FAIL" if low > target else "AT THE BAR"


def report_pooled(label: str, per_process: list[Times], case: str, baseline: str, target: float | None, *,
                  judged: bool = True) -> str | None:
    """Print the pooled rounds' median ratio of `case` to `baseline`, their IQR, the median's interval,
    the range of the processes' own medians (the bias between processes) and, with a `target`, the
    verdict. The interval is judged as printed (three decimals). Returns the verdict of a judged case,
    else None (a worst case shown beside the bar says where it falls, in lower case)."""
    return report_rounds(label, [ratios(result, case, baseline) for result in per_process], target,
                         judged=judged)


def report_rounds(label: str, each: list[list[float]], target: float | None, *, judged: bool = True,
                  unit: str = "x", digits: int = 3) -> str | None:
    """Print the figures of `report_pooled` for any per-round values, each process's list in `each`
    (their median, IQR and interval, the processes' medians; `digits` decimals, `unit` after the
    value). The interval is judged as printed."""
    pooled = [value for values in each for value in values]
    medians = [median(values) for values in each]
    low, high = (round(bound, digits) for bound in pooled_interval(each))
    line = (f"{label:<58} {median(pooled):7.{digits}f}{unit}  {spread(pooled, digits)}  "
            f"{CONFIDENCE:.0%} CI [{low:.{digits}f}..{high:.{digits}f}]"
            f"  processes {min(medians):.{digits}f}-{max(medians):.{digits}f}")
    if target is None:
        print(line)
        return None
    answer = verdict((low, high), target)
    print(f"{line}  target <= {target:g}{unit}  {answer if judged else answer.lower() + ' (not judged)'}")
    return answer if judged else None


def pooled_interval(per_process: list[list[float]], *, confidence: float = CONFIDENCE,
                    resamples: int = RESAMPLES) -> tuple[float, float]:
    """A bootstrap interval for the median of the pooled per-round values (ratios, or costs).

    Processes are resampled, then each drawn process's rounds (both with replacement): a process's
    layout biases all its rounds alike, by more than the rounds within one differ, so resampling the
    pooled rounds alone would claim a precision the run does not have. Seeded: a run's figures
    print the same interval every time they are reported.
    """
    rng = random.Random(0)
    medians = sorted(
        statistics.median([value for values in rng.choices(per_process, k=len(per_process))
                           for value in rng.choices(values, k=len(values))])
        for _ in range(resamples)
    )
    cut = round((1 - confidence) / 2 * resamples)  # as many resamples cut off below as above
    return medians[cut], medians[resamples - 1 - cut]


def overall(script: str, verdicts: list[str | None]) -> int:
    """Print the script's overall verdict (FAIL if any case failed, else AT THE BAR if any case is
    there, else PASS); its exit status: 0 only when every judged case passed."""
    answers = {answer for answer in verdicts if answer is not None}
    answer = "FAIL" if "FAIL" in answers else "AT THE BAR" if "AT THE BAR" in answers else "PASS"
    print(f"{script}: {answer}")
    return 0 if answer == "PASS" else 1


def per_item(times: Times, case: str, items: int, unit: float) -> float:
    """The median batch time of `case` per item, in `unit`s of a second (1e-6: microseconds)."""
    return median(times[case]) / items / unit
