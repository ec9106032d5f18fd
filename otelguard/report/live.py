"""A report's data held in memory while it happens, for a page that asks for it again and again (the
live page of `otelguard serve`): the same runs, steps, loops and verdicts as `ReportStore` (counted by
the same `Tally`), bounded instead of kept whole, and safe to read from other threads while one
thread fills it.

What it holds, at most:
- `max_sessions` runs (the least recently active forgotten first, each one counted in `evicted`);
- of each run, its last `steps` steps, its last `verdicts` acting verdicts told stopped or continued
  (and those still waiting: at most one per loop), its last `episodes` loops acted on (and those under way);
- of each step, its arguments and output cut to `model.CONTENT_CHARS` (2,000) characters each (their
  full length noted), its names to `NAME_CHARS`; of a verdict, its message to `CONTENT_CHARS`;
- `max_bytes` of all that in all, as measured by `held_bytes` (a step as the JSON the page reads, a
  verdict or loop by the size of its strings plus a fixed allowance per object, a run by a fixed
  allowance): past it the least recently active runs are forgotten too, as for `max_sessions`, and a
  run alone past it keeps fewer steps.

Threads: one writer (the service's judge) calls `add_step` and `run_ended`; any number of readers call
`index` and `run`. Both take one lock, held by a writer for one step's bookkeeping and by a reader only
to copy references (a step is kept as its JSON text, immutable; the loops and verdicts a reader needs are
copied, at most `verdicts + episodes` and those under way); encoding the answer happens after the
lock is released. So a page request delays the writer by a copy of at most a few hundred references,
never by its encoding or its network.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from .html import _episode_row, _rule_row, _run_row, _step_row, _verdict_row, json_for_html
from .model import CONTENT_CHARS, LOOKAHEAD_CALLS, ActingVerdict, Episode, RunSummary, Step, StepVerdict, Text, add_loops
from .store import RunState, Tally

LIVE_SESSIONS = 1000
LIVE_STEPS = 200
LIVE_VERDICTS = 50
LIVE_EPISODES = 50
LIVE_BYTES = 64 * 1024 * 1024
NAME_CHARS = 256  # span names, tool and model names, run labels and keys, sessions
WHAT_CHARS = 512  # a step's one-line description
OBJECT_BYTES = 512  # allowance per verdict or loop kept, besides its strings (the objects and their slots)
STEP_BYTES = 160  # allowance per step kept, besides its JSON text (the str object and its deque slot)
RUN_BYTES = 4096  # allowance per run held (its summary, state and containers)

Paused = Callable[[str], bool]  # whether a session is paused now


class _LiveRun:
    __slots__ = ("state", "session", "steps", "told", "closed", "bytes", "version", "row", "open_spend")

    def __init__(self, state: RunState, session: str | None) -> None:
        self.state = state
        self.session = session
        self.steps: deque[str] = deque()  # each step's row as JSON (the page's)
        self.told: deque[ActingVerdict] = deque()
        self.closed: deque[Episode] = deque()
        self.bytes = RUN_BYTES
        self.version = 0
        self.row: list[Any] = []  # replaced whole on every change, never changed in place
        self.open_spend: tuple[int, int, int, float | None, int] = (0, 0, 0, None, 0)  # loops under way that acted


class LiveReport(Tally):
    """See the module doc. `on_evict(reason, count)` is told of runs forgotten ("capacity": past
    `max_sessions`; "bytes": past `max_bytes`), after the lock is released."""

    def __init__(self, *, max_sessions: int = LIVE_SESSIONS, steps: int = LIVE_STEPS, verdicts: int = LIVE_VERDICTS,
                 episodes: int = LIVE_EPISODES, max_bytes: int = LIVE_BYTES, lookahead: int = LOOKAHEAD_CALLS,
                 on_evict: Callable[[str, int], None] | None = None) -> None:
        super().__init__(lookahead)
        self.max_sessions = max_sessions
        self.max_steps = steps
        self.max_verdicts = verdicts
        self.max_episodes = episodes
        self.max_bytes = max_bytes
        self.on_evict = on_evict
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, _LiveRun] = OrderedDict()  # least recently active first
        self._numbers: dict[int, _LiveRun] = {}
        self.held_bytes = 0
        self.run_count = 0
        self.steps_judged = 0
        self.evicted = 0
        self.version = 0

    # --- the writer ------------------------------------------------------------------------------
    def add_step(self, key: str, label: str | None, step: Step, session: str | None = None) -> None:
        step = _bounded_step(step)
        evicted: dict[str, int] = {}
        with self._lock:
            run = self._run(key, label, session)
            self.step(run.state, step)
            self.steps_judged += 1
            summary = run.state.summary
            text = json_for_html(_step_row(step, 0, summary.first_start_ns or 0, None))
            run.steps.append(text)
            self._weigh(run, sys.getsizeof(text) + STEP_BYTES)
            summary.steps_kept = len(run.steps)
            if len(run.steps) > self.max_steps:
                self._drop_step(run)
            self._bound(run, evicted)
            self._changed(run)
        self._tell(evicted)

    def run_ended(self, key: str, label: str | None, session: str | None = None) -> None:
        """One of the run's agent runs ended (its steps stay: the session may go on)."""
        evicted: dict[str, int] = {}
        with self._lock:
            run = self._run(key, label, session)
            run.state.summary.runs += 1
            self._bound(run, evicted)
            self._changed(run)
        self._tell(evicted)

    def _run(self, key: str, label: str | None, session: str | None) -> _LiveRun:
        key = _cut(key, NAME_CHARS)
        run = self._runs.get(key)
        if run is None:
            self.run_count += 1
            run = _LiveRun(RunState(RunSummary(key, _cut_or_none(label, NAME_CHARS), self.run_count)),
                           _cut_or_none(session, NAME_CHARS))
            self._runs[key] = run
            self._numbers[run.state.summary.number] = run
            self.held_bytes += run.bytes
        else:
            self._runs.move_to_end(key)
            if run.state.summary.label is None and label:
                run.state.summary.label = _cut(label, NAME_CHARS)
            if run.session is None and session:
                run.session = _cut(session, NAME_CHARS)
        return run

    def verdict_told(self, run: RunState, verdict: ActingVerdict) -> None:
        live = self._numbers[run.summary.number]
        self._keep_last(live, live.told, verdict, self.max_verdicts)

    def episode_closed(self, run: RunState, episode: Episode) -> None:
        live = self._numbers[run.summary.number]
        self._keep_last(live, live.closed, episode, self.max_episodes)

    def _keep_last(self, run: _LiveRun, items: deque[Any], item: Any, limit: int) -> None:
        """`item` onto one of `run`'s bounded lists, its oldest dropped past `limit`, each weighed."""
        items.append(item)
        self._weigh(run, _object_bytes(item))
        if len(items) > limit:
            self._weigh(run, -_object_bytes(items.popleft()))

    def _weigh(self, run: _LiveRun, change: int) -> None:
        run.bytes += change
        self.held_bytes += change

    def _changed(self, run: _LiveRun) -> None:
        """The run's row made anew (its loops under way that acted counted in, as the page shows them)."""
        self.version += 1
        run.version = self.version
        summary = dataclasses.replace(run.state.summary)
        loops = tokens_in = tokens_out = unpriced = 0
        cost: float | None = None
        for episode in run.state.episodes.values():
            if not episode.acted:
                continue
            spend = episode.spend
            loops += 1
            tokens_in += spend.input_tokens or 0
            tokens_out += spend.output_tokens or 0
            if spend.cost_usd is None:
                unpriced += 1
            else:
                cost = (cost or 0.0) + spend.cost_usd
        add_loops(summary, loops, tokens_in, tokens_out, cost, unpriced)
        run.open_spend = (loops, tokens_in, tokens_out, cost, unpriced)
        run.row = [*_run_row(summary), run.session, run.version]

    def _bound(self, keep: _LiveRun, evicted: dict[str, int]) -> None:
        """Forget the least recently active runs past the bounds (never `keep`, the one just written)."""
        while len(self._runs) > 1 and (len(self._runs) > self.max_sessions or self.held_bytes > self.max_bytes):
            reason = "capacity" if len(self._runs) > self.max_sessions else "bytes"
            key, run = next(iter(self._runs.items()))
            if run is keep:
                break
            del self._runs[key]
            del self._numbers[run.state.summary.number]
            self.held_bytes -= run.bytes
            self.evicted += 1
            evicted[reason] = evicted.get(reason, 0) + 1
        while self.held_bytes > self.max_bytes and len(keep.steps) > 1:  # alone past the bytes: fewer steps
            self._drop_step(keep)

    def _drop_step(self, run: _LiveRun) -> None:
        gone = run.steps.popleft()
        self._weigh(run, -(sys.getsizeof(gone) + STEP_BYTES))
        run.state.summary.steps_dropped += 1
        run.state.summary.steps_kept = len(run.steps)

    def _tell(self, evicted: dict[str, int]) -> None:
        if evicted and self.on_evict is not None:
            for reason, count in evicted.items():
                self.on_evict(reason, count)

    # --- the readers -----------------------------------------------------------------------------
    @property
    def sessions(self) -> int:
        return len(self._runs)

    def index(self, paused: Paused | None = None) -> str:
        """The page's index as JSON (`json_for_html`): `version` (changes with every step), `head` (the
        totals, each rule's, and the bounds) and `runs` (each run's row: the report's, then its
        session, its version and whether its session is paused now), in the order first seen."""
        with self._lock:
            runs = list(self._runs.values())
            rules = [dataclasses.replace(totals, actions=dict(totals.actions)) for totals in self.rules.values()]
            version, steps_judged, evicted, held = self.version, self.steps_judged, self.evicted, self.held_bytes
            rows = [(run.row, run.open_spend) for run in runs]  # (each replaced whole by the writer: read once)
        totals = Tally()
        totals.rules = {(rule.guard, rule.rule): rule for rule in rules}
        total = totals.totals()
        for _, open_spend in rows:  # loops under way count too
            add_loops(total, *open_spend)
        head = {
            "title": "otelguard serve", "live": True, "content": True, "files": [], "summary": [], "coverage": [],
            "incomplete": False,
            "counts": {"sessions": len(rows), "steps": steps_judged, "evicted": evicted, "held_bytes": held},
            "bounds": {"sessions": self.max_sessions, "steps": self.max_steps, "bytes": self.max_bytes},
            "rules": [_rule_row(rule) for rule in sorted(rules, key=lambda rule: (rule.guard, rule.rule))],
            "totals": _rule_row(total),
        }
        out = [[*row, _paused(paused, row[16])] for row, _ in sorted(rows, key=lambda entry: entry[0][0])]
        return json_for_html({"version": version, "head": head, "runs": out})

    def run(self, number: int, paused: Paused | None = None) -> str | None:
        """One run as JSON: its row (as in `index`), its acting verdicts (told, then waiting), its loops
        acted on (ended, then under way) and its kept steps, oldest first; None for a run not held."""
        with self._lock:
            live = self._numbers.get(number)
            if live is None:
                return None
            state = live.state
            row = live.row
            steps = list(live.steps)
            verdicts = [dataclasses.replace(v) for v in (*live.told, *state.pending)]
            episodes = [dataclasses.replace(e) for e in (*live.closed, *state.episodes.values()) if e.acted]
        for verdict in verdicts:  # a loop verdict's spend: its loop's, as far as it went
            if verdict.loop_key is not None:
                verdict.loop_spend = next((e.spend for e in reversed(episodes) if e.key == verdict.loop_key
                                           and e.first_step <= verdict.step <= e.last_step), None)
        verdicts.sort(key=lambda v: (v.step, v.id))
        episodes.sort(key=lambda e: e.first_step)
        return ('{"run":' + json_for_html([*row, _paused(paused, row[16])])
                + ',"verdicts":' + json_for_html([_verdict_row(v) for v in verdicts])
                + ',"episodes":' + json_for_html([_episode_row(e) for e in episodes])
                + ',"steps":[' + ",".join(steps) + "]}")


