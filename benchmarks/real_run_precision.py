"""Precision and misses on 192 real agent runs, from labels a person wrote (tests/realruns, its README).

Every run goes through `otelguard analyze` with the default configuration (the defaults the live
processor, `serve` and the hooks use too). Each acting verdict (remind or stronger) is looked up in
`labels.jsonl` by (file, span id, rule): TRUE (stuck; a reminder helps), DEFENSIBLE or FALSE (healthy
work). Printed for the tune half, the held-back half and all runs:
- per rule: acting verdicts by label, steers, stopping actions;
- runs reminded (any acting verdict), and the labelled stuck episodes (`episodes.jsonl`) that got no
  acting verdict between their first and last step (misses);
- per mechanism, from `stages.jsonl` (the verdicts of each rule set as it was measured when that
  mechanism went in): the verdicts it removed and added, by label;
- the blind second reader's agreement with the labels.

Exit 1 when an acting verdict has no label (label it before trusting any figure), or, with --check,
when a bar of the precision issue is missed: at most 15 runs reminded, at most 3 steers, no stopping
action, at most 8 % of the held-back half's runs reminded, every episode that the verdicts before the
change reminded is still reminded.

Run: .venv/bin/python benchmarks/real_run_precision.py [--check]
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from otelguard.analyzer import analyze

REAL_RUNS = Path(__file__).resolve().parents[1] / "tests" / "realruns"
TRACES = REAL_RUNS / "swe-lite-deepseek" / "traces"
LABELS = ("TRUE", "DEFENSIBLE", "FALSE")
STOPPING = ("block", "abort", "cancel", "break")
HALVES = ("tune", "held", "all")
# The rule sets measured, in the order their mechanisms went in (stages.jsonl); each row is the
# difference from the one before it. `remind-once-alone` is the last mechanism on the old rules alone.
STAGES = [
    ("before", "the defaults before the precision work"),
    ("judged-by-output", "a failure judged by its status and output; an outcome that says nothing is no evidence"),
    ("error-loop-arguments", "error-loop needs near-identical arguments"),
    ("volatile-masking", "only volatile fields masked; head and tail of long output; spacing kept"),
    ("remind-once", "same-result and error-loop remind once per pattern (= today's rules)"),
]


def jsonl(name: str) -> list[dict]:
    with (REAL_RUNS / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def current_verdicts() -> list[dict]:
    """The acting verdicts of today's defaults on every run, as the stages file keeps them."""
    files = {row["trace_id"]: row["file"] for row in jsonl("swe-lite-deepseek/MANIFEST.jsonl")}
    analysis = analyze(sorted(TRACES.glob("*.otlp.jsonl.gz")))
    return [{"file": files[f"{row.step.trace_id:032x}"], "span_id": f"{row.step.span_id:016x}",
             "rule": row.verdict.rule, "step": row.step.number, "action": row.verdict.action}
            for row in analysis.verdicts if row.verdict.action != "none"]


def key(verdict: dict) -> tuple[str, str, str]:
    return verdict["file"], verdict["span_id"], verdict["rule"]


def table(verdicts: list[dict], labels: dict, half: dict[str, str], episodes: list[dict], runs: int,
          which: str) -> tuple[list[str], dict]:
    chosen = [v for v in verdicts if which == "all" or half[v["file"]] == which]
    by_rule: dict[str, Counter] = defaultdict(Counter)
    for verdict in chosen:
        counts = by_rule[verdict["rule"]]
        counts[labels[key(verdict)]["label"] if key(verdict) in labels else "unlabelled"] += 1
        counts["steer"] += verdict["action"] == "steer"
        counts["stopping"] += verdict["action"] in STOPPING
    reminded = {v["file"] for v in chosen}
    mine = [e for e in episodes if which == "all" or half[e["file"]] == which]
    missed = [e for e in mine if not any(v["file"] == e["file"] and e["first_step"] <= v["step"] <= e["last_step"]
                                         for v in chosen)]
    lines = [f"  {which}: {runs} runs, {len(reminded)} reminded ({len(reminded) / runs:.1%}), {len(chosen)} acting "
             f"verdicts, {sum(c['steer'] for c in by_rule.values())} steers, "
             f"{sum(c['stopping'] for c in by_rule.values())} stopping; episodes {len(mine)}, missed {len(missed)}"]
    for rule, counts in sorted(by_rule.items()):
        lines.append(f"    {rule:<20} " + " ".join(f"{label} {counts[label]}" for label in (*LABELS, "unlabelled"))
                     + f"  steer {counts['steer']}")
    figures = {"runs": runs, "reminded": len(reminded), "steers": sum(c["steer"] for c in by_rule.values()),
               "stopping": sum(c["stopping"] for c in by_rule.values()), "missed": missed}
    return lines, figures


