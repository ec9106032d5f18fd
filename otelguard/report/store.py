"""A report's data as it comes, kept on disk so that memory does not grow with the input.

A private temporary SQLite database (`sqlite3.connect("")`: on disk, deleted when closed) holds each
run's summary, its steps (with their content, up to `model.CONTENT_CHARS` a field), the verdicts that
acted and the loops acted on. Memory holds the `_LIVE_RUNS` most recently active runs' summaries,
their loops under way and their verdicts still waiting to be told stopped or continued, and the
totals per rule.

The steps of a run are dropped when one of its agent runs ends without any verdict having acted: the
report draws a timeline only for runs with an acting verdict, and lists the others with their counts.

Loops are stepped as `analyzer.results` steps its `Loop`s (both from the engine's `LoopStep`s): a
step that starts a loop replaces the run's loop of that key (kept if it acted), any other step of the
key goes on with it; so a loop here has the analyzer's first and last step and spend.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from .model import LOOKAHEAD_CALLS, ActingVerdict, Episode, RuleTotals, RunSummary, Step, StepVerdict, add_loops

_LIVE_RUNS = 1024
_BATCH = 1000
_PICKLE = pickle.HIGHEST_PROTOCOL
STOPPED, CONTINUED = "stopped", "continued"


@dataclass(slots=True)
class RunState:
    """A run as it is filled: its summary, its loops under way and its acting verdicts still waiting to
    be told stopped or continued."""

    summary: RunSummary
    episodes: dict[str, Episode] = field(default_factory=dict)  # under way, by loop key
    pending: list[ActingVerdict] = field(default_factory=list)  # waiting for their next calls
    verdicts: int = 0  # acting verdicts numbered so far

    @property
    def open(self) -> bool:
        return bool(self.episodes or self.pending)


class Tally:
    """How a run's steps make its counts, loops and acting verdicts, shared by the stores (`ReportStore`
    on disk, `report.live.LiveReport` in memory): `step` and `end` count into the run's summary and the
    totals per rule, and hand each verdict once told (`verdict_told`) and each loop acted on once closed
    (`episode_closed`) to the store, which keeps them as it does."""

    def __init__(self, lookahead: int = LOOKAHEAD_CALLS) -> None:
        self.lookahead = lookahead
        self.rules: dict[tuple[str, str], RuleTotals] = {}

    def verdict_told(self, run: RunState, verdict: ActingVerdict) -> None:
        raise NotImplementedError

    def episode_closed(self, run: RunState, episode: Episode) -> None:
        raise NotImplementedError

    def step(self, run: RunState, step: Step) -> None:
        summary = run.summary
        if step.kind == "model":
            summary.model_calls += 1
        else:
            summary.tool_calls += 1
        if step.start_ns and (summary.first_start_ns is None or step.start_ns < summary.first_start_ns):
            summary.first_start_ns = step.start_ns
        if step.end_ns and (summary.last_end_ns is None or step.end_ns > summary.last_end_ns):
            summary.last_end_ns = step.end_ns
        if run.pending:
            self._look_ahead(run, step)
        for verdict in step.verdicts:
            if verdict.loop is not None:
                self._step_loop(run, step.number, verdict)
            if verdict.acting:
                self._acted(run, step, verdict)
            elif not verdict.counting:
                summary.flagged += 1

    def end(self, run: RunState) -> None:
        """No step of the run will come: its loops end, its verdicts still waiting are told by the
        calls they had (fewer than `lookahead`: stopped)."""
        for episode in run.episodes.values():
            self._close(run, episode)
        run.episodes.clear()
        for verdict in run.pending:
            self._resolve(run, verdict, STOPPED)
        run.pending.clear()

    def _look_ahead(self, run: RunState, step: Step) -> None:
        """A later call of a waiting verdict's kind: it continues the verdict's loop (a step of the
        same loop that did not start a new one), or counts towards `lookahead` calls that did not."""
        going_on = {verdict.loop.key for verdict in step.verdicts if verdict.loop is not None and not verdict.loop.started}
        waiting = []
        for verdict in run.pending:
            if verdict.kind != step.kind:
                waiting.append(verdict)
                continue
            verdict.calls_after += 1
            if verdict.loop_key in going_on:
                self._resolve(run, verdict, CONTINUED)
            elif verdict.calls_after >= self.lookahead:
                self._resolve(run, verdict, STOPPED)
            else:
                waiting.append(verdict)
        run.pending = waiting

    def _step_loop(self, run: RunState, number: int, verdict: StepVerdict) -> None:
        mark = verdict.loop
        assert mark is not None
        episode = None if mark.started else run.episodes.get(mark.key)
        if episode is None:
            previous = run.episodes.pop(mark.key, None)
            if previous is not None:
                self._close(run, previous)
            episode = Episode(mark.key, verdict.guard, verdict.verdict, verdict.rule, number,
                              min((number, *verdict.evidence)), number, mark.spend)
            run.episodes[mark.key] = episode
        else:
            episode.last_step, episode.spend = number, mark.spend
            if verdict.evidence:
                episode.evidence_step = min(episode.evidence_step, *verdict.evidence)
        episode.acted = mark.acted

    def _close(self, run: RunState, episode: Episode) -> None:
        """A loop that will not go on: kept (and counted) if a verdict of it acted."""
        if not episode.acted:
            return
        self.episode_closed(run, episode)
        spend = episode.spend
        summary = run.summary
        totals = self._rule(episode.guard, episode.rule)
        for counts in (summary, totals):
            add_loops(counts, 1, spend.input_tokens or 0, spend.output_tokens or 0, spend.cost_usd,
                      int(spend.cost_usd is None))

    def _acted(self, run: RunState, step: Step, verdict: StepVerdict) -> None:
        summary = run.summary
        summary.acting += 1
        run.verdicts += 1
        acting = ActingVerdict(summary.number, run.verdicts, step.number, step.kind, verdict.guard, verdict.verdict,
                               verdict.rule, verdict.action, verdict.message, verdict.evidence, verdict.counts,
                               verdict.loop.key if verdict.loop is not None else None)
        totals = self._rule(verdict.guard, verdict.rule)
        totals.acting += 1
        totals.actions[verdict.action] = totals.actions.get(verdict.action, 0) + 1
        if acting.loop_key is None:  # not a loop's verdict (a timeout): nothing to stop
            self.verdict_told(run, acting)
        else:
            run.pending.append(acting)

    def _resolve(self, run: RunState, verdict: ActingVerdict, outcome: str) -> None:
        verdict.outcome = outcome
        totals = self._rule(verdict.guard, verdict.rule)
        if outcome == STOPPED:
            totals.stopped += 1
        else:
            totals.continued += 1
        self.verdict_told(run, verdict)

    def _rule(self, guard: str, rule: str) -> RuleTotals:
        totals = self.rules.get((guard, rule))
        if totals is None:
            totals = self.rules[guard, rule] = RuleTotals(guard, rule)
        return totals

    def totals(self) -> RuleTotals:
        """Every rule's totals summed (guard and rule empty)."""
        out = RuleTotals("", "")
        for totals in self.rules.values():
            out.acting += totals.acting
            out.stopped += totals.stopped
            out.continued += totals.continued
            add_loops(out, totals.loops, totals.input_tokens, totals.output_tokens, totals.cost_usd, totals.unpriced)
            for action, n in totals.actions.items():
                out.actions[action] = out.actions.get(action, 0) + n
        return out


