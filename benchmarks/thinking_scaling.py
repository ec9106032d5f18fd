"""Thinking-loop judging: `ThinkingLoopDetector.observe` must be linear in the reasoning length.

Each measured batch is one detector observing two calls of N characters of different prose: the first
sets the previous call's 4-grams, the second is judged against them (containment + repeat ratio),
so both paths of `observe` are on the clock. Sizes 10k, 100k and 1M characters run interleaved;
the figure is time per character at each size (median over rounds), and the target is that the
per-character time at 1M characters is at most 1.5x the one at 10k, on prose. Uniform random letters
(every 4-gram window distinct: the gram set grows with the text) are printed as the worst case.

Run: .venv/bin/python benchmarks/thinking_scaling.py [--rounds N] [--quick]
"""

from __future__ import annotations

import sys

from otelguard.detectors.thinking import ThinkingLoopDetector
from _bench import arguments, interleaved, median, timed
from _text import prose, random_letters

TARGET = 1.5


def observe_pair(first: str, second: str):
    def batch() -> None:
        detector = ThinkingLoopDetector()
        detector.observe(False, first)
        judgement = detector.observe(False, second)
        assert judgement is not None and judgement.containment is not None

    return batch


def main() -> int:
    args = arguments(__doc__.splitlines()[0], rounds=7)
    rounds = 3 if args.quick and args.rounds == 7 else args.rounds
    sizes = (10_000, 100_000, 1_000_000) if not args.quick else (10_000, 100_000, 300_000)
    # Prose has a bounded vocabulary, so its distinct 4-grams saturate; random letters do not (every
    # window is new), which is the worst case for the gram sets' size.
    families = {"prose": prose, "random letters": random_letters}
    # Small sizes are repeated inside a batch so every batch is long enough to time reliably.
    repeat = {n: max(1, sizes[-1] // n // 4) for n in sizes}

    def batch(pair: tuple[str, str], n: int):
        one = observe_pair(*pair)

        def run() -> None:
            for _ in range(repeat[n]):
                one()

        return run

    print(f"thinking_scaling: {rounds} interleaved rounds; ThinkingLoopDetector.observe, two calls per batch")
    ok = True
    for family, make in families.items():
        texts = {n: (make(n, seed=10 + i), make(n, seed=20 + i)) for i, n in enumerate(sizes)}
        times = interleaved({str(n): timed(batch(texts[n], n)) for n in sizes}, rounds=rounds, warmup=1)
        per_char = {n: median(times[str(n)]) / (repeat[n] * 2 * n) * 1e9 for n in sizes}
        for n in sizes:
            print(f"  {family:<15} {n:>9,} chars: {per_char[n]:7.1f} ns/char  "
                  f"({median(times[str(n)]) / repeat[n] * 1e3:8.2f} ms per pair of calls)")
        # Linear means the per-character time does not grow with the length (falling is fine: fixed
        # per-call costs spread over more characters).
        ratio = per_char[sizes[-1]] / per_char[sizes[0]]
        passed = ratio <= TARGET
        label = f"per-char time, {sizes[-1]:,} / {sizes[0]:,} chars ({family})"
        if family == "prose":
            ok &= passed
            print(f"{label:<58} {ratio:7.3f}x  target <= {TARGET:g}x  {'PASS' if passed else 'FAIL'}")
        else:
            print(f"{label:<58} {ratio:7.3f}x  (worst case, informational: every window distinct)")
    print("thinking_scaling:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
