"""Shared measuring helpers: interleaved rounds, medians, ratios against a baseline run alongside.

The machine is shared and noisy, so no figure here is an absolute time held against a bar. Every
case is timed in the same round as its baseline, the order alternates from round to round, and the
reported figure is the median over rounds of the per-round ratio.
"""

from __future__ import annotations

import argparse
import gc
import statistics
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
