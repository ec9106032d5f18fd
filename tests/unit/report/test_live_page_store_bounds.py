"""The live page's store (`otelguard.report.live.LiveReport`) under a flood, through its public API:
however many sessions and steps arrive, it holds at most its sessions, the last 200 steps of each,
previews of at most 2,000 characters and its stated bytes, measured (tracemalloc) and not only
counted; every session it forgets is told; readers on other threads read whole JSON while it fills."""

from __future__ import annotations

import gc
import json
import threading
import tracemalloc

from otelguard.report.live import LIVE_EPISODES, LIVE_STEPS, LIVE_VERDICTS, NAME_CHARS, WHAT_CHARS, LiveReport
from otelguard.report.model import CONTENT_CHARS, LoopMark, Spend, Step, StepVerdict, Text

WIDE = "\U0001F600"  # four bytes a character in a Python string: the costliest text


def _step(number: int, char: str = "x", size: int = 5000) -> Step:
    verdicts: tuple[StepVerdict, ...] = ()
    if number % 5 == 0:
        verdicts = (StepVerdict("repeat-tool-reminder", "repeated_tool_call", "repeat-threshold", "remind", True,
                                False, char * size, (number - 2, number - 1, number), "count 3",
                                LoopMark(f"loop-{number % 3}", number % 15 == 0, True, Spend(10, 5, 0.01, None))),)
    return Step(number, "tool", char * size, char * size, char * size, number * 10, number * 10 + 5, False,
                Text(char * size, size), Text(char * size, size), verdicts)


def _runs(store: LiveReport) -> list[dict]:
    index = json.loads(store.index())
    return [json.loads(store.run(row[0]) or "null") for row in index["runs"]]


def test_a_flood_of_sessions_and_steps_stays_within_the_stated_sessions_steps_and_bytes() -> None:
    evictions: list[tuple[str, int]] = []
    max_bytes = 4 * 1024 * 1024
    store = LiveReport(max_sessions=50, max_bytes=max_bytes, on_evict=lambda reason, n: evictions.append((reason, n)))
    narrow = [_step(number) for number in range(1, 6)]
    long_run = [_step(number, WIDE) for number in range(1, 301)]
    gc.collect()
    tracemalloc.start()
    try:
        for session in range(400):  # many small sessions: past the session bound
            for step in narrow:
                store.add_step(f"agent-{session}", "agent", step, f"session-{session}")
        for session in range(3):  # a few sessions of long, wide steps: past the steps and the bytes
            for step in long_run:
                store.add_step(f"long-{session}", "agent", step, f"long-{session}")
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    index = json.loads(store.index())
    assert store.sessions == len(index["runs"]) <= 50
    assert store.held_bytes <= max_bytes
    assert held <= max_bytes * 1.1, f"measured {held / 2**20:.1f} MiB held (peak {peak / 2**20:.1f})"
    assert index["head"]["counts"]["evicted"] == sum(n for _, n in evictions) == 403 - store.sessions
    assert {reason for reason, _ in evictions} == {"capacity", "bytes"}
    assert index["head"]["counts"]["steps"] == 400 * 5 + 3 * 300
    for run in _runs(store):
        assert len(run["steps"]) <= LIVE_STEPS
        for step in run["steps"]:
            # [.., span name, name, what, .., arguments, length, output, length, ..]: cut, full length kept
            assert len(step[2]) <= NAME_CHARS and len(step[3]) <= NAME_CHARS and len(step[4]) <= WHAT_CHARS
            assert len(step[8]) <= CONTENT_CHARS and len(step[10]) <= CONTENT_CHARS and step[9] == 5000
        assert all(len(verdict[8]) <= CONTENT_CHARS for verdict in run["verdicts"])
        assert len(run["verdicts"]) <= LIVE_VERDICTS + 3 and len(run["episodes"]) <= LIVE_EPISODES + 3
    last = _runs(store)[-1]
    # its latest steps, fewer than 200 (alone it is past the bytes); those it no longer holds counted
    kept = len(last["steps"])
    assert last["run"][1] == "agent" and 0 < kept < LIVE_STEPS and last["run"][15] == 300 - kept
    assert [step[0] for step in last["steps"]] == list(range(301 - kept, 301))


def test_readers_on_other_threads_read_whole_json_while_the_writer_fills() -> None:
    store = LiveReport(max_sessions=20)
    done = threading.Event()
    problems: list[str] = []
    reads = [0]

    def read() -> None:
        while not done.is_set():
            try:
                index = json.loads(store.index())
                reads[0] += 1
                for row in index["runs"][-3:]:
                    text = store.run(row[0])
                    if text is not None:  # (forgotten meanwhile: None, never a torn answer)
                        run = json.loads(text)
                        assert all(v[0] == row[0] for v in run["verdicts"])
            except Exception as error:  # noqa: BLE001  (collected and failed below)
                problems.append(repr(error))
                return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    for session in range(60):
        for number in range(1, 31):
            store.add_step(f"agent-{session}", None, _step(number, size=300), f"s-{session}")
    done.set()
    for reader in readers:
        reader.join(10)
    assert problems == []
    assert not any(reader.is_alive() for reader in readers) and reads[0] > 0
    assert store.sessions == 20
