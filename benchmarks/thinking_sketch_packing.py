"""Differential check: the packed bottom-k sketch gives the thinking detector the very verdicts the
plain one did.

The thinking detector keeps the previous judged call's k = 128 smallest 4-gram hashes and their
set's size. They were kept as an array of 4-byte ints (592 B with its header) and an int (28 B);
they are now packed together without loss in about 3 bytes a hash (`otelguard.detectors.thinking.
packed_sketch`, ~440 B). Lossless means the same hashes come back, so every containment estimate
and every verdict must be the same; this script
checks that end to end. It loads the detector as it was before the packing (from git, `--reference`)
beside today's, feeds both the same generated reasoning — sequences of calls, each restating part of
the one before (so the containment spreads over 0..1, many calls near the 0.8 threshold), at several
lengths, vocabularies and shares of calls with output — and counts the judgements (step, stall
count, fire, containment, repeat ratio) that differ, and the bytes each sketch holds.

Run: .venv/bin/python benchmarks/thinking_sketch_packing.py [--quick] [--reference REV]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import types
from pathlib import Path

from otelguard.detectors import thinking
from _text import prose, random_letters

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "9e40aa0"  # the last commit whose thinking detector kept the plain array sketch
NEAR = 0.05  # a containment this close to the 0.8 threshold counts as a near decision


def reference_module(rev: str) -> types.ModuleType:
    """`otelguard.detectors.thinking` as it was at `rev`, loaded beside today's."""
    source = subprocess.run(["git", "show", f"{rev}:otelguard/detectors/thinking.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("otelguard.detectors.thinking_reference")
    module.__package__ = "otelguard.detectors"
    sys.modules[module.__name__] = module  # (dataclasses look their module up)
    exec(compile(source, f"{rev}:otelguard/detectors/thinking.py", "exec"), module.__dict__)
    return module


def fields(judgement) -> tuple | None:
    """A judgement's fields (the two modules' classes differ, so their instances never compare equal)."""
    if judgement is None:
        return None
    return (str(judgement.step), judgement.stalled, judgement.fire, judgement.capped, judgement.containment,
            judgement.repeat_ratio)


def restated(previous: str, share: float, chars: int, rng: random.Random, fresh: str) -> str:
    """A call that restates `share` of the previous call's words (a contiguous run, a few words
    swapped), then goes on with fresh text up to `chars` characters."""
    words = previous.split(" ")
    keep = int(len(words) * share)
    start = rng.randrange(0, len(words) - keep + 1)
    kept = [w if rng.random() > 0.03 else rng.choice(words) for w in words[start:start + keep]]
    return (" ".join(kept) + " " + fresh)[:chars]


def sequences(count: int, seed: int):
    """`count` sequences of 4-8 calls: (has_output, reasoning) each."""
    rng = random.Random(seed)
    for index in range(count):
        chars = rng.choice((2100, 3000, 5000, 12000))
        letters = rng.random() < 0.2  # high-entropy text: nearly every window distinct
        make = random_letters if letters else prose
        output_share = rng.choice((0.0, 0.5, 1.0))
        text = make(chars, seed=seed * 1_000_003 + index * 101)
        calls = []
        for step in range(rng.randint(4, 8)):
            calls.append((rng.random() < output_share, text))
            share = rng.choice((rng.uniform(0.0, 1.0), rng.uniform(0.7, 0.95), 1.0))
            text = restated(text, share, chars, rng, make(chars, seed=seed * 7_919 + index * 101 + step + 1))
        yield calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reference", default=REFERENCE, help="git revision of the plain-array detector")
    args = parser.parse_args()
    try:
        reference = reference_module(args.reference)
    except subprocess.CalledProcessError as error:  # a shallow clone, or a revision this clone lacks
        print(f"thinking_sketch_packing: cannot read {args.reference} from git: {error.stderr.strip()}")
        return 2
    count = 400 if args.quick else 1000
    judged = differ = near = fires = repeated = 0
    packed_bytes = plain_bytes = 0
    for calls in sequences(count, seed=16):
        old, new = reference.ThinkingLoopDetector(), thinking.ThinkingLoopDetector()
        for has_output, reasoning in calls:
            a, b = old.observe(has_output, reasoning), new.observe(has_output, reasoning)
            if a is None and b is None:
                continue
            judged += 1
            differ += fields(a) != fields(b)
            if a is not None:
                fires += a.fire
                repeated += a.step is reference.Step.REPEATED_MATERIAL
                near += a.containment is not None and abs(a.containment - 0.8) < NEAR
            # (an int above 256 is an object of its own; up to 256, a shared one)
            plain_bytes += sys.getsizeof(old._previous) + (sys.getsizeof(old._previous_size)
                                                           if old._previous_size > 256 else 0)
            packed_bytes += sys.getsizeof(new._previous)
    texts = sum(1 for _ in sequences(count, seed=16) for _ in _)
    print(f"thinking_sketch_packing: {count} sequences, {texts} reasoning texts, reference {args.reference}")
    print(f"  judgements compared {judged}: repeated-material {repeated}, fired {fires}, "
          f"containment within {NEAR} of 0.8: {near}")
    print(f"  judgements that differ: {differ}")
    print(f"  sketch bytes (sys.getsizeof, mean): plain array and size {plain_bytes / judged:,.0f} B, "
          f"packed {packed_bytes / judged:,.0f} B")
    ok = differ == 0
    print("thinking_sketch_packing:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
