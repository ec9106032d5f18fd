"""The report's store, through its public API: a loop stopped or continued after a verdict, its
spend, the timelines kept only for runs with an acting verdict, and many runs beyond those held in
memory; and the JSON written into the page."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from otelguard.report.html import json_for_html
from otelguard.report.model import LoopMark, Spend, Step, StepVerdict
from otelguard.report.store import CONTINUED, STOPPED, ReportStore


def _verdict(action: str, *, started: bool, acted: bool, tokens: int = 0, key: str = "repeated_tool_call",
             evidence: tuple[int, ...] = ()) -> StepVerdict:
    return StepVerdict("repeat-tool-reminder", "repeated_tool_call", "repeat-threshold", action, action != "none",
                       action == "none", None, evidence, "",
                       LoopMark(key, started, acted, Spend(tokens, tokens // 10, tokens / 1e6, None)))


def _step(number: int, kind: str = "tool", *verdicts: StepVerdict) -> Step:
    return Step(number, kind, f"execute_tool t{number}", "t", "t {}", start_ns=number * 10, end_ns=number * 10 + 5,
                verdicts=verdicts)


def _fill(store: ReportStore, key: str, continues_at: int | None) -> None:
    """A loop started at step 2, reminded at 4; a step of it again at `continues_at` (or never)."""
    store.add_step(key, "agent", _step(1))
    store.add_step(key, "agent", _step(2, "tool", _verdict("none", started=True, acted=False, tokens=100, evidence=(1, 2))))
    store.add_step(key, "agent", _step(3, "model"))
    store.add_step(key, "agent", _step(4, "tool", _verdict("remind", started=False, acted=True, tokens=300)))
    for number in range(5, 20):
        if number == continues_at:
            store.add_step(key, "agent", _step(number, "tool", _verdict("none", started=False, acted=True, tokens=500)))
        else:
            store.add_step(key, "agent", _step(number, "tool" if number % 2 else "model"))


def test_a_loop_that_goes_on_within_five_calls_continued_and_one_that_does_not_stopped() -> None:
    store = ReportStore()
    _fill(store, "a", continues_at=13)  # the 5th tool call after the reminder (5, 7, 9, 11, 13)
    _fill(store, "b", continues_at=15)  # the 6th: too late
    _fill(store, "c", continues_at=None)
    store.finish()
    outcomes = {run.key: [v.outcome for v in store.verdicts(run.number)] for run in store.runs()}
    assert outcomes == {"a": [CONTINUED], "b": [STOPPED], "c": [STOPPED]}
    rules = store.rules["repeat-tool-reminder", "repeat-threshold"]
    assert (rules.acting, rules.stopped, rules.continued, rules.loops) == (3, 2, 1, 3)
    a = next(run for run in store.runs() if run.key == "a")
    [episode] = store.episodes(a.number)
    assert (episode.evidence_step, episode.first_step, episode.last_step) == (1, 2, 13)
    [verdict] = store.verdicts(a.number)
    assert verdict.loop_spend == Spend(500, 50, 500 / 1e6, None)  # the loop's in the end
    assert (a.loops, a.input_tokens) == (1, 500)
    store.close()


def test_only_runs_with_an_acting_verdict_keep_their_steps() -> None:
    store = ReportStore()
    for number in range(1, 4):
        store.add_step("quiet", "q", _step(number))
    store.run_ended("quiet", "q")
    _fill(store, "loud", continues_at=None)
    store.run_ended("loud", "l")
    runs = {run.key: run for run in store.runs()}
    assert (runs["quiet"].steps_kept, runs["quiet"].steps_dropped, runs["quiet"].tool_calls) == (0, 3, 3)
    assert list(store.steps(runs["quiet"].number)) == []
    assert [step.number for step in store.steps(runs["loud"].number)] == list(range(1, 20))
    store.close()


def test_runs_past_those_held_in_memory_keep_their_order_and_loops() -> None:
    store = ReportStore()
    keys = [f"run-{at}" for at in range(1500)]
    for key in keys:  # a loop starts in each; most are put away before it is told
        store.add_step(key, None, _step(1, "tool", _verdict("remind", started=True, acted=True, tokens=10)))
    for key in keys[:3]:
        store.add_step(key, None, _step(2, "tool", _verdict("none", started=False, acted=True, tokens=20)))
    runs = list(store.runs())
    assert [run.key for run in runs] == keys
    assert sum(run.loops for run in runs) == 1500
    assert store.totals().continued == 3 and store.totals().stopped == 1497
    store.close()


@given(st.text())
def test_json_for_html_has_nothing_markup_could_read_and_reads_back(text: str) -> None:
    encoded = json_for_html({"k": text, "list": [text]})
    assert not set("<>&\u2028\u2029") & set(encoded)
    assert not any(0xD800 <= ord(char) <= 0xDFFF for char in encoded)
    assert json.loads(encoded) == {"k": text, "list": [text]}