def _paused(paused: Paused | None, session: str | None) -> bool:
    return bool(paused is not None and session and paused(session))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _cut_or_none(text: str | None, limit: int) -> str | None:
    return None if text is None else _cut(text, limit)


def _text(text: Text | None) -> Text | None:
    if text is None or len(text.head) <= CONTENT_CHARS:
        return text
    return Text(text.head[:CONTENT_CHARS], text.length)


def _bounded_step(step: Step) -> Step:
    """The step with its names, description, content and messages cut to what is kept."""
    verdicts = tuple(_bounded_verdict(verdict) for verdict in step.verdicts)
    return dataclasses.replace(
        step, span_name=_cut(step.span_name, NAME_CHARS), name=_cut_or_none(step.name, NAME_CHARS),
        what=_cut(step.what, WHAT_CHARS), arguments=_text(step.arguments), output=_text(step.output), verdicts=verdicts)


def _bounded_verdict(verdict: StepVerdict) -> StepVerdict:
    loop = verdict.loop
    if loop is not None and len(loop.key) > NAME_CHARS:
        loop = dataclasses.replace(loop, key=_cut(loop.key, NAME_CHARS))
    return dataclasses.replace(
        verdict, guard=_cut(verdict.guard, NAME_CHARS), verdict=_cut(verdict.verdict, NAME_CHARS),
        rule=_cut(verdict.rule, NAME_CHARS), action=_cut(verdict.action, NAME_CHARS),
        message=_cut_or_none(verdict.message, CONTENT_CHARS), counts=_cut(verdict.counts, NAME_CHARS),
        evidence=verdict.evidence[-16:], loop=loop)


def _object_bytes(value: ActingVerdict | Episode) -> int:
    """A verdict's or loop's size as counted against `max_bytes`: its strings, and `OBJECT_BYTES`."""
    size = OBJECT_BYTES + 8 * len(getattr(value, "evidence", ()))
    for entry in dataclasses.fields(value):
        item = getattr(value, entry.name)
        if isinstance(item, str):
            size += sys.getsizeof(item)
    return size
