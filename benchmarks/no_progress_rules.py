"""no-progress on the labelled corpus (tests/no_progress_corpus/corpus.jsonl) and on long healthy runs.

1. Per rule, on the held-out half (the guard was tuned on the other): detection = loop sequences on
   which no-progress acted (remind or stronger), and on which the first such verdict named the rule
   the sequence was written for; false positives = legitimate look-alikes on which it acted at all.
   The tuning half's figures are printed beside them.
2. Long healthy runs: scripted agents that keep making progress (every rule's legitimate
   look-alikes mixed with ordinary work and bookkeeping), under the default config and with
   `stop_after: 6`: no stopping action (block, abort, cancel) may fire; reminders are counted.
3. The guard's cost, indicative only (one process, process CPU time): the held-out corpus replayed
   through the engine with four guards and with three, the difference per tool span.

Every sequence goes through `GuardEngine` as GenAI spans (tests/support/no_progress_support.py).
Run: .venv/bin/python benchmarks/no_progress_rules.py [--quick]
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the corpus writer (no_progress_corpus.build)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the tests' helpers

from no_progress_corpus.build import DIALECTS, Writer, long_healthy_run  # noqa: E402
from no_progress_support import corpus, replay  # noqa: E402

from otelguard.guards.config import NO_PROGRESS_RULES  # noqa: E402
from otelguard.engine import GuardEngine  # noqa: E402

STOPPING = ("block", "abort", "cancel")
THREE_GUARDS = {"guards": [{"id": g} for g in ("timeout-policy", "repeat-tool-reminder", "thinking-loop-guard")]}


def acted(verdicts, guard: str = "no-progress"):
    return [v for per in verdicts for v in per if v.guard == guard and v.action != "none"]


def rates(split: str) -> dict[str, dict[str, float]]:
    engine = GuardEngine()
    table: dict[str, Counter] = {rule: Counter() for rule in NO_PROGRESS_RULES}
    for number, row in enumerate(corpus(split)):
        fired = acted(replay(engine, row["calls"], trace_id=1 + number))
        counts = table[row["rule"]]
        counts[row["label"]] += 1
        if row["label"] == "loop":
            counts["caught"] += bool(fired)
            counts["caught by its rule"] += bool(fired) and fired[0].rule == row["rule"]
        else:
            counts["false positive"] += bool(fired)
    return {rule: {"loops": c["loop"], "detected": c["caught"] / c["loop"],
                   "by its rule": c["caught by its rule"] / c["loop"], "legit": c["legit"],
                   "false positives": c["false positive"] / c["legit"]} for rule, c in table.items()}


def long_runs(runs: int, calls: int, config) -> tuple[Counter, int]:
    engine = GuardEngine(config)
    actions: Counter = Counter()
    total = 0
    for number in range(runs):
        rng = random.Random(f"long/{number}")
        sequence = long_healthy_run(Writer(rng, DIALECTS[number % len(DIALECTS)]), calls)
        total += len(sequence)
        for verdict in (v for per in replay(engine, sequence, trace_id=10_000 + number) for v in per):
            if verdict.action != "none":
                actions[(verdict.guard, verdict.rule, str(verdict.action))] += 1
    return actions, total


def cost_per_tool_span(rounds: int) -> float:
    rows = corpus("held-out")
    spans = sum(len(row["calls"]) for row in rows)

    def run(config) -> float:
        engine = GuardEngine(config)
        start = time.process_time()
        for number, row in enumerate(rows):
            replay(engine, row["calls"], trace_id=1 + number)
        return time.process_time() - start

    four, three = [], []
    for _ in range(rounds):
        four.append(run(None))
        three.append(run(THREE_GUARDS))
    four.sort(), three.sort()
    return (four[len(four) // 2] - three[len(three) // 2]) / spans * 1e6


def main() -> int:
    quick = "--quick" in sys.argv
    ok = True
    print("no-progress on the labelled corpus (held-out half; tuning half in brackets)")
    print(f"  {'rule':<20} {'loops':>5} {'detected':>16} {'by its rule':>16} {'legit':>6} {'false positives':>18}")
    held, tune = rates("held-out"), rates("tune")
    for rule in NO_PROGRESS_RULES:
        h, t = held[rule], tune[rule]
        print(f"  {rule:<20} {h['loops']:>5} {h['detected']:>8.0%} [{t['detected']:>4.0%}] "
              f"{h['by its rule']:>8.0%} [{t['by its rule']:>4.0%}] {h['legit']:>6} "
              f"{h['false positives']:>10.0%} [{t['false positives']:>4.0%}]")
    runs, calls = (5, 400) if quick else (20, 1000)
    for label, config in (("default config", None),
                          ("stop_after 6", {"guards": [{"id": "timeout-policy"}, {"id": "repeat-tool-reminder"},
                                                        {"id": "thinking-loop-guard"},
                                                        {"id": "no-progress", "config": {"stop_after": 6}}]})):
        actions, total = long_runs(runs, calls, config)
        stopping = sum(n for (_, _, action), n in actions.items() if action in STOPPING)
        shown = ", ".join(f"{guard} {rule} {action} {n}" for (guard, rule, action), n in sorted(actions.items()))
        verdict = "PASS" if stopping == 0 else "FAIL"
        ok &= stopping == 0
        print(f"long healthy runs, {label}: {runs} runs, {total} tool calls; stopping actions {stopping} {verdict}; "
              f"other actions: {shown or 'none'}")
    print(f"cost (indicative): no-progress adds {cost_per_tool_span(3 if quick else 7):.1f} us of engine CPU "
          "per tool span (held-out corpus, four guards minus three, median of rounds)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