def main(argv: list[str]) -> int:
    check = "--check" in argv
    labels = {key(row): row for row in jsonl("labels.jsonl")}
    half = {row["file"]: row["half"] for row in jsonl("split.jsonl")}
    episodes = jsonl("episodes.jsonl")
    stages: dict[str, list[dict]] = defaultdict(list)
    for row in jsonl("stages.jsonl"):
        stages[row["stage"]].append(row)
    verdicts = current_verdicts()
    unlabelled = [v for v in verdicts if key(v) not in labels]

    print("real runs: mini-swe-agent + DeepSeek on SWE-bench Lite, default configuration")
    figures = {}
    for which in HALVES:
        runs = sum(1 for h in half.values() if which in ("all", h))
        lines, figures[which] = table(verdicts, labels, half, episodes, runs, which)
        print("\n".join(lines))

    print("\nper mechanism (acting verdicts removed / added, by label; all runs):")
    def by_label(rows: list[dict]) -> str:
        counts = Counter(labels[key(v)]["label"] if key(v) in labels else "unlabelled" for v in rows)
        return ", ".join(f"{label} {counts[label]}" for label in (*LABELS, "unlabelled") if counts[label]) or "none"
    for (before, _), (stage, what) in zip(STAGES, STAGES[1:]):
        old, new = {key(v): v for v in stages[before]}, {key(v): v for v in stages[stage]}
        removed = [v for k, v in old.items() if k not in new or new[k]["action"] != v["action"]]
        added = [v for k, v in new.items() if k not in old or old[k]["action"] != v["action"]]
        print(f"  {stage} ({what}): {len(old)} -> {len(new)}; removed {len(removed)} ({by_label(removed)}); "
              f"added {len(added)} ({by_label(added)})")
    alone = stages["remind-once-alone"]
    print(f"  remind-once alone on the rules before: {len(stages['before'])} -> {len(alone)} "
          f"({Counter(v['action'] for v in alone)})")
    recorded = {(*key(v), v["action"]) for v in stages[STAGES[-1][0]]}
    now = {(*key(v), v["action"]) for v in verdicts}
    if recorded != now:
        print(f"  note: today's verdicts differ from the last recorded stage ({len(now - recorded)} new, "
              f"{len(recorded - now)} gone): the rules moved on since the stages were measured")

    second = jsonl("second_reader.jsonl")
    pairs = [(labels[key(row)].get("first_label", labels[key(row)]["label"]), row["label"]) for row in second]
    agree = sum(a == b for a, b in pairs)
    expected = sum(Counter(a for a, _ in pairs)[label] * Counter(b for _, b in pairs)[label]
                   for label in LABELS) / len(pairs) ** 2
    kappa = (agree / len(pairs) - expected) / (1 - expected) if expected < 1 else 1.0
    print(f"\nsecond reader (blind, {len(pairs)} random verdicts of the rules before): {agree}/{len(pairs)} agree, "
          f"Cohen's kappa {kappa:.2f}")

    before_reminded = [e for e in episodes if any(v["file"] == e["file"] and e["first_step"] <= v["step"] <= e["last_step"]
                                                  for v in stages["before"])]
    lost = [e for e in before_reminded if e in figures["all"]["missed"]]
    bars = [
        ("runs reminded <= 15", figures["all"]["reminded"] <= 15, figures["all"]["reminded"]),
        ("steers <= 3", figures["all"]["steers"] <= 3, figures["all"]["steers"]),
        ("no stopping action", figures["all"]["stopping"] == 0, figures["all"]["stopping"]),
        ("held-back runs reminded <= 8 %", figures["held"]["reminded"] <= 0.08 * figures["held"]["runs"],
         f"{figures['held']['reminded']}/{figures['held']['runs']}"),
        ("episodes reminded before still reminded", not lost, f"{len(before_reminded) - len(lost)}/{len(before_reminded)}"),
    ]
    print("\nbars:")
    for name, held, value in bars:
        print(f"  {name}: {value} {'PASS' if held else 'FAIL'}")
    if unlabelled:
        print(f"\n{len(unlabelled)} acting verdicts have no label (add them to tests/realruns/labels.jsonl):")
        for verdict in unlabelled:
            print(f"  {verdict['file']} step {verdict['step']} span {verdict['span_id']} {verdict['rule']} {verdict['action']}")
        return 1
    return 1 if check and not all(held for _, held, _ in bars) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
