"""`otelguard hook <cli>`: one tool call's hook, from stdin to the CLI's answer on stdout, exit 0.

The call is judged by the same engine and guards as every driver: the session's recent calls are
replayed from the local history (`replay`), the new call is judged, and the history gets the call,
all under the history's write lock (parallel calls take turns). Harmless by construction: input the
CLI does not document, an invalid config, a locked or unreadable history, or any error of otelguard's
own allows the call (nothing printed) and is written to the log beside the history.

(With `OTELGUARD_URL` set, a later version asks a running `otelguard serve` first and falls back to
this local path: `decide` is where that goes.)
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import BinaryIO, TextIO

from ..actions import Action
from ..engine import GuardEngine
from ..records import Verdict
from . import CLIS, hook_config, paths
from .answers import Decision, render
from .history import HookHistory, StoredEvent
from .payload import POST, PRE, HookEvent, PayloadError, parse
from .replay import SessionReplay

_log = logging.getLogger("otelguard.hooks")
_LOG_MAX_BYTES = 1_000_000
_REMIND_RANK = Action.REMIND.rank
_ENGINE_BOUNDS = {"max_agents": 64, "idle_ttl_s": None, "max_open_spans": 4096}  # one session a process


def run(cli: str, stdin: BinaryIO, stdout: TextIO) -> int:
    """Judge the call on `stdin`, print the answer; always 0 (see the module doc)."""
    began = time.perf_counter()
    _log_to_file()
    event, answer = None, ""
    try:
        event = parse(cli, json.loads(stdin.read()))
        decision, verdicts = decide(event)
        answer = render(event, decision)
        acted = [verdict for verdict in verdicts if verdict.action != Action.NONE]
        if acted:
            _log.info("%s session %s, %s %s: %s", cli, event.session, event.phase, event.tool,
                      "; ".join(f"{v.guard}/{v.rule} {v.action}" + (f" at call {v.repeat_count}" if v.repeat_count else "")
                                for v in acted))
    except (ValueError, PayloadError) as error:  # not the JSON the CLI documents
        _log.error("%s: unreadable hook input, call allowed: %s", cli, error)
    except hook_config.HookConfigError as error:
        _log.error("invalid config, every call is allowed until it is fixed: %s", error)
    except Exception:
        _log.exception("internal error, call allowed (%s %s)", cli, event.phase if event else "?")
    try:
        stdout.write(answer)
        stdout.flush()
    except OSError:
        pass
    _log.debug("%s hook took %.1f ms", cli, (time.perf_counter() - began) * 1000)
    return 0


def decide(event: HookEvent) -> tuple[Decision, tuple[Verdict, ...]]:
    """The local path: judge `event` against its session's history."""
    history = HookHistory(paths.db_path())
    try:
        engine = GuardEngine(hook_config.load(history, paths.config_path()), **_ENGINE_BOUNDS)
        with history.locked():
            events = history.events(event.cli, event.session)
            call_id = event.call_id or _paired(events, event) or f"otelguard-{os.urandom(8).hex()}"
            replay = SessionReplay(engine, event.cli, event.session)
            replay.replay(events)
            if event.phase == PRE:
                started = replay.start(event.run, call_id, event.tool, event.arguments)
                history.append(event, call_id)
                block = started.tool.block if started is not None and started.tool is not None else None
                if block is None:
                    return Decision(), ()
                # The CLI answers the call with the reason as its error: that is the call's result.
                blocked = HookEvent(event.cli, POST, event.session, event.tool, event.arguments, event.run,
                                    call_id, block.message, failed=True)
                history.append(blocked, call_id, blocked=True)
                return Decision(block=block.message), (block,)
            judged = replay.end(event.run, call_id, event.tool, event.arguments, event.result, event.failed,
                                event.duration_ms)
            history.append(event, call_id)
            verdicts = judged.verdicts if judged is not None else ()
            return decision_after(verdicts), verdicts
    finally:
        history.close()


def decision_after(verdicts: tuple[Verdict, ...]) -> Decision:
    """After a call: one message for the model, of the strongest action, texts joined without repeats."""
    reacting = [v for v in verdicts if v.message and Action.parse(v.action).rank >= _REMIND_RANK]
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


def _log_to_file() -> None:
    """otelguard's log records (the hooks' and any contained error's) to the log beside the history,
    rotated at _LOG_MAX_BYTES to one `.1` file (checked once a process: a line or two may land in the
    old file when two hooks rotate at once)."""
    logger = logging.getLogger("otelguard")
    if logger.handlers:
        return
    path = paths.log_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            if path.stat().st_size > _LOG_MAX_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    except OSError:
        handler = logging.StreamHandler(sys.stderr)  # the CLI shows a hook's stderr in its debug log
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if os.environ.get("OTELGUARD_DEBUG") else logging.INFO)
    logger.propagate = False


def main(argv: list[str]) -> int:
    """`otelguard hook <cli>` read from the real stdin (the fast path `otelguard.cli` takes)."""
    if len(argv) != 1 or argv[0] not in CLIS:
        raise ValueError(f"usage: otelguard hook {{{','.join(CLIS)}}}")
    return run(argv[0], sys.stdin.buffer, sys.stdout)
