"""`otelguard analyze` on hostile and huge input (issue 20): nothing lost silently, bounded memory,
one-line refusals past its bounds, output a terminal cannot be fooled by.

Inputs are written by `hostile_inputs` into tmp_path. The default profile writes them small; the
thorough profile (HYPOTHESIS_PROFILE=thorough, as in CI) ten times larger, the largest 50 MB.
Peak memory is the child process's own high-water mark (VmHWM, Linux), read at its end.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hostile_inputs as hostile
from hypothesis_support import PROFILE_VARIABLE, THOROUGH, examples
from otelguard.otlp.lines import LineReader
from otelguard.otlp.json_spans import ReadProblem, iter_spans
from otelguard.cli import main

FULL = os.environ.get(PROFILE_VARIABLE) == THOROUGH
SCALE = 10 if FULL else 1  # the thorough profile's inputs are ten times the default's
MiB = 2**20


def analyze_json(capsys, path: Path, *args: str) -> tuple[int, dict]:
    code = main(["analyze", "--json", str(path), *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def reminders(document: dict) -> int:
    return document["summary"]["findings_by_action"].get("remind", 0)


# --- nothing lost silently ---------------------------------------------------------------------


def test_agents_evicted_past_max_tracked_agents_are_counted_and_make_the_scope_incomplete(tmp_path, capsys):
    """More looping runs open at once than --max-tracked-agents: reminders are lost, and the
    coverage block says so (agents_evicted, verdict_scope_incomplete, a warning in the text report);
    with the bound raised every run gets its reminder and the scope is complete."""
    runs = 300
    path = tmp_path / "concurrent.jsonl"
    hostile.concurrent_looping_runs(path, runs)

    code, bounded = analyze_json(capsys, path, "--max-tracked-agents", "100")
    assert code == 0
    assert reminders(bounded) < runs
    assert bounded["coverage"]["agents_evicted"] > 0
    assert bounded["coverage"]["verdict_scope_incomplete"] is True
    assert "agents-evicted" in {w["code"] for w in bounded["coverage"]["warnings"]}

    assert main(["analyze", str(path), "--max-tracked-agents", "100", "--require-complete"]) == 4
    assert "--max-tracked-agents" in capsys.readouterr().out

    code, raised = analyze_json(capsys, path, "--max-tracked-agents", str(runs))
    assert (code, reminders(raised), raised["coverage"]["agents_evicted"]) == (0, runs, 0)
    assert raised["coverage"]["verdict_scope_incomplete"] is False


@pytest.mark.parametrize("opener", [Path.write_bytes, lambda path, data: path.write_bytes(gzip.compress(data))],
                         ids=["plain", "gzip"])
def test_a_cut_off_first_record_loses_nothing_after_it(tmp_path, capsys, opener):
    """A first record cut off mid-line, then whole records: every record after it is read on its own
    line (each run's reminder is found), the cut-off one is counted on line 1, and a later bad line
    is reported with its own number."""
    runs = 200 * SCALE
    text_path = tmp_path / "cut.txt"
    hostile.cut_off_first_record(text_path, runs)
    lines = text_path.read_bytes().splitlines(keepends=True)
    lines.insert(101, b"not json\n")  # line 102
    path = tmp_path / "cut.jsonl"
    opener(path, b"".join(lines))

    code, document = analyze_json(capsys, path)
    coverage = document["coverage"]
    assert (code, reminders(document)) == (0, runs)
    assert coverage["unparsable_lines"] == 2 and coverage["lines_read"] == runs + 2
    assert [(e["line"], e["reason"]) for e in coverage["unparsable_examples"]] == [(1, "not json"), (102, "not json")]


def test_a_first_line_that_opens_a_document_never_closed_loses_nothing_after_it(tmp_path, capsys):
    """`{` alone on the first line, then whole records: the records are read line by line (their
    reminders found), the `{` is counted as one unparsable line."""
    runs = 100 * SCALE
    path = tmp_path / "brace.jsonl"
    hostile.open_brace_then_records(path, runs)
    code, document = analyze_json(capsys, path)
    assert (code, reminders(document), document["coverage"]["unparsable_lines"]) == (0, runs, 1)


def test_line_numbers_are_kept_on_the_text_stream_path():
    """The library reader of a text stream numbers lines as the file reader does: a run of blank
    lines is one problem covering them all, a bad line keeps its number."""
    (line,) = hostile.one_run_per_line(1)
    text = "\n".join([line, "", "", "", "not json", line]) + "\n"
    problems = [item for item in iter_spans(io.StringIO(text)) if isinstance(item, ReadProblem)]
    assert [(p.line, p.reason, p.lines) for p in problems] == [(2, "blank", 3), (5, "not json", 1)]


def test_a_pretty_printed_document_still_reads_and_the_lines_after_it_keep_their_numbers(tmp_path, capsys):
    """A pretty-printed document followed by another record and a bad line: both documents' runs are
    judged, the bad line is reported with its number."""
    first, second = hostile.one_run_per_line(2)
    pretty = json.dumps(json.loads(first), indent=2)
    path = tmp_path / "pretty.json"
    path.write_text(pretty + "\n" + second + "\nnot json\n")
    code, document = analyze_json(capsys, path)
    bad_line = pretty.count("\n") + 3
    assert (code, reminders(document)) == (0, 2)
    assert [e["line"] for e in document["coverage"]["unparsable_examples"]] == [bad_line]


DIGITS = "9" * 5000  # more than Python converts to an int (4,300 by default)


@pytest.mark.parametrize("written", ["number", "string"])
@pytest.mark.parametrize("layout", ["json lines", "pretty-printed"])
def test_an_integer_of_thousands_of_digits_costs_its_attribute_not_the_report(tmp_path, capsys, written, layout):
    """A 5,000-digit `intValue` (a JSON number, or digits in a string) on a tool span: out of range
    like any integer past 64 bits, the attribute is dropped and counted; the span, its line and the
    report are kept."""
    first, second = hostile.one_run_per_line(2)
    huge = '"attributes":[{"key":"app.count","value":{"intValue":"@huge@"}},'
    first = first.replace('"attributes":[', huge, 2).replace(huge, '"attributes":[', 1)  # the first tool span's
    if layout == "pretty-printed":
        first = json.dumps(json.loads(first), indent=2)
    first = first.replace('"@huge@"', DIGITS if written == "number" else json.dumps(DIGITS))
    assert first.count(DIGITS) == 1
    path = tmp_path / "huge-integer.json"
    path.write_text(first + "\n" + second + "\n")
    code, document = analyze_json(capsys, path)
    coverage = document["coverage"]
    assert (code, reminders(document), coverage["dropped_attributes_spans"]) == (0, 2, 1)
    assert coverage["unparsable_lines"] == 0 and coverage["verdict_scope_incomplete"] is True
    assert any(warning["code"] == "dropped-attributes" for warning in coverage["warnings"])


def test_a_span_time_of_thousands_of_digits_makes_that_span_unreadable(tmp_path, capsys):
    """A span field that cannot be read costs the span (counted), and only it: the second run still
    gets its reminder (the first one, a call short, none)."""
    first, second = hostile.one_run_per_line(2)
    start = first.index('"startTimeUnixNano":"') + len('"startTimeUnixNano":')
    first = first[:start] + DIGITS + first[first.index(",", start):]  # the first span's start, as a number
    path = tmp_path / "huge-time.jsonl"
    path.write_text(first + "\n" + second + "\n")
    code, document = analyze_json(capsys, path)
    assert (code, document["coverage"]["unreadable_spans"], reminders(document)) == (0, 1, 1)


class EndlessInput(io.RawIOBase):
    """Standard input that does not end soon: `line` over and over (up to 48 MiB, so that a reader
    that reads to the end still ends); counts what was read of it."""

    def __init__(self, line: bytes):
        self.line, self.read_bytes = line, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), 48 * MiB - self.read_bytes)
        data = (self.line * (size // len(self.line) + 1))[:size]
        buffer[:size] = data
        self.read_bytes += size
        return size


@pytest.mark.parametrize(("line", "says", "bound"), [
    (b"2024-01-01 12:00:00 INFO request served in 12 ms\n", "not JSON: 2024-01-01", 4 * MiB),  # 1,000 records
    (b'{"level": "info", "msg": "served"}\n', "JSON, but not an OTLP request: keys: level, msg", 4 * MiB),
    (b"x" * (100 * 1024) + b"\n", "not JSON: xxx", 20 * MiB),  # 16 MiB
], ids=["text", "json", "long-lines"])
def test_input_with_no_otlp_is_refused_after_its_beginning_not_its_end(monkeypatch, capsys, line, says, bound):
    """A log of something else (here one that never ends) is refused after its first 1,000 records
    or 16 MiB, whichever comes first, with the usual line naming its first record."""
    endless = EndlessInput(line)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(endless)))
    started = time.perf_counter()
    message = refused(capsys, "-")
    assert time.perf_counter() - started < 10
    assert endless.read_bytes < bound
    assert f"-: line 1: not OTLP JSON: {says}" in message


def test_a_pretty_printed_document_that_is_not_otlp_is_refused(tmp_path, capsys):
    """Its lines are one record that is no OTLP request, not that record and thousands of empty ones."""
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"items": [{"n": n} for n in range(500)]}, indent=2))
    assert "not OTLP JSON: JSON, but not an OTLP request: keys: items" in refused(capsys, str(path))


def test_records_of_something_else_before_the_otlp_cost_only_themselves(tmp_path, capsys):
    """Below the bound, lines of something else are counted and the rest is read."""
    path = tmp_path / "mixed.jsonl"
    path.write_text("starting exporter\n" * 999 + "\n".join(hostile.one_run_per_line(2)) + "\n")
    code, document = analyze_json(capsys, path)
    assert (code, reminders(document), document["coverage"]["unparsable_lines"]) == (0, 2, 999)


def test_a_key_given_twice_is_counted_as_skipped(tmp_path, capsys):
    """`resourceSpans` twice in one record: the copy JSON keeps is judged, the record is counted as
    holding a duplicated key, and the verdict scope is incomplete."""
    path = tmp_path / "duplicated.jsonl"
    hostile.duplicated_resource_spans(path)
    code, document = analyze_json(capsys, path)
    coverage = document["coverage"]
    assert (code, reminders(document), coverage["duplicate_keys"]) == (0, 1, 1)
    assert any("given twice" in reason for reason in coverage["skipped"])
    assert coverage["verdict_scope_incomplete"] is True
    assert "resourceSpans" in next(w["message"] for w in coverage["warnings"] if w["code"] == "duplicate-keys")


def test_a_value_that_only_looks_like_a_container_key_is_no_duplicate(tmp_path, capsys):
    """A tool named "spans" makes the quick check look closer; nothing is reported."""
    root, tools = hostile.looping_run(1, tool_name="spans")
    path = tmp_path / "named.jsonl"
    path.write_text(hostile.request([*tools, root]) + "\n")
    code, document = analyze_json(capsys, path)
    assert (code, reminders(document), document["coverage"]["duplicate_keys"]) == (0, 1, 0)


def test_blank_lines_are_counted_in_bulk(tmp_path, capsys):
    """Megabytes of newlines before a record: each counted as a blank line, the record still judged."""
    size = 2 * MiB * SCALE
    path = tmp_path / "newlines.jsonl"
    hostile.newlines(path, size)
    code, document = analyze_json(capsys, path)
    assert (code, reminders(document)) == (0, 1)
    assert document["coverage"]["files"][0]["blank_lines"] == size
    assert document["coverage"]["lines_read"] == size + 1


def test_nested_agent_keys_stay_bounded(tmp_path, capsys):
    """Agent runs nested hundreds deep with long names: every agent key stays short (a digest past
    256 characters), and the run at the bottom still gets its reminder."""
    path = tmp_path / "nested.jsonl"
    depth = 200 * SCALE
    hostile.nested_runs(path, depth)
    code, document = analyze_json(capsys, path, "--max-agents", "100000")
    assert (code, reminders(document)) == (0, 1)
    keys = [agent["key"] for agent in document["agents"]]
    assert len(set(keys)) == len(keys) == depth
    assert max(map(len, keys)) <= 256


# --- bounds: exit 2 and one line -----------------------------------------------------------------


def run_cli(*args: str, limit_bytes: int | None = None, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`otelguard analyze ARGS` in a child; `limit_bytes` caps its address space."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "otelguard", "analyze", *args], capture_output=True, input=stdin,
                          timeout=120, preexec_fn=cap if limit_bytes else None)


def one_line(stderr: bytes | str) -> str:
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    assert text.count("\n") == 1 and "Traceback" not in text, text
    return text


def refused(capsys, *args: str) -> str:
    """The one line `otelguard analyze ARGS` refuses them with (exit 2)."""
    assert main(["analyze", *args]) == 2
    return one_line(capsys.readouterr().err)


def test_a_line_past_max_line_bytes_is_refused_in_one_line(tmp_path, capsys):
    """A record of megabytes without a newline (a few KB of gzip): exit 2, one line naming the bound."""
    path = tmp_path / "long.jsonl.gz"
    hostile.long_line(path, 3 * MiB)
    message = refused(capsys, str(path), "--max-line-bytes", str(MiB))
    assert "line 1" in message and "--max-line-bytes" in message


def test_a_blank_line_of_any_length_is_counted_not_held(tmp_path, capsys):
    """Megabytes of spaces without a newline, past --max-line-bytes: one blank line (nothing in it
    to hold), and the input holds nothing else to judge."""
    path = tmp_path / "spaces.jsonl.gz"
    hostile.spaces_without_newline(path, 3 * MiB)
    code, document = analyze_json(capsys, path, "--max-line-bytes", str(MiB))
    assert code == 0
    assert (document["coverage"]["lines_read"], document["coverage"]["files"][0]["blank_lines"]) == (1, 1)
    assert document["coverage"]["nothing_judged"].startswith("no spans in the input")


@settings(max_examples=examples(500), deadline=None)
@given(data=st.binary(max_size=60).map(lambda raw: bytes(b" \n\t{}ab"[byte % 7] for byte in raw)),
       chunk_bytes=st.integers(1, 70))
def test_line_reader_numbers_lines_as_splitlines_does_whatever_the_chunks(data, chunk_bytes):
    """Lines split across chunks of any size are numbered and told blank or not as
    `bytes.splitlines` tells them; a run of blank lines covers exactly those lines."""
    reader = LineReader(io.BytesIO(data), chunk_bytes=chunk_bytes)
    got = []
    for number, item in reader:
        got += [(number + k, None) for k in range(item)] if isinstance(item, int) else [(number, item.strip())]
    expected = [(n, None if line.isspace() else line.decode().strip())
                for n, line in enumerate(data.splitlines(keepends=True), 1)]
    assert got == expected and reader.lines == len(expected)


def test_a_document_with_no_end_is_refused_at_the_line_bound(tmp_path, capsys):
    """`{` and then short lines that never close it: held only up to --max-line-bytes, then exit 2."""
    path = tmp_path / "open.json"
    hostile.open_brace_then_short_lines(path, 100_000)
    assert "multi-line JSON document" in refused(capsys, str(path), "--max-line-bytes", str(256 * 1024))


def test_input_past_max_decompressed_bytes_is_refused_in_one_line(tmp_path, capsys):
    """A gzip file that inflates past --max-decompressed-bytes: exit 2, one line naming the bound."""
    path = tmp_path / "many.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(hostile.one_run_per_line(200)) + "\n").encode()))
    assert "--max-decompressed-bytes" in refused(capsys, str(path), "--max-decompressed-bytes", "100000")


def test_running_out_of_memory_is_exit_2_in_one_line(tmp_path):
    """A record of millions of empty objects in a process capped at 200 MB of address space: the
    MemoryError becomes exit 2 and one line."""
    path = tmp_path / "wide.jsonl"
    path.write_text('{"resourceSpans":[' + "{}," * (4 * MiB) + "{}]}\n")
    done = run_cli(str(path), limit_bytes=200 * MiB)
    assert done.returncode == 2
    assert "out of memory" in one_line(done.stderr)


def test_yaml_aliases_in_a_config_are_refused_fast_in_one_line(tmp_path, capsys):
    """A "billion laughs" config of a few hundred bytes: refused at once, in one short line."""
    config = tmp_path / "laughs.yaml"
    config.write_text(hostile.BILLION_LAUGHS_YAML)
    records = tmp_path / "one.jsonl"
    records.write_text(hostile.one_run_per_line(1)[0] + "\n")
    started = time.perf_counter()
    message = refused(capsys, str(records), "--config", str(config))
    assert time.perf_counter() - started < 10  # (read whole, such a file takes many times that and gigabytes)
    assert "alias" in message and len(message) < 1000


@pytest.mark.parametrize("nested", ["guards: " + "[" * 2000 + "]" * 2000,
                                    "guards:\n" + "".join("  " * depth + "- \n" for depth in range(1, 1500))],
                         ids=["flow", "block"])
def test_a_config_nested_thousands_deep_is_a_config_error(tmp_path, capsys, nested):
    """Not "internal error, please report it": a config error, in one short line (exit 2)."""
    config = tmp_path / "deep.yaml"
    config.write_text(nested)
    records = tmp_path / "one.jsonl"
    records.write_text(hostile.one_run_per_line(1)[0] + "\n")
    message = refused(capsys, str(records), "--config", str(config))
    assert "not valid YAML: values nested deeper than 32 levels" in message and len(message) < 1000


def test_a_config_error_quotes_a_huge_value_briefly(tmp_path, capsys):
    """A config value of a megabyte, invalid: the error line quotes a few dozen characters of it."""
    config = tmp_path / "huge.yaml"
    config.write_text("guards:\n  - id: repeat-tool-reminder\n    config:\n      thresholds: \"" + "9" * MiB + "\"\n")
    records = tmp_path / "one.jsonl"
    records.write_text(hostile.one_run_per_line(1)[0] + "\n")
    assert main(["analyze", str(records), "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 1000


# --- what reaches the terminal -------------------------------------------------------------------


def test_control_characters_never_reach_the_terminal(tmp_path, capsys):
    """A tool name that clears the screen and draws a green ALL CLEAR, a bad line of escapes, and a
    file named with one: the text report, the JSON and the error line show them escaped."""
    path = tmp_path / "ansi.jsonl"
    hostile.ansi_tool_name(path)
    with path.open("a") as out:
        out.write("\x1b[2J\x1b]0;owned\x07 not json\n")
    assert main(["analyze", str(path)]) == 0
    report = capsys.readouterr().out
    assert not set("\x1b\x07\x9b\u202e") & set(report)
    assert "\\u001b[32mALL CLEAR" in report

    code, document = analyze_json(capsys, path)  # (the same JSON, its escapes written out)
    assert document["verdicts"][-1]["tool"].endswith("ALL CLEAR\x1b[0m\x07\x9b31m\u202e")
    assert main(["analyze", "--json", str(path)]) == 0
    assert not set("\x1b\x07\x9b\u202e") & set(capsys.readouterr().out)

    named = tmp_path / "evil\x1b[31m.jsonl"
    named.write_text("not OTLP\n")
    assert main(["analyze", str(named)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\u001b[31m" in err


# --- memory: flat from 1x to 10x ---------------------------------------------------------------------

_PEAK_CHILD = """import sys
from otelguard.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
status = open('/proc/self/status').read()
print(int(status.split('VmHWM:')[1].split()[0]) * 1024, file=sys.stderr)
sys.exit(code)
"""


def peak_rss(*runs: tuple[str, ...]) -> list[tuple[int, int]]:
    """(exit status, peak RSS in bytes) of `otelguard analyze ARGS` for each ARGS of `runs`, each
    run in a child of its own, the children at once."""
    children = [subprocess.Popen([sys.executable, "-c", _PEAK_CHILD, "analyze", *args], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for args in runs]
    results = []
    for child in children:
        _, err = child.communicate(timeout=600)
        results.append((child.returncode, int(err.strip().splitlines()[-1])))
    return results


MEMORY_SCALE = 25 if FULL else 1  # the thorough profile's 10x inputs are up to 50 MB
# (name, writer of an input of `n` units, units at 1x (default profile), extra arguments, exit statuses at 1x
# and 10x: a line without end is no JSON at 1x, past --max-line-bytes at 10x)
_ALL_MEMORY_CASES = [
    ("traces with a verdict, text", hostile.traces_with_a_verdict, 100, (), (0, 0)),
    ("traces with a verdict, --json", hostile.traces_with_a_verdict, 100, ("--json",), (0, 0)),
    ("cut-off first record", hostile.cut_off_first_record, 100, (), (0, 0)),
    ("first line { then records", hostile.open_brace_then_records, 100, (), (0, 0)),
    ("newlines", hostile.newlines, 200 * 1024, (), (0, 0)),
    ("nested runs", hostile.nested_runs, 12, (), (0, 0)),
    ("spaces without a newline, gzip", hostile.spaces_without_newline, 200 * 1024, (), (0, 0)),
    ("a line without end, gzip", hostile.long_line, 200 * 1024, ("--max-line-bytes", str(MEMORY_SCALE * MiB)),
     (2, 2)),
]
# The default profile keeps the run quick: the two inputs whose memory grew most before (verdicts,
# and the whole-document fallback), each child run a second or two.
_QUICK_MEMORY_CASES = ("traces with a verdict, --json", "first line { then records")
MEMORY_CASES = [case for case in _ALL_MEMORY_CASES if FULL or case[0] in _QUICK_MEMORY_CASES]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc (Linux)")
@pytest.mark.parametrize("name, make, units, args, statuses", MEMORY_CASES, ids=[case[0] for case in MEMORY_CASES])
def test_peak_memory_grows_less_than_20_mib_from_1x_to_10x_the_input(tmp_path, name, make, units, args, statuses):
    for factor in (1, 10):
        make(tmp_path / f"{factor}x.jsonl", units * MEMORY_SCALE * factor)
    (code_1x, peak_1x), (code_10x, peak_10x) = peak_rss((str(tmp_path / "1x.jsonl"), *args),
                                                        (str(tmp_path / "10x.jsonl"), *args))
    assert (code_1x, code_10x) == statuses
    assert peak_10x - peak_1x < 20 * MiB, f"{name}: {peak_1x / MiB:.0f} MiB at 1x, {peak_10x / MiB:.0f} MiB at 10x"
