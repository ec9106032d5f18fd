"""The `otelguard` command (also `python -m otelguard`).

    otelguard analyze FILE... [--config F] [--json] [--fail-on ACTION] [knobs]
    otelguard demo [ARGS...]
    otelguard serve [--http HOST:PORT] [--grpc HOST:PORT] [--metrics HOST:PORT] [--config F] [--forward URL]
    otelguard hook {claude-code,gemini-cli,codex,opencode} | otelguard hook reset SESSION
    otelguard hook pause CLI [SESSION] | otelguard hook resume [CLI [SESSION]]
    otelguard install-hook CLI [--user|--project] [--dry-run] / otelguard uninstall-hook CLI ...

One function per subcommand: `_add_<name>_parser` declares it, `_run_<name>` runs it. `main` never
lets a traceback out: usage errors and unreadable inputs print one line and return 2.

Exit status of `analyze`: 0 (no verdict reaches `--fail-on`, or no `--fail-on`), 1 (a verdict's action
reaches `--fail-on`), 2 (usage error, invalid config, or an input that cannot be analysed at all),
3 (an internal error in otelguard: a bug, please report it), 4 (`--require-complete`: nothing was
judged, or the verdict scope is incomplete). Actions from weakest to strongest:
none < remind < warn < steer < block < abort < break < cancel; `--fail-on remind` fails on any
action at least `remind`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .hooks import CLIS as HOOK_CLIS
from .runtime.terminal import printable, short_repr

PROG = "otelguard"
_MESSAGE_CHARS = 1000  # an error line quotes at most this much of anything
EXIT_OK, EXIT_FAIL_ON, EXIT_USAGE, EXIT_INTERNAL, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
DEBUG_ENV = "OTELGUARD_DEBUG"


class UsageError(Exception):
    """A command-line mistake: reported in one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (never raises, except under OTELGUARD_DEBUG=1)."""
    _tolerant_stdout()
    parser = _build_parser()
    try:
        args, extra = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:  # argparse has printed usage and the error (or the help)
        return _exit_code(exit_)
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.extra = extra
    try:
        with _one_line_logging():
            return run(args)
    except UsageError as error:
        print(f"{PROG} {args.command}: error: {printable(str(error), _MESSAGE_CHARS)}", file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:  # (input past every bound the analyzer keeps, or a machine short of memory)
        print(f"{PROG} {args.command}: error: out of memory: lower the memory bounds (see --help), or give it "
              "more memory", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exit_:  # a sub-parser's error()
        return _exit_code(exit_)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_OK
    except Exception as error:  # a bug in otelguard: one line, the traceback only on request
        if os.environ.get(DEBUG_ENV):
            raise
        print(f"{PROG} {args.command}: internal error: {type(error).__name__}: "
              f"{printable(str(error), _MESSAGE_CHARS)} "
              f"(set {DEBUG_ENV}=1 for the traceback, and please report it)", file=sys.stderr)
        return EXIT_INTERNAL


def _build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    parser = argparse.ArgumentParser(
        prog=PROG, description="Loop guard for LLM agents instrumented with OpenTelemetry.",
        epilog="analyze, hook and install-hook need otelguard alone; demo needs otelguard[demo] and serve "
               "otelguard[serve] (pip install 'otelguard[serve]').",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    _add_analyze_parser(subparsers)
    _add_demo_parser(subparsers)
    _add_serve_parser(subparsers)
    _add_hook_parser(subparsers)
    _add_install_hook_parsers(subparsers)
    return parser


def _exit_code(exit_: SystemExit) -> int:
    code = exit_.code
    if code is None:
        return EXIT_OK
    return code if isinstance(code, int) else EXIT_USAGE


# --- analyze -------------------------------------------------------------------------------------

# knob flag -> (guard id, config field). They override the rows of --config.
_KNOBS = {
    "similarity": ("thinking-loop-guard", "similarity_threshold"),
    "thinking_threshold": ("thinking-loop-guard", "max_thinking_steps"),
    "min_chars": ("thinking-loop-guard", "min_reasoning_chars"),
    "max_fires": ("thinking-loop-guard", "max_fires"),
    "max_repeated_text": ("thinking-loop-guard", "max_repeated_text"),
    "max_repeated_cycle": ("thinking-loop-guard", "max_repeated_cycle_chars"),
    "min_repeated_cycle": ("thinking-loop-guard", "min_repeated_cycle_chars"),
    "repeat_thresholds": ("repeat-tool-reminder", "thresholds"),
}


class _OldSpelling(argparse.Action):
    """A flag's old spelling, kept hidden: sets the new flag's value and says its new name on stderr."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any):
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog}: warning: {option_string} is now {self.new}; the old spelling will go",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def _add_analyze_parser(subparsers: Any) -> None:
    from .otlp.lines import DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_LINE_BYTES
    from .replay.spans import DEFAULT_FLUSH_AFTER_RECORDS, DEFAULT_MAX_BUFFERED_SPANS
    from .engine import DEFAULT_MAX_AGENTS
    from .analyzer.results import (
        DEFAULT_MAX_QUIET_AGENTS,
        DEFAULT_MAX_QUIET_ROWS,
        FAIL_ON_CHOICES,
    )

    parser = subparsers.add_parser(
        "analyze",
        help="replay stored OTLP JSON traces through the guards",
        description=(
            "Replay OTLP JSON trace files (the Collector's file exporter: JSON Lines, or one document; "
            "plain or gzip) through the same conventions and guards as the live processor, and report "
            "per agent what each model and tool step was and what the guards decided, with a coverage "
            "block that says what was not read."
        ),
        epilog=(
            "exit status: 0 ok; 1 a verdict's action reaches --fail-on; 2 usage error, invalid config or "
            "unreadable input; 3 internal error (a bug: please report it); 4 with --require-complete, nothing "
            "was judged or the verdict scope is incomplete. Actions, weakest to strongest: "
            "none < remind < warn < steer < block < abort < break < cancel."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="OTLP JSON trace file(s), .gz allowed; - reads standard input. Log files of "
                             "coding-agent CLIs (Claude Code, Gemini CLI, Codex, opencode) are read beside them")
    parser.add_argument("--config", metavar="F",
                        help="guard config (YAML or JSON, {'guards': [...]}); default: all guards")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--html", metavar="PATH",
                        help="also write one self-contained HTML report (runs, loops, verdicts, timelines) to PATH; "
                             "it holds tool arguments and results")
    parser.add_argument("--html-no-content", action="store_true",
                        help="with --html: leave tool arguments, results, model output and messages out (to share)")
    parser.add_argument("--fail-on", choices=FAIL_ON_CHOICES, metavar="ACTION",
                        help=f"exit 1 when a verdict's action is ACTION or stronger ({', '.join(FAIL_ON_CHOICES)})")
    parser.add_argument("--require-complete", action="store_true",
                        help="exit 4 when nothing was judged or the verdict scope is incomplete (a CI gate must "
                             "not pass on nothing); checked after --fail-on")
    knobs = parser.add_argument_group("guard knobs (override the rows of --config)")
    knobs.add_argument("--similarity", type=float, metavar="X",
                       help="thinking-loop-guard similarity_threshold (0..1)")
    knobs.add_argument("--thinking-threshold", type=int, metavar="N",
                       help="thinking-loop-guard max_thinking_steps (stalled calls before it reacts)")
    knobs.add_argument("--threshold", type=int, dest="thinking_threshold", action=_OldSpelling,
                       new="--thinking-threshold")
    knobs.add_argument("--min-chars", type=int, metavar="N",
                       help="thinking-loop-guard min_reasoning_chars (the config's minimum, 256, applies)")
    knobs.add_argument("--max-fires", type=int, metavar="N", help="thinking-loop-guard max_fires")
    knobs.add_argument("--max-repeated-text", type=int, metavar="N",
                       help="breaker: identical chunks that cut (0 disables)")
    knobs.add_argument("--max-repeated-cycle", type=int, metavar="N",
                       help="breaker: longest cycle period in chars (0 disables)")
    knobs.add_argument("--min-repeated-cycle", type=int, metavar="N", help="breaker: shortest periodic tail in chars")
    knobs.add_argument("--repeat-thresholds", type=_int_list, metavar="N,N,...",
                       help="repeat-tool-reminder thresholds (identical calls that get a reminder), e.g. 3,5,8")
    knobs.add_argument("--thresholds", type=_int_list, dest="repeat_thresholds", action=_OldSpelling,
                       new="--repeat-thresholds")
    limits = parser.add_argument_group("memory bounds (the defaults suit any file size)")
    limits.add_argument("--flush-after", type=_positive_int, default=DEFAULT_FLUSH_AFTER_RECORDS, metavar="N",
                        help="replay a trace whose root never arrives after N records without a span of it "
                             f"(default {DEFAULT_FLUSH_AFTER_RECORDS})")
    limits.add_argument("--max-buffered-spans", type=_positive_int, default=DEFAULT_MAX_BUFFERED_SPANS, metavar="N",
                        help="replay the oldest traces early past N buffered spans "
                             f"(default {DEFAULT_MAX_BUFFERED_SPANS})")
    limits.add_argument("--max-rows", type=_non_negative_int, default=DEFAULT_MAX_QUIET_ROWS, metavar="N",
                        help=f"list at most N steps without a verdict per agent (default {DEFAULT_MAX_QUIET_ROWS})")
    limits.add_argument("--max-agents", type=_positive_int, default=DEFAULT_MAX_QUIET_AGENTS, metavar="N",
                        help=f"list at most N agents without a verdict (default {DEFAULT_MAX_QUIET_AGENTS})")
    limits.add_argument("--max-tracked-agents", type=_positive_int, default=DEFAULT_MAX_AGENTS, metavar="N",
                        help="keep the guard state of at most N agents at once, as the live guard does; agents "
                             "evicted past it are counted and make the verdict scope incomplete "
                             f"(default {DEFAULT_MAX_AGENTS})")
    limits.add_argument("--max-line-bytes", type=_positive_int, default=DEFAULT_MAX_LINE_BYTES, metavar="N",
                        help="refuse (exit 2) a line, or a multi-line JSON document, longer than N bytes "
                             f"(default {DEFAULT_MAX_LINE_BYTES:,})")
    limits.add_argument("--max-decompressed-bytes", type=_positive_int, default=DEFAULT_MAX_DECOMPRESSED_BYTES,
                        metavar="N", help="refuse (exit 2) an input file past N bytes after gzip "
                                          f"(default {DEFAULT_MAX_DECOMPRESSED_BYTES:,})")
    parser.set_defaults(run=_run_analyze, parser=parser)


