"""Design support for a bounded thinking state: a bottom-k sketch of the previous call's 4-grams.

The thinking detector once kept the previous judged call's full 4-gram set (about 200 KB for 3 000
characters of reasoning); it now keeps only the k = 128 smallest of that set's 32-bit crc32 hashes
(`otelguard.detectors.thinking.SKETCH_SIZE`; 512 B of hashes) plus its exact size. This script models the
sketch with salted 64-bit hashes, so that many salts stand for many hash functions (crc32 has one). The next call still has its own full gram set, so the
estimate is: intersection ~= |previous| * (share of the previous sketch found among the current
call's hashes), containment = intersection / min(|previous|, |current|). The share is a sample of k
without replacement, so its error is binomial: sd ~= sqrt(c (1 - c) / k).

This script measures, on the shared fixtures' real reasoning (the consecutive judged calls of the
reasoning-only and restated-reasoning loops: containment 0.56-0.68 and 0.99), the exact containment
against the sketch estimate over many hash salts, for several k, and how often the 0.8 decision
flips; and the bytes the sketch costs against the exact set.

Run: .venv/bin/python benchmarks/thinking_sketch.py [--quick]
"""

from __future__ import annotations

import glob
import heapq
import statistics
import sys
from array import array
from pathlib import Path

from otelguard import conventions
from otelguard.otlp import json_spans as otlp_json
from otelguard.detectors.text import containment, grams
from otelguard.model.records import SpanKind, SpanView
from _bench import arguments
from state_memory import deep_size

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
THRESHOLD = 0.8
MIN_REASONING = 2048


def fixture_pairs() -> list[tuple[str, str, str]]:
    """(file, previous reasoning, current reasoning) for consecutive judged calls in the loop fixtures."""
    pairs = []
    for path in sorted(glob.glob(str(FIXTURES / "*reasoning*loop*.otlp.jsonl"))):
        spans = sorted((s for s in otlp_json.iter_spans(path) if isinstance(s, SpanView)), key=lambda s: s.start_ns)
        judged = []
        for span in spans:
            classification = conventions.classify(span.name, span.attributes)
            if classification is not None and classification.kind is SpanKind.MODEL:
                reasoning = conventions.read(span, classification).reasoning
                if len(reasoning) >= MIN_REASONING:
                    judged.append(reasoning)
        name = Path(path).name.removesuffix(".otlp.jsonl")
        pairs.extend((name, a, b) for a, b in zip(judged, judged[1:]))
    return pairs


def sketch(hashes: set[int], k: int) -> array:
    return array("q", sorted(heapq.nsmallest(k, hashes)))


def estimate(previous_sketch: array, previous_size: int, current_hashes: set[int]) -> float:
    if not previous_sketch:
        return 0.0
    found = sum(1 for h in previous_sketch if h in current_hashes)
    intersection = previous_size * found / len(previous_sketch)
    return min(1.0, intersection / min(previous_size, len(current_hashes)))


def main() -> int:
    args = arguments(__doc__.splitlines()[0], rounds=1)
    salts = 200 if args.quick else 1000
    pairs = fixture_pairs()
    print(f"thinking_sketch: {len(pairs)} consecutive judged call pairs from the fixtures, {salts} hash salts each")
    exact = [containment(grams(a), grams(b)) for _, a, b in pairs]
    print("  exact containment: " + ", ".join(f"{c:.3f}" for c in exact))
    for k in (64, 128, 256):
        errors: list[float] = []
        flips = 0
        worst = 0.0
        for (name, a, b), c in zip(pairs, exact):
            ga, gb = grams(a), grams(b)
            for salt in range(salts):
                ha = {hash((salt, g)) for g in ga}
                hb = {hash((salt, g)) for g in gb}
                est = estimate(sketch(ha, k), len(ha), hb)
                errors.append(est - c)
                worst = max(worst, abs(est - c))
                flips += (est >= THRESHOLD) != (c >= THRESHOLD)
        sd = statistics.pstdev(errors)
        print(f"  k={k:<4} ({8 * k:>5} B of hashes): bias {statistics.fmean(errors):+.4f}, sd {sd:.4f}, "
              f"worst |error| {worst:.3f}, 0.8-decision flips {flips} / {len(errors)}")
    _, a, _ = pairs[0]
    full = deep_size(grams(a))
    small = sys.getsizeof(sketch({hash(g) for g in grams(a)}, 128))
    print(f"  memory for {len(a):,} chars of reasoning: exact frozenset {full:,} B; k=128 sketch {small:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
