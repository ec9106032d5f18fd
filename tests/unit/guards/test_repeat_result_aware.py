"""`repeat-tool-reminder` with `result_aware: true`: an identical call whose result differs from the
previous identical call's restarts the run (polling that moves on); the default stays the seed's."""

from __future__ import annotations

import json

from otelguard.engine import GuardEngine

from no_progress_support import replay


def poll(status: str) -> dict:
    return {"tool": "job_status", "args": {"id": 42}, "result": json.dumps({"status": status})}


def reminders(calls: list[dict], **repeat: object) -> list[tuple[int, int | None]]:
    engine = GuardEngine({"guards": [{"id": "repeat-tool-reminder", "config": repeat}]})
    return [(n, v.repeat_count) for n, per in enumerate(replay(engine, calls), start=1) for v in per
            if v.action == "remind"]


MOVING = [poll(s) for s in ("queued", "running", "running 60%", "running 90%", "done")]


def test_by_default_results_are_not_read():
    """The seed's reminder: five identical polls remind at 3 and 5 whatever they returned."""
    assert reminders(MOVING) == [(3, 3), (5, 5)]


def test_result_aware_polling_that_moves_on_gets_no_reminder():
    assert reminders(MOVING, result_aware=True) == []


def test_result_aware_identical_results_remind_as_the_seed_does():
    assert reminders([poll("queued")] * 5, result_aware=True) == [(3, 3), (5, 5)]


def test_result_aware_a_changed_result_restarts_the_run():
    calls = [poll("queued")] * 2 + [poll("running")] * 3
    assert reminders(calls, result_aware=True) == [(5, 3)]


def test_result_aware_masks_volatile_fields():
    """Results that differ only in a timestamp are the same result."""
    calls = [{"tool": "job_status", "args": {"id": 42}, "result": f'{{"status":"queued","at":"2026-12-01T10:0{n}:00Z"}}'}
             for n in range(3)]
    assert reminders(calls, result_aware=True) == [(3, 3)]