def _run_analyze(args: argparse.Namespace) -> int:
    from .analyzer import AnalyzerOptions, InputError, ReplayLimits, analyze
    from .analyzer.report import write_json, write_text
    from .errors import ConfigError

    files = list(args.files)
    for item in args.extra:  # argparse leaves files given after an option as extras
        if item.startswith("-") and item != "-":
            args.parser.error(f"unrecognized arguments: {item}")
        files.append(item)
    config = _analyze_config(args)
    options = AnalyzerOptions(
        limits=ReplayLimits(flush_after_records=args.flush_after, max_buffered_spans=args.max_buffered_spans),
        max_quiet_rows=args.max_rows,
        max_quiet_agents=args.max_agents,
        max_tracked_agents=args.max_tracked_agents,
        max_line_bytes=args.max_line_bytes,
        max_decompressed_bytes=args.max_decompressed_bytes,
    )
    if args.html_no_content and not args.html:
        raise UsageError("--html-no-content needs --html PATH")
    html = None
    if args.html:
        from .analyzer.html_report import HtmlReport

        html = HtmlReport(content=not args.html_no_content)
    try:
        analysis = analyze(files, config, options, observe=html.observe if html else None)
    except InputError as error:
        print(f"{PROG} analyze: error: {printable(str(error), _MESSAGE_CHARS)}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as error:
        raise UsageError(str(error)) from None
    if args.json:
        write_json(analysis, sys.stdout, fail_on=args.fail_on)
    else:
        write_text(analysis, sys.stdout, fail_on=args.fail_on)
    sys.stdout.flush()
    if html is not None:
        try:
            html.write(analysis, args.html, fail_on=args.fail_on)
        except OSError as error:
            raise UsageError(f"--html {args.html}: {error.strerror or error}") from None
        finally:
            html.close()
    if args.fail_on and analysis.reached(args.fail_on):
        return EXIT_FAIL_ON
    if args.require_complete and (analysis.coverage.nothing_judged() or analysis.coverage.incomplete()):
        print(f"{PROG} analyze: nothing was judged, or the verdict scope is incomplete (--require-complete): "
              "see the coverage block", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def _analyze_config(args: argparse.Namespace) -> Any:
    """The guard config: --config (or the defaults) with the knob flags applied, validated."""
    from .guards.config import GuardConfig
    from .errors import ConfigError

    try:
        base = GuardConfig.load(args.config) if args.config else GuardConfig()
    except ConfigError as error:
        raise UsageError(f"--config {args.config}: {error}") from None
    knobs = {name: getattr(args, name) for name in _KNOBS if getattr(args, name) is not None}
    if not knobs:
        return base
    data = base.model_dump(mode="json")
    rows = {row["id"]: row for row in data["guards"]}
    for name, value in knobs.items():
        guard_id, key = _KNOBS[name]
        row = rows.get(guard_id)
        flag = "--" + name.replace("_", "-")
        if row is None:
            raise UsageError(f"{flag} sets {guard_id}, which --config {args.config} does not run")
        row.setdefault("config", {})
        row["config"] = dict(row["config"] or {}, **{key: value})
    try:
        return GuardConfig.load(data)
    except ConfigError as error:
        flags = ", ".join("--" + name.replace("_", "-") for name in knobs)
        raise UsageError(f"{error} (set by {flags})") from None


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers separated by commas, e.g. 3,5,8, got {short_repr(text)}") from None


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {short_repr(text)}") from None


# --- demo ----------------------------------------------------------------------------------------


def _add_demo_parser(subparsers: Any) -> None:
    """`otelguard demo [ARGS...]`: every argument goes to `otelguard.demo.run.main(argv) -> int`.

    The demo module (which pulls in an agent framework) is imported only when the command runs, so
    `otelguard analyze` never pays for it; without it, the command fails with a clear message.
    """
    _add_passthrough_parser(subparsers, "demo", _run_demo,
                            "run a scripted agent that falls into each loop, guarded (needs otelguard[demo])")


def _add_passthrough_parser(subparsers: Any, name: str, run: Callable[[argparse.Namespace], int], help: str) -> None:
    """A command whose arguments its own module parses when it runs (`args.passed`): building the
    other commands' parsers imports nothing of it."""
    parser = subparsers.add_parser(
        name, help=help,
        add_help=False,  # --help goes to the command's own parser
        prefix_chars="\0",  # take every argument as-is, options included
    )
    parser.add_argument("passed", nargs="*", metavar="ARGS")
    parser.set_defaults(run=run, parser=parser)


def _run_demo(args: argparse.Namespace) -> int:
    try:
        demo = importlib.import_module("otelguard.demo.run")
    except ModuleNotFoundError as error:
        if error.name in ("otelguard.demo", "otelguard.demo.run"):
            raise UsageError("this installation of otelguard has no demo (otelguard.demo is missing)") from None
        raise UsageError(_missing_extra("demo", error)) from None
    status = demo.main([*args.passed, *args.extra])
    return int(status or 0)


def _missing_extra(extra: str, error: ModuleNotFoundError) -> str:
    """What to install when a command's extra is missing (a missing module of otelguard's own is a bug)."""
    if (error.name or "").split(".")[0] == "otelguard":
        raise error
    return f"needs otelguard[{extra}] (no module named {error.name!r}): pip install 'otelguard[{extra}]'"


# --- serve ---------------------------------------------------------------------------------------


def _add_serve_parser(subparsers: Any) -> None:
    """`otelguard serve`: the guard as an OTLP service (`otelguard.service`, needs otelguard[serve]); its
    options are the service's own parser's."""
    _add_passthrough_parser(subparsers, "serve", _run_serve, "receive OTLP from agents in any language, judge it, "
                            "serve the verdicts (needs otelguard[serve])")


_SERVE_DESCRIPTION = """\
Receive OTLP (HTTP and gRPC) from any agent, judge its spans with the same guards as the live
processor, serve the verdicts as Prometheus metrics, and optionally forward everything.
Needs otelguard[serve].

endpoints:
  --http     POST /v1/traces, /v1/logs, /v1/metrics   OTLP/HTTP, protobuf or JSON
             GET  /v1/verdicts?session=ID            a session's recent verdicts, as JSON
             POST /v1/hook/<cli>                     a coding-agent CLI's hook, answered
  --grpc     the OTLP/gRPC trace, logs and metrics services
  --metrics  GET  /metrics                           the verdicts as Prometheus metrics"""


def _run_serve(args: argparse.Namespace) -> int:
    parser = argparse.ArgumentParser(prog=f"{PROG} serve", description=_SERVE_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # keeps the endpoints' table
    argv = [*args.passed, *args.extra]
    try:
        from .service.command import ServeError, add_arguments, run
    except ModuleNotFoundError as error:
        if "-h" in argv or "--help" in argv:
            parser.epilog = "The otelguard[serve] extra is not installed: pip install 'otelguard[serve]'."
            parser.print_help()
            return EXIT_OK
        raise UsageError(_missing_extra("serve", error)) from None
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except ServeError as error:
        raise UsageError(str(error)) from None


# --- hook ------------------------------------------------------------------------------------------

def _add_hook_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "hook",
        help="judge one tool call of a coding-agent CLI (run by the CLI's hook; see install-hook)",
        description=(
            "Run by a coding-agent CLI before and after every tool call: reads the hook's JSON on stdin, "
            "judges the call with the guards against the session's recent calls (kept in a local SQLite "
            "history), and answers in the CLI's JSON: a reminder as context for the model, a blocked call "
            "as denied. Always exits 0; any error allows the call and is logged beside the history. "
            "`otelguard hook reset SESSION` forgets one session. `otelguard hook pause CLI [SESSION]` pauses "
            "a session (default: the CLI's session that called a tool last): its calls are still judged and "
            "recorded, and nothing is said to the CLI, until `otelguard hook resume [CLI [SESSION]]` (no "
            "argument: every paused session)."
        ),
        epilog="environment: OTELGUARD_CONFIG (default ~/.config/otelguard/config.yaml), OTELGUARD_HOOK_DB "
               "(default ${XDG_STATE_HOME:-~/.local/state}/otelguard/hooks.sqlite3), OTELGUARD_OTLP_ENDPOINT "
               "(send verdicts as OTLP metrics and logs), OTELGUARD_DISABLE=1 in the CLI's environment (pause "
               "its sessions).",
    )
    parser.add_argument("cli", choices=[*HOOK_CLIS, "reset", "pause", "resume"], metavar="CLI",
                        help=f"the CLI whose hook this is ({', '.join(HOOK_CLIS)}), or reset, pause, resume")
    parser.add_argument("operands", nargs="*", metavar="ARG",
                        help="reset SESSION; pause CLI [SESSION]; resume [CLI [SESSION]]")
    parser.set_defaults(run=_run_hook, parser=parser)


def _run_hook(args: argparse.Namespace) -> int:
    operands = [*args.operands, *args.extra]
    if args.cli in HOOK_CLIS:
        if operands:
            args.parser.error("a hook takes no arguments besides the CLI (its input comes on stdin)")
        from .hooks.command import run as run_hook

        return run_hook(args.cli, sys.stdin.buffer, sys.stdout)
    from .hooks import decision

    if args.cli == "reset":
        if len(operands) != 1:
            args.parser.error("usage: otelguard hook reset SESSION")
        removed = decision.reset(operands[0])
        print(f"{PROG} hook reset: {removed} event(s) of session {operands[0]!r} removed")
        return EXIT_OK
    if args.cli == "pause":
        if not 1 <= len(operands) <= 2 or operands[0] not in HOOK_CLIS:
            args.parser.error(f"usage: otelguard hook pause CLI [SESSION] (CLI: {', '.join(HOOK_CLIS)})")
        session = decision.pause(operands[0], operands[1] if len(operands) == 2 else None)
        if session is None:
            print(f"{PROG} hook pause: {operands[0]} has no session in the history yet; name one", file=sys.stderr)
            return EXIT_USAGE
        print(f"{PROG} hook pause: {operands[0]} session {printable(session, 200)} paused: its calls are judged "
              f"and recorded, nothing is said to the CLI (otelguard hook resume {operands[0]} to end it)")
        return EXIT_OK
    if len(operands) > 2 or (operands and operands[0] not in HOOK_CLIS):
        args.parser.error(f"usage: otelguard hook resume [CLI [SESSION]] (CLI: {', '.join(HOOK_CLIS)})")
    resumed = decision.resume(*(operands + [None, None])[:2])
    for cli, session in resumed:
        print(f"{PROG} hook resume: {cli} session {printable(session, 200)} resumed")
    if not resumed:
        print(f"{PROG} hook resume: no paused session to resume")
    return EXIT_OK


def _add_install_hook_parsers(subparsers: Any) -> None:
    for name, install in (("install-hook", True), ("uninstall-hook", False)):
        parser = subparsers.add_parser(
            name,
            help=("write" if install else "remove") + " the CLI's settings entry that runs `otelguard hook <cli>`",
            description=(
                "Merge into the CLI's settings (Claude Code, Gemini CLI, Codex CLI: their settings JSON, and "
                "Codex's [features] hooks = true; opencode: a plugin file) the hook that runs this otelguard "
                "by its absolute path, keeping everything else; installing twice changes nothing."
                if install else
                "Remove otelguard's hook entries (opencode: its plugin file) from the CLI's settings, and nothing else."
            ),
        )
        parser.add_argument("cli", choices=HOOK_CLIS, metavar="CLI", help=", ".join(HOOK_CLIS))
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--user", dest="scope", action="store_const", const="user",
                           help="the user's settings, for every project (the default)")
        where.add_argument("--project", dest="scope", action="store_const", const="project",
                           help="the settings of the project in the current directory")
        parser.add_argument("--dry-run", action="store_true", help="print the changes as a diff; write nothing")
        parser.set_defaults(run=_run_install_hook, parser=parser, install=install, scope="user")


def _run_install_hook(args: argparse.Namespace) -> int:
    from .hooks.install import InstallError, changes

    if args.extra:
        args.parser.error(f"unrecognized arguments: {' '.join(args.extra)}")
    try:
        planned = changes(args.cli, scope=args.scope, install=args.install)
    except InstallError as error:
        raise UsageError(str(error)) from None
    changed = [change for change in planned if change.changed]
    for change in changed:
        if args.dry_run:
            sys.stdout.write(change.diff())
        else:
            change.apply()
            what = "removed" if change.after is None else "written"
            if change.after is not None and change.path.is_symlink():
                what += f" (where the link leads: {change.target})"
            if change.backup is not None:
                what += f"; its previous version is {change.backup}"
            print(f"{PROG} {args.command}: {change.path} {what}")
    if not changed:
        state = "already installed" if args.install else "not installed"
        print(f"{PROG} {args.command}: {args.cli}: otelguard's hook is {state} ({args.scope} settings); nothing to change")
    return EXIT_OK


# --- output ---


class _OneLineFormatter(logging.Formatter):
    """otelguard's internal-error log lines without the traceback (OTELGUARD_DEBUG=1 keeps it)."""

    def format(self, record: logging.LogRecord) -> str:
        text = printable(record.getMessage(), _MESSAGE_CHARS)
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            text += f" ({type(error).__name__}: {printable(str(error), _MESSAGE_CHARS)}; set {DEBUG_ENV}=1 for the traceback)"
        return f"{PROG}: {record.levelname.lower()}: {text}"


@contextmanager
def _one_line_logging() -> Iterator[None]:
    """While a command runs, otelguard's log records reach stderr as one line each."""
    if os.environ.get(DEBUG_ENV):
        yield
        return
    logger = logging.getLogger("otelguard")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter())
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# --- terminal ---------------------------------------------------------------------------------------


def _tolerant_stdout() -> None:
    """Never fail on a console that cannot show a character (the tables use · … ⚠)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):
                pass


def _silence_stdout() -> None:
    # The reader went away (`| head`): point stdout at devnull so the interpreter's final flush is quiet.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
