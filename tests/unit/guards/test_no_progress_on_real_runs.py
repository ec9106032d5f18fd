"""`no-progress` on real shapes: whole real runs (tests/realruns) whose reminders were labelled, and
the failure records of the sources that report them differently (Claude Code's hooks and telemetry,
Gemini CLI's `error` field, an OpenInference exception event).

Each mechanism is pinned by a shape on which today's rule and the rule before it disagree:
- a failure is judged by what it printed, not its status (`exit code 1` is no error of its own);
- a failure that printed nothing is no evidence of the same error;
- error-loop needs the same error from near-identical arguments;
- the numbers that carry progress are kept, the tail of a long output is read;
- same-result and error-loop remind once per pattern; the cycle rules still escalate.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hook_support import CliSession, answer, hook
from no_progress_support import replay
from otel_support import FIXTURES
from realruns_support import TRACES

from otelguard.analyzer import analyze
from otelguard.otlp.json_spans import iter_spans
from otelguard.conventions.agent_clis import CliToolCall, as_tool_span
from otelguard.engine import GuardEngine
from otelguard.model.records import SpanView, Status


def acting(file: str) -> list[tuple[int, str, str]]:
    """(step, rule, action) of every verdict that asks for something, on one real run."""
    return [(row.step.number, row.verdict.rule, row.verdict.action)
            for row in analyze([TRACES / file]).verdicts if row.verdict.action != "none"]


# --- whole real runs --------------------------------------------------------------------------------


def test_reruns_after_installing_what_was_missing_are_not_reminded():
    """pvlib-1072: `python reproduce_issue.py` fails on numpy, then pytz, then scipy, a `pip install`
    between each: another error each time (reminded at step 28 when a failure was its status)."""
    assert acting("deepseek_chat_dev__pvlib__pvlib-python-1072.otlp.jsonl.gz") == []


@pytest.mark.parametrize("file", [
    "deepseek_chat_dev_rerun__marshmallow-code__marshmallow-1359.otlp.jsonl.gz",  # greps that found nothing
    "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.otlp.jsonl.gz",  # git-log searches that found nothing
    "deepseek_lite_dev__sqlfluff__sqlfluff-1625.otlp.jsonl.gz",  # negative answers, exit 1 and 123
])
def test_searches_that_found_nothing_are_no_error_loop(file):
    assert acting(file) == []


def test_the_same_edit_on_the_same_reverted_file_is_reminded():
    """marshmallow-1343 (rerun): `git checkout src/marshmallow/schema.py`, the identical `sed -i
    '895,897d'`, the same broken block, three times: the labelled stuck episode (steps 180-204)."""
    assert acting("deepseek_chat_dev_rerun__marshmallow-code__marshmallow-1343.otlp.jsonl.gz") == [
        (198, "same-result", "remind")]


# --- mini-swe-agent's shell failures, one by one -------------------------------------------------


def shell(command: str, exit_code: int, output: str) -> dict[str, Any]:
    """A call as the real runs record it: the observation with its exit code, an ERROR status `exit
    code N` when it is not 0."""
    result = f"<returncode>{exit_code}</returncode>\n<output>\n{output}</output>"
    return {"tool": "bash", "args": {"command": command}, "result": result,
            "error": f"exit code {exit_code}" if exit_code else None}


def acted(calls: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(n, v.rule, v.action) for n, per in enumerate(replay(GuardEngine(), calls), start=1) for v in per
            if v.guard == "no-progress" and v.action != "none"]


NO_ASGIREF = ("Traceback (most recent call last):\n  File \"/testbed/django/utils/timezone.py\", line 10, in <module>\n"
              "    from asgiref.local import Local\nModuleNotFoundError: No module named 'asgiref'\n")
NO_PYTEST = "/opt/miniconda3/bin/python: No module named pytest\n"


def test_different_commands_failing_alike_are_no_error_loop():
    """Three ways of running the tests, each failing on the same missing module: three approaches."""
    calls = [shell("python reproduce_issue.py", 1, NO_ASGIREF),
             shell("python -m django test ordering --settings=test_settings", 1, NO_ASGIREF),
             shell("cd tests && python runtests.py ordering", 1, NO_ASGIREF)]
    assert acted(calls) == []


def test_a_command_retried_with_a_flag_changed_and_failing_alike_is_an_error_loop():
    calls = [shell("python -m pytest tests/ordering/tests.py -x", 1, NO_PYTEST),
             shell("python -m pytest tests/ordering/tests.py -xv", 1, NO_PYTEST),
             shell("python -m pytest tests/ordering/tests.py -x -q", 1, NO_PYTEST)]
    assert acted(calls) == [(3, "error-loop", "remind")]


def test_a_failure_that_printed_nothing_is_no_evidence():
    """The same grep finding nothing (exit 1, no output), an edit between each: no same result, no
    same error (before: the status `exit code 1` was both)."""
    grep = shell('grep -n "def pre_save" django/db/models/fields/related.py', 1, "")
    calls = []
    for n in range(3):
        calls += [grep, shell(f"sed -i 's/old{n}/new{n}/' django/db/models/fields/related.py", 0, "")]
    assert acted(calls) == []


def test_a_test_run_whose_summary_moved_on_is_progress():
    """The same long test run after each fix: its banner and progress lines are alike, its summary is
    not (read at the tail of a long output)."""
    head = "".join(f"test_case_{n} (tests.TestOrdering) ... ok\n" for n in range(120))
    runs = [shell("python tests/runtests.py ordering", 1, head + f"FAILED (failures={k})\n") for k in (3, 2, 1)]
    edits = [shell(f"sed -i '{n}d' django/db/models/sql/compiler.py", 0, "") for n in (40, 41, 42)]
    assert acted([call for pair in zip(runs, edits) for call in pair]) == []


def test_a_rerun_whose_output_differs_only_in_timings_and_addresses_is_the_same_result():
    def run(n: int) -> dict[str, Any]:
        return shell("python reproduce_issue.py", 0, f"<Schema object at 0x7f{n}3a9c1d0e80>\nresult: {{'bar': None}}\n"
                                                      f"took 0.0{n}1s\n")
    calls = [run(0), shell("cat reproduce_issue.py", 0, "print(schema.load(data))\n"), run(1),
             shell("grep -n load src/schema.py", 0, "12: def load(self):\n"), run(2)]
    assert acted(calls) == [(5, "same-result", "remind")]


def test_same_result_reminds_once_however_long_it_goes_on_and_a_cycle_still_escalates():
    checkout = shell("git checkout src/schema.py", 0, "Updated 1 path from the index\n")
    calls = []
    for n in range(8):
        calls += [checkout, shell(f"sed -n '{890 + n},{910 + n}p' src/schema.py", 0, f"line {n}\n")]
    assert acted(calls) == [(5, "same-result", "remind")]
    pair = [shell("cat a.py", 0, "a\n"), shell("cat b.py", 0, "b\n")]
    assert acted(pair * 5) == [(6, "cycle", "remind"), (10, "cycle", "steer")]


# --- the sources that report a failure differently -------------------------------------------------

STDERR = "Traceback (most recent call last):\n  File \"app.py\", line 3\nImportError: cannot import name 'Client'\n"


@pytest.mark.parametrize("cli", ["claude-code", "gemini-cli"])
def test_a_cli_hooks_failure_is_judged_by_its_error_and_output(cli, hook_state):
    """Claude Code's PostToolUseFailure `error`, Gemini CLI's `error` field beside its output: the
    same error of a near-identical command is an error loop; three failures that said only their
    exit status are not."""
    session = CliSession(cli)
    tool = "Bash" if cli == "claude-code" else "run_shell_command"

    def fail(command: str, said: str) -> str | None:
        call_id = f"{command}-{said[:5]}"
        payload = session.post(tool, {"command": command}, said, call_id=call_id, failed=True)
        if cli == "gemini-cli":
            payload["tool_response"] = {"llmContent": said, "returnDisplay": said,
                                        "error": {"message": "Command exited with code 1", "type": "shell"}}
        return answer(cli, hook(cli, payload)).context

    said = [fail(command, STDERR if cli == "gemini-cli" else f"Exit code 1\n{STDERR}")
            for command in ("python app.py", "python app.py -v", "python  app.py -v")]
    assert said[:2] == [None, None] and said[2] is not None and "keeps failing with the same error" in said[2]
    quiet = [fail(command, "Exit code 1") for command in ("ls missing", "cat missing.txt", "stat nothing")]
    assert quiet == [None, None, None]


def test_an_openinference_exception_event_is_the_error():
    """A captured LangGraph tool span that raised (its exception event): retried with near-identical
    arguments, the same exception is an error loop; with other arguments, it is not."""
    (failed,) = [span for span in iter_spans(FIXTURES / "openinference-langchain-langgraph-tool-error.otlp.jsonl")
                 if isinstance(span, SpanView) and span.status is Status.ERROR
                 and span.attributes.get("openinference.span.kind") == "TOOL"]

    def retried(inputs: list[str]) -> list[tuple[int, str, str]]:
        engine, out = GuardEngine(), []
        run = SpanView("invoke_agent graph", 7, 1, None, {"gen_ai.operation.name": "invoke_agent",
                                                          "gen_ai.agent.name": "graph"})
        engine.start(run)
        for n, value in enumerate(inputs, start=1):
            span = SpanView(failed.name, 7, 100 + n, 1, {**failed.attributes, "input.value": value},
                            failed.events, failed.status, failed.status_message)
            engine.start(span)
            judged = engine.end(span)
            out += [(n, v.rule, v.action) for v in (judged.verdicts if judged else ()) if v.action != "none"]
        return out

    base = failed.attributes["input.value"]
    assert retried([base + ", France", base + ",France", base + " , France"]) == [(3, "error-loop", "remind")]
    assert retried([json.dumps({"city": city}) for city in ("Paris", "Lisbon", "Tokyo")]) == []


def test_where_the_source_reports_no_output_only_identical_arguments_make_an_error_loop():
    """Claude Code's telemetry says `success: false` and nothing more: the same command failing
    between other calls is an error loop; near-identical commands are not told apart from new ones."""
    def calls(commands: list[str]) -> list[tuple[int, str, str]]:
        engine, out = GuardEngine(), []
        for n, command in enumerate(commands, start=1):
            for tool, arguments, succeeded in (("Bash", command, False), ("Read", f'{{"file_path":"f{n}.py"}}', True)):
                span = as_tool_span(CliToolCall("claude-code", "session-1", f"{tool}-{n}", tool,
                                                json.dumps({"command": arguments}) if tool == "Bash" else arguments,
                                                succeeded, None, n * 1000, "logs"))
                engine.start(span)
                judged = engine.end(span)
                out += [(n, v.rule, v.action) for v in (judged.verdicts if judged else ())
                        if v.guard == "no-progress" and v.action != "none"]
        return out

    assert calls(["make test"] * 3) == [(3, "error-loop", "remind")]
    assert calls(["make test", "make test -j2", "make test -j4"]) == []