class ReportStore(Tally):
    """Fill with `add_step` and `run_ended` in the order the driver judges; `finish` once; then read
    `runs`, `verdicts`, `steps` and `episodes`. Not thread-safe (one report)."""

    def __init__(self, lookahead: int = LOOKAHEAD_CALLS) -> None:
        super().__init__(lookahead)
        self._db = sqlite3.connect("", isolation_level=None, check_same_thread=False)  # (never used at once)
        self._db.executescript(
            """
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE runs (key TEXT PRIMARY KEY, number INTEGER, open INTEGER, data BLOB);
            CREATE INDEX runs_by_number ON runs (number);
            CREATE TABLE steps (run INTEGER, data BLOB);
            CREATE INDEX steps_by_run ON steps (run);
            CREATE TABLE verdicts (run INTEGER, step INTEGER, id INTEGER, data BLOB);
            CREATE INDEX verdicts_by_run ON verdicts (run, step, id);
            CREATE TABLE episodes (run INTEGER, key TEXT, first INTEGER, last INTEGER, data BLOB);
            CREATE INDEX episodes_by_run ON episodes (run, key, first);
            """
        )
        self._live: OrderedDict[str, RunState] = OrderedDict()  # least recently active first
        self._steps: list[tuple[int, bytes]] = []
        self.run_count = 0
        self._finished = False

    # --- filling -------------------------------------------------------------------------------
    def add_step(self, key: str, label: str | None, step: Step) -> None:
        run = self._run(key, label)
        self.step(run, step)
        run.summary.steps_kept += 1
        self._steps.append((run.summary.number, pickle.dumps(step, _PICKLE)))
        if len(self._steps) >= _BATCH:
            self._flush()

    def run_ended(self, key: str, label: str | None) -> None:
        """One of the run's agent runs ended. Without an acting verdict so far, its steps go (the
        report lists such a run with its counts only)."""
        run = self._run(key, label)
        summary = run.summary
        summary.runs += 1
        if not summary.acting and summary.steps_kept:
            self._flush()
            self._db.execute("DELETE FROM steps WHERE run = ?", (summary.number,))
            summary.steps_dropped += summary.steps_kept
            summary.steps_kept = 0

    def finish(self) -> None:
        """The input is over: loops under way end, verdicts still waiting are told by the calls
        they had (fewer than `lookahead`: stopped)."""
        if self._finished:
            return
        self._finished = True
        self._flush()
        for run in self._live.values():
            self.end(run)
            self._put(run)
        self._live.clear()
        last = -1
        while True:  # the runs put away before the end with loops or verdicts still open
            rows = self._db.execute("SELECT number, data FROM runs WHERE open = 1 AND number > ? ORDER BY number "
                                    "LIMIT ?", (last, _BATCH)).fetchall()
            if not rows:
                break
            for number, data in rows:
                last = number
                run = pickle.loads(data)
                self.end(run)
                self._put(run)

    def _run(self, key: str, label: str | None) -> RunState:
        run = self._live.get(key)
        if run is not None:
            self._live.move_to_end(key)
        else:
            row = self._db.execute("SELECT data FROM runs WHERE key = ?", (key,)).fetchone()
            if row is not None:
                run = pickle.loads(row[0])
            else:
                self.run_count += 1
                run = RunState(RunSummary(key, label, self.run_count))
            self._live[key] = run
            if len(self._live) > _LIVE_RUNS:
                _, oldest = self._live.popitem(last=False)
                self._put(oldest)
        if run.summary.label is None and label:
            run.summary.label = label
        return run

    def _put(self, run: RunState) -> None:
        self._db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)",
                         (run.summary.key, run.summary.number, int(run.open), pickle.dumps(run, _PICKLE)))

    def episode_closed(self, run: RunState, episode: Episode) -> None:
        self._db.execute("INSERT INTO episodes VALUES (?, ?, ?, ?, ?)",
                         (run.summary.number, episode.key, episode.first_step, episode.last_step,
                          pickle.dumps(episode, _PICKLE)))

    def verdict_told(self, run: RunState, verdict: ActingVerdict) -> None:
        self._db.execute("INSERT INTO verdicts VALUES (?, ?, ?, ?)",
                         (verdict.run, verdict.step, verdict.id, pickle.dumps(verdict, _PICKLE)))

    def _flush(self) -> None:
        if self._steps:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT INTO steps VALUES (?, ?)", self._steps)
            self._db.execute("COMMIT")
            self._steps.clear()

    # --- reading, once finished ----------------------------------------------------------------
    def runs(self) -> Iterator[RunSummary]:
        """Every run, in the order first seen."""
        self.finish()
        for (data,) in self._db.execute("SELECT data FROM runs ORDER BY number"):
            yield pickle.loads(data).summary

    def verdicts(self, run: int | None = None) -> Iterator[ActingVerdict]:
        """The acting verdicts (of one run, or of all runs by run), in step order, each with its
        loop's spend in the end."""
        self.finish()
        if run is None:
            rows = self._db.execute("SELECT data FROM verdicts ORDER BY run, step, id")
        else:
            rows = self._db.execute("SELECT data FROM verdicts WHERE run = ? ORDER BY step, id", (run,))
        for (data,) in rows:
            verdict: ActingVerdict = pickle.loads(data)
            if verdict.loop_key is not None:
                row = self._db.execute(
                    "SELECT data FROM episodes WHERE run = ? AND key = ? AND first <= ? AND last >= ? "
                    "ORDER BY first DESC LIMIT 1", (verdict.run, verdict.loop_key, verdict.step, verdict.step)
                ).fetchone()
                if row is not None:
                    verdict.loop_spend = pickle.loads(row[0]).spend
            yield verdict

    def steps(self, run: int) -> Iterator[Step]:
        """A run's kept steps, in order."""
        self.finish()
        for (data,) in self._db.execute("SELECT data FROM steps WHERE run = ? ORDER BY rowid", (run,)):
            yield pickle.loads(data)

    def episodes(self, run: int) -> Iterator[Episode]:
        """A run's loops acted on, by their first step."""
        self.finish()
        for (data,) in self._db.execute("SELECT data FROM episodes WHERE run = ? ORDER BY first", (run,)):
            yield pickle.loads(data)

    def totals(self) -> RuleTotals:
        """Every rule's totals summed (guard and rule empty)."""
        self.finish()
        return super().totals()

    def close(self) -> None:
        self._db.close()
