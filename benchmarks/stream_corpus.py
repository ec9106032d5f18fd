"""The stream and reasoning rules against the labelled corpus (tests/support/loop_corpus.py), per rule and half.

Not a timing: what the default thinking-loop guard does to each sample, judged as the live guard
judges it (streamed in token-like deltas through its breaker, then the call's end; text-loop samples
call by call). Per rule and half: loops caught (and by which rule), the characters from the loop's
onset to the cut or flag (text-loop: answers), legitimate samples cut (the goal: none) and flagged.
Then the low-novelty rule's separation (each sample's lowest window novelty), whether any legitimate
sample comes within 2x of `min_novelty` (the rule's default action is `break` only if none does),
and the longest structured repetition among the legitimate samples (what `max_structured_repeat_chars`
was chosen from, on the tune half).

The defaults were chosen on the `tune` half; `held-out` is the half to quote.

Run: .venv/bin/python benchmarks/stream_corpus.py
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the tests' helpers

from loop_corpus import HELD_OUT, LEGIT, LOOP, TUNE, corpus, deltas, judge  # noqa: E402

from otelguard.guards.config import ThinkingLoopGuardConfig  # noqa: E402
from otelguard.detectors.novelty import lowest_novelty  # noqa: E402
from otelguard.detectors.stream import StreamBreaker  # noqa: E402
from otelguard.guards import ThinkingLoopGuard  # noqa: E402

RULES = ("repeating-cycle", "long-cycle", "low-novelty", "text-loop")


def spread(values: list[int]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):,.0f}, max {max(values):,}"


def structured_allowance_needed(samples) -> tuple[int, str]:
    """The smallest allowance (of a ladder) under which no sample is cut, and the sample that needs it."""
    needed, name = 0, "-"
    for sample in samples:
        for allowance in (256, 512, 1024, 2048, 4096, 6144, 8192, 16384):
            breaker = StreamBreaker(max_structured_repeat_chars=allowance)
            if not any(breaker.push(d) for d in deltas(sample.text, 0)) and breaker.finish() is None:
                if allowance > needed:
                    needed, name = allowance, sample.name
                break
    return needed, name


def main() -> int:
    config = ThinkingLoopGuardConfig()
    guard = ThinkingLoopGuard(config)
    samples = corpus()
    legit_cut = 0
    print(f"stream_corpus: {len(samples)} samples; defaults: max_structured_repeat_chars "
          f"{config.max_structured_repeat_chars}, max_long_cycle_chars {config.max_long_cycle_chars} x "
          f"{config.long_cycle_repeats}, novelty window {config.novelty_window} / {config.novelty_ngram}-grams / "
          f"min {config.min_novelty} / action {config.low_novelty_action}, text-loop {config.text_loop_repeats} "
          f"at {config.text_loop_similarity} or {config.text_loop_streak} at {config.text_loop_streak_similarity}")
    print("| rule | half | loops caught | by | onset to cut/flag | legit cut | legit flagged |")
    print("|---|---|---|---|---|---|---|")
    for rule in RULES:
        for half in (TUNE, HELD_OUT):
            group = [s for s in samples if s.rule == rule and s.split == half]
            loops = [(s, judge(s, guard)) for s in group if s.label == LOOP]
            legit = [(s, judge(s, guard)) for s in group if s.label == LEGIT]
            caught = [o for _, o in loops if o.rule is not None]
            by = Counter(o.rule for o in caught)
            cut = [s.name for s, o in legit if o.cut]
            flagged = [f"{s.name} ({o.rule})" for s, o in legit if o.rule and not o.cut]
            legit_cut += len(cut)
            unit = " answers" if rule == "text-loop" else " chars"
            print(f"| {rule} | {half} | {len(caught)}/{len(loops)} | {', '.join(f'{k} {v}' for k, v in by.items())} | "
                  f"{spread([o.after_onset for o in caught])}{unit} | {len(cut)}/{len(legit)} | "
                  f"{len(flagged)}: {', '.join(flagged) or '-'} |")
        if rule == "long-cycle":
            for half in (TUNE, HELD_OUT):
                loops = [judge(s, guard, reasoning=True) for s in samples
                         if s.rule == rule and s.split == half and s.label == LOOP]
                caught = [o for o in loops if o.rule == "long-cycle" and o.cut]
                print(f"| long-cycle (reasoning channel) | {half} | {len(caught)}/{len(loops)} | | "
                      f"{spread([o.after_onset for o in caught])} chars | | |")

    print("\nlow-novelty separation: lowest novelty of any full window (window "
          f"{config.novelty_window}, {config.novelty_ngram}-grams; samples shorter than a window are not judged)")
    for half in (TUNE, HELD_OUT):
        group = [s for s in samples if s.rule == "low-novelty" and s.split == half]
        loops = sorted(lowest_novelty(s.text, window=config.novelty_window, n=config.novelty_ngram)
                       for s in group if s.label == LOOP)
        legit = sorted((lowest_novelty(s.text, window=config.novelty_window, n=config.novelty_ngram), s.name)
                       for s in group if s.label == LEGIT)
        judged = [(v, name) for v, name in legit if v < 1.0]
        near = [f"{name} {v:.2f}" for v, name in judged if v < 2 * config.min_novelty]
        print(f"  {half}: loops max {max(loops):.3f} (median {statistics.median(loops):.3f}); legit judged "
              f"{len(judged)}/{len(legit)}, lowest {judged[0][0]:.3f}, median {statistics.median(v for v, _ in judged):.3f}; "
              f"within 2x of {config.min_novelty}: {len(near)} ({', '.join(near) or '-'})")
    seed = ThinkingLoopGuard(ThinkingLoopGuardConfig(
        max_structured_repeat_chars=0, max_long_cycle_chars=0, min_novelty=0, text_loop_repeats=0, text_loop_streak=0))
    print("\nthe seed's rules alone (structure-blind, no long cycles, no novelty, no text-loop), both halves:")
    for rule in RULES:
        group = [s for s in samples if s.rule == rule]
        caught = sum(1 for s in group if s.label == LOOP and judge(s, seed).rule is not None)
        cut = [s.name for s in group if s.label == LEGIT and judge(s, seed).cut]
        print(f"  {rule}: loops caught {caught}/{sum(s.label == LOOP for s in group)}, "
              f"legit cut {len(cut)}/{sum(s.label == LEGIT for s in group)}")
    for half in (TUNE, HELD_OUT):
        legit = [s for s in samples if s.rule == "repeating-cycle" and s.label == LEGIT and s.split == half]
        needed, name = structured_allowance_needed(legit)
        print(f"structured allowance no {half} legit sample is cut under: {needed} ({name})")
    return 1 if legit_cut else 0


if __name__ == "__main__":
    sys.exit(main())
