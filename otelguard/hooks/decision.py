"""The hook's local path: one call judged against its session's history (see `command`).

The session's recent calls are replayed from the local history (`replay`) into a fresh engine, the
new call is judged, and the history gets the call, all under the history's write lock (parallel calls
take turns). Input the CLI does not document, an invalid config, a locked or unreadable history, or
any error of otelguard's own allows the call (nothing printed) and is written to the log.

A paused session (`otelguard hook pause`, `OTELGUARD_DISABLE=1`, or a pause the caller knows of:
`otelguard serve`'s) is judged and recorded the same; its verdicts are marked paused, logged, sent,
and nothing is printed.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable

from ..model.actions import Action
from ..engine import GuardEngine
from ..engine.loop_spend import LoopStep
from ..model.records import Verdict
from ..runtime.terminal import printable
from . import hook_config, log, paths
from .answers import Decision, render
from .history import HistoryError, HookHistory, StoredEvent, is_corrupt, set_aside
from .payload import MAX_DEPTH, POST, PRE, HookEvent, read
from .replay import SessionReplay

_REMIND_RANK = Action.REMIND.rank


def _never(session: str) -> bool:
    return False


def answer(cli: str, data: bytes, *, paused: Callable[[str], bool] = _never) -> str:
    """What `otelguard hook <cli>` prints for this hook input (`otelguard serve`'s `POST /v1/hook/<cli>`).
    `paused(session)`: a pause the caller knows of, besides the history's and the environment's."""
    return answer_with_call(cli, data, paths.log_path(), paused=paused)[0]


def answer_with_call(cli: str, data: bytes, log_path: str, *, paused: Callable[[str], bool] = _never,
                     ) -> tuple[str, HookEvent | None, tuple[Verdict, ...], tuple[LoopStep, ...]]:
    """(what to print, the call, its verdicts, their loops' spend)."""
    try:
        event, too_deep = read(cli, data)
    except ValueError as error:  # not JSON, or not the JSON the CLI documents (PayloadError)
        log.write(log_path, "ERROR", f"{cli}: unreadable hook input, call allowed: {printable(str(error))}")
        return "", None, (), ()
    if too_deep:
        log.write(log_path, "WARNING", f"{cli} session {printable(event.session)}: hook input nested deeper than "
                  f"{MAX_DEPTH} levels; its deeper values are judged as their JSON text")
    try:
        decision, verdicts, loop_steps = decide(event, paused=paused)
    except hook_config.HookConfigError as error:
        log.write(log_path, "ERROR", f"invalid config, every call is allowed until it is fixed: {error}")
        return "", event, (), ()
    except HistoryError as error:
        log.write(log_path, "ERROR", f"no history, every call is allowed until it is fixed: {printable(str(error))}")
        return "", event, (), ()
    except Exception as error:
        if isinstance(error, sqlite3.DatabaseError) and is_corrupt(error):
            aside = set_aside(paths.db_path())
            log.write(log_path, "ERROR", f"the history was damaged ({error}), set aside as {aside}; call allowed")
            return "", event, (), ()
        import traceback

        from ..runtime.containment import raise_internal_errors

        if raise_internal_errors():  # the project's own tests: a bug fails them
            raise
        log.write(log_path, "ERROR", f"internal error, call allowed ({cli} {event.phase}):\n" + traceback.format_exc())
        return "", event, (), ()
    acted = [verdict for verdict in verdicts if verdict.action != Action.NONE]
    if acted:
        log.write(log_path, "INFO", f"{cli} session {printable(event.session)}, {event.phase} "
                  f"{printable(event.tool)}: " + "; ".join(
                      f"{v.guard}/{v.rule} {v.action}" + (f" at call {v.repeat_count}" if v.repeat_count else "")
                      + _loop_spend(v, loop_steps) + (" (paused: not delivered)" if v.paused else "")
                      for v in acted))
    return render(event.cli, event.hook_event_name, decision), event, verdicts, loop_steps


def _loop_spend(verdict: Verdict, loop_steps: tuple[LoopStep, ...]) -> str:
    """What the verdict's loop spent, as the log says it: a CLI's hooks see its tool calls only, so
    its tokens are unknown here (its telemetry, through `otelguard serve`, tells them)."""
    step = next((step for step in loop_steps if step.verdict is verdict), None)
    if step is None:
        return ""
    spend = step.spend
    if spend.input_tokens is None:
        return f" (loop spend unknown: {spend.unpriced})"
    cost = f"${spend.cost_usd:.4f}" if spend.cost_usd is not None else f"not priced: {spend.unpriced}"
    return f" (loop spent {spend.input_tokens} tokens in, {spend.output_tokens} out, {cost})"


def decide(event: HookEvent, *, paused: Callable[[str], bool] = _never,
           ) -> tuple[Decision, tuple[Verdict, ...], tuple[LoopStep, ...]]:
    """The local path: judge `event` against its session's history: the decision, the verdicts and
    their loops' spend."""
    history = HookHistory(paths.db_path())
    try:
        engine = GuardEngine(hook_config.load(history, paths.config_path(), event.cli), max_agents=64, idle_ttl_s=None,
                             max_open_spans=4096)  # one session a process
        if paths.disabled() or paused(event.session) or history.is_paused(event.cli, event.session):
            engine.pause(event.session)  # judged as ever; the engine marks its verdicts, nothing is said
        with history.locked():
            events = history.events(event.cli, event.session)
            if event.call_id is not None and any(stored.call_id == event.call_id and stored.phase == event.phase
                                                 for stored in events):
                return Decision(), (), ()  # the same hook again (installed in both user and project settings)
            call_id = event.call_id or _paired(events, event) or f"otelguard-{os.urandom(8).hex()}"
            replay = SessionReplay(engine, event.cli, event.session)
            replay.replay(events)
            if event.phase == PRE:
                started = replay.start(event.run, call_id, event.tool, event.arguments)
                history.append(event, call_id)
                block = started.tool.block if started is not None and started.tool is not None else None
                if block is None:
                    return Decision(), (), ()
                # The CLI answers the call with the reason as its error: that is the call's result.
                blocked = HookEvent(event.cli, POST, event.session, event.tool, event.arguments, event.run,
                                    call_id, block.message, failed=True)
                history.append(blocked, call_id, blocked=True)
                return Decision(block=block.message), (block,), ()
            judged = replay.end(event.run, call_id, event.tool, event.arguments, event.result, event.failed,
                                event.duration_ms)
            history.append(event, call_id)
            if judged is None:
                return Decision(), (), ()
            return decision_after(judged.verdicts), judged.verdicts, judged.loop_steps
    finally:
        history.close()


def decision_after(verdicts: tuple[Verdict, ...]) -> Decision:
    """After a call: one message for the model, the guards' texts joined without repeats; a cancel
    among them stops the agent instead. A paused verdict says nothing."""
    reacting = [v for v in verdicts if v.message and not v.paused and Action.parse(v.action).rank >= _REMIND_RANK]
    if not reacting:
        return Decision()
    text = "\n\n".join(dict.fromkeys(v.message for v in reacting if v.message))
    if any(v.action == Action.CANCEL for v in reacting):
        return Decision(stop=text)
    return Decision(context=text)


def _paired(events: list[StoredEvent], event: HookEvent) -> str | None:
    """For a CLI without call ids (Gemini CLI): the oldest call still open with the same tool and
    arguments is the one that ended."""
    if event.phase != POST:
        return None
    ended = {stored.call_id for stored in events if stored.phase == POST}
    for stored in events:
        if (stored.phase == PRE and stored.call_id not in ended and stored.tool == event.tool
                and stored.arguments == event.arguments):
            return stored.call_id
    return None


def reset(session: str) -> int:
    history = HookHistory(paths.db_path())
    try:
        return history.reset(session)
    finally:
        history.close()


def pause(cli: str, session: str | None) -> str | None:
    """Pause one session of `cli` (None: the one that called a tool last); the session paused, or
    None when the CLI has none in the history."""
    history = HookHistory(paths.db_path())
    try:
        session = session or history.latest_session(cli)
        if session is not None:
            history.pause(cli, session)
        return session
    finally:
        history.close()


def resume(cli: str | None, session: str | None) -> list[tuple[str, str]]:
    """End pauses (see `HookHistory.resume`); the (cli, session) resumed."""
    history = HookHistory(paths.db_path())
    try:
        return history.resume(cli, session)
    finally:
        history.close()
