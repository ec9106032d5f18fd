"""`otelguard analyze`: replay order, coverage, inputs that are hard to read, exit codes, the CLI.

Inputs are OTLP JSON Lines written by the helpers below, shaped like the Collector's file exporter
(hex ids, integer enums, 64-bit integers as strings). The analyzer vectors of `vectors.md` are the
first four tests.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from otelguard.analyzer import ACTION_ORDER, FAIL_ON_CHOICES, AnalyzerOptions, ReplayLimits, action_reaches, analyze
from otelguard.cli import main
from vectors_support import SHORT_REMINDER
from otel_support import output_messages
from analyzer_support import (
    OTHER_TRACE, T0, TRACE, agent, attributes, end_time, filler, findings, model, request, run, run_json, sid, span,
    tool, tool_loop, write,
)


# --- the analyzer vectors (vectors.md) --------------------------------------------------------------


def test_unparsable_lines_and_unknown_spans_are_counted_by_reason(tmp_path, capsys) -> None:
    """A non-JSON line, a blank line and unknown spans: the readable spans are judged, the rest counted by reason."""
    path = write(tmp_path / "mixed.jsonl",
                 request(*tool_loop(3), filler("f1", "a1", 1, 2, name="db.query")),
                 "this line is not json",
                 "")
    code, document = run_json(capsys, str(path))
    assert code == 0
    coverage = document["coverage"]
    assert coverage["steps_judged"] == 6
    assert coverage["skipped"] == {"not an agent/model/tool span": 1, "line: not json": 1, "line: blank": 1}
    assert coverage["unparsable_examples"][0]["line"] == 2
    assert coverage["verdict_scope_incomplete"] is True
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]


def test_no_model_or_tool_spans_says_nothing_was_judged_and_why(tmp_path, capsys) -> None:
    """A file with no model or tool spans yields no steps and says nothing was judged, and why."""
    path = write(tmp_path / "quiet.jsonl",
                 request(agent("a1", 0, 10), filler("f1", "a1", 1, 2), filler("f2", "a1", 3, 4)))
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert document["verdicts"] == []
    reason = document["coverage"]["nothing_judged"]
    assert "3 spans read, none of them a model or tool span" in reason
    assert "1 agent span but no model or tool call" in reason
    code, out, _ = run(capsys, "analyze", str(path))
    assert "nothing was judged: 3 spans read" in out


def test_three_hundred_identical_chunk_events_flag_identical_chunks(tmp_path, capsys) -> None:
    """A model call whose output is 300 identical recorded text chunks is flagged by identical-chunks.
    Longer than the read limit, the recorded stream is replayed by its last 4,096 characters (the call
    is judged in part), and the verdict's characters count from the stream's start."""
    # A period of 66 with the long-cycle rule off: beyond the cycle rule (64), only identical-chunks sees it.
    line = "The `register` API matches the spec and every test passes, again. "
    assert len(line) == 66
    config = write(tmp_path / "otelguard.yaml", "guards:\n  - id: thinking-loop-guard\n    config: {max_long_cycle_chars: 0}")
    chunks = [{"timeUnixNano": str(T0 + i), "name": "otelguard.chunk",
               "attributes": attributes({"otelguard.chunk.text": line, "otelguard.chunk.kind": "text"})}
              for i in range(300)]
    path = write(tmp_path / "chunks.jsonl", request(model("m1", None, 0, 10, text=line * 300, events=chunks)))
    code, document = run_json(capsys, str(path), "--config", str(config))
    assert code == 0
    [verdict] = [v for v in document["verdicts"] if v["verdict"] == "repetitive_output"]
    assert (verdict["rule"], verdict["action"]) == ("identical-chunks", "none")  # the stream went on: flagged, not cut
    # the last 4,096 characters: the end of one chunk, then 62 whole ones; tripped at the 60th of those
    assert verdict["stream_chars"] == 298 * len(line)
    assert document["coverage"]["judged_in_part"] == 1


def test_recorded_chunks_that_stop_at_the_trip_replay_as_a_cut(tmp_path, capsys) -> None:
    """Chunks that end exactly where the breaker trips are a stream the live breaker cut: action break."""
    chunks = [{"timeUnixNano": str(T0 + i), "name": "otelguard.chunk",
               "attributes": attributes({"otelguard.chunk.text": "tick", "otelguard.chunk.kind": "text"})}
              for i in range(60)]
    path = write(tmp_path / "cut.jsonl", request(model("m1", None, 0, 10, text="tick" * 60, events=chunks)))
    _, document = run_json(capsys, str(path))
    assert findings(document) == [("thinking-loop-guard", "identical-chunks", "break", sid("m1"))]


# --- replay order ------------------------------------------------------------------------------------


def test_spans_on_many_lines_in_reverse_order_replay_in_start_order(tmp_path, capsys) -> None:
    """Spans of one trace spread over lines, children before parents and newest first, replay by start time."""
    spans = tool_loop(3)
    others = [request(model(f"u{i}", None, 0, 1, trace=f"{i + 1:032x}", text="hi")) for i in range(3)]
    path = write(tmp_path / "scattered.jsonl", *(request(s) for s in reversed(spans)), *others)
    code, document = run_json(capsys, str(path))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    replay = document["coverage"]["replay"]
    assert replay["traces_replayed"]["complete"] >= 2  # replayed once settled, before the input ended
    assert replay["peak_buffered_spans"] < 7 + 3  # not the whole file


def test_interleaved_traces_keep_their_own_chains(tmp_path, capsys) -> None:
    """Two agents' traces interleaved line by line (each in end order) each get their own repeat chain."""
    first = sorted(tool_loop(2, trace=TRACE, agent_id="a1", prefix="x"), key=end_time)
    second = sorted(tool_loop(3, trace=OTHER_TRACE, agent_id="b1", prefix="y"), key=end_time)
    lines = [request(s) for pair in zip(first, second, strict=False) for s in pair]
    lines += [request(s) for s in second[len(first):]]
    path = write(tmp_path / "two.jsonl", *lines)
    _, document = run_json(capsys, str(path))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("yt2"))]
    assert {a["name"] for a in document["agents"]} == {"weather"}
    assert len(document["agents"]) == 2


def test_sub_agent_in_the_same_trace_has_its_own_state(tmp_path, capsys) -> None:
    """Agent A probes twice while sub-agent B (same trace) probes three times: only B is reminded."""
    spans = [agent("aa", 0, 1000, name="A"), agent("bb", 50, 900, name="B", parent="aa")]
    for i in range(3):
        spans.append(tool(f"b{i}", "bb", 100 + 200 * i, 150 + 200 * i, name="probe", args="{}"))
        if i < 2:
            spans.append(tool(f"a{i}", "aa", 200 + 200 * i, 250 + 200 * i, name="probe", args="{}"))
    path = write(tmp_path / "sub.jsonl", request(*spans))
    _, document = run_json(capsys, str(path))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("b2"))]
    [row] = [v for v in document["verdicts"] if not v["counting"]]
    assert row["agent"] == "B"


def test_tool_under_a_chain_span_belongs_to_the_agent_above(tmp_path, capsys) -> None:
    """Spans between the agent and a tool (turn/CHAIN spans) do not hide the agent."""
    spans = [agent("a1", 0, 1000)]
    for i in range(3):
        spans.append(filler(f"c{i}", "a1", 100 * i, 100 * i + 95))
        spans.append(tool(f"t{i}", f"c{i}", 100 * i + 10, 100 * i + 90))
    path = write(tmp_path / "chain.jsonl", request(*spans))
    _, document = run_json(capsys, str(path))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    assert document["verdicts"][-1]["agent"] == "weather"


def test_ties_start_parents_first_and_zero_length_spans_work(tmp_path, capsys) -> None:
    """A child starting at its parent's start, and zero-length tool spans, still replay inside their agent."""
    spans = [agent("a1", 0, 100)]
    for i in range(3):
        spans.append(tool(f"t{i}", "a1", 0 if i == 0 else 10 * i, 0 if i == 0 else 10 * i))
    path = write(tmp_path / "ties.jsonl", request(*spans))
    _, document = run_json(capsys, str(path))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    assert document["verdicts"][-1]["agent"] == "weather"


def test_child_clock_skewed_before_its_parent_still_finds_its_agent(tmp_path, capsys) -> None:
    """A child whose start is earlier than its parent's (clock skew) is replayed after the parent starts."""
    spans = [agent("a1", 100, 1000)] + [tool(f"t{i}", "a1", 10 * i, 10 * i + 5) for i in range(3)]
    path = write(tmp_path / "skew.jsonl", request(*spans))
    _, document = run_json(capsys, str(path))
    assert [v["agent"] for v in document["verdicts"]] == ["weather", "weather"]


def test_duplicate_spans_are_counted_once(tmp_path, capsys) -> None:
    """The same request exported twice does not double the calls; the duplicates are counted."""
    line = request(*tool_loop(2))
    path = write(tmp_path / "dup.jsonl", line, line)
    _, document = run_json(capsys, str(path))
    assert findings(document) == []
    assert document["coverage"]["skipped"]["duplicate span (same trace and span id)"] == 5


def test_trace_without_root_is_replayed_after_the_idle_window(tmp_path, capsys) -> None:
    """A trace whose root never arrives is replayed after --flush-after records; a later span of it is reported late."""
    remote_parent = "feedfacefeedface"
    spans = [tool(f"t{i}", remote_parent, 100 * i, 100 * i + 50) for i in range(3)]
    unrelated = [request(model(f"u{i}", None, 0, 1, trace=f"{i + 1:032x}", text="hi")) for i in range(3)]
    late = tool("t9", remote_parent, 900, 950)
    path = write(tmp_path / "idle.jsonl", *(request(s) for s in spans), *unrelated, request(late))
    _, document = run_json(capsys, "--flush-after", "2", str(path))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    coverage = document["coverage"]
    assert coverage["replay"]["traces_replayed"]["idle"] >= 1
    assert coverage["replay"]["late_spans"] == 1
    [warning] = [w for w in coverage["warnings"] if w["code"] == "late-spans"]
    assert warning["incomplete"] is True
    # With the default window the trace waits for the end of the input and nothing is late.
    _, document = run_json(capsys, str(path))
    assert document["coverage"]["replay"]["late_spans"] == 0
    assert [v["span_id"] for v in document["verdicts"] if not v["counting"]] == [sid("t2")]


def test_memory_cap_replays_the_oldest_traces_early(tmp_path, capsys) -> None:
    """Past --max-buffered-spans the least recently seen trace is replayed early; buffering stays at the cap."""
    lines = []
    for n in range(5):
        trace = f"{n + 1:032x}"
        lines.extend(request(s) for s in tool_loop(3, trace=trace, agent_id="a1")[1:])  # roots never arrive
    path = write(tmp_path / "cap.jsonl", *lines)
    _, document = run_json(capsys, "--max-buffered-spans", "8", str(path))
    replay = document["coverage"]["replay"]
    assert replay["peak_buffered_spans"] <= 9
    assert replay["traces_replayed"]["memory"] >= 3
    assert len(findings(document)) == 5  # each trace's third call, still judged whole


def test_tool_timeout_recorded_by_the_live_guard_is_replayed_as_tool_timeout(tmp_path, capsys) -> None:
    """A tool span with the live guard's tool-timeout verdict replays as tool-timeout/abort, not framework-timeout."""
    recorded = {"otelguard.verdict": "tool_timeout", "otelguard.guard": "timeout-policy",
                "otelguard.rule": "tool-timeout", "otelguard.action": "abort", "otelguard.tool.timeout_ms": 50.0}
    spans = [tool("t1", None, 0, 60, name="slow", args="{}", result="Error: tool call timed out after 50ms",
                  extra_attrs=recorded),
             tool("t2", None, 100, 160, name="slow2", args="{}", result="Timed out after 0.05 seconds.")]
    path = write(tmp_path / "timeout.jsonl", request(*spans))
    _, document = run_json(capsys, str(path))
    assert sorted(findings(document)) == [("timeout-policy", "framework-timeout", "none", sid("t2")),
                                          ("timeout-policy", "tool-timeout", "abort", sid("t1"))]


def test_internal_error_on_one_span_is_contained_and_reported(tmp_path, capsys, monkeypatch) -> None:
    """A bug while judging one span costs that span only: counted, warned about in one line, the rest judged."""
    from otelguard.engine import GuardEngine

    monkeypatch.setenv("OTELGUARD_RAISE_INTERNAL_ERRORS", "0")
    real = GuardEngine.end
    broken = int(sid("t0"), 16)

    def flaky(self, span, **kwargs):
        if span.span_id == broken:
            raise RuntimeError("simulated bug")
        return real(self, span, **kwargs)

    monkeypatch.setattr(GuardEngine, "end", flaky)
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    code, out, err = run(capsys, "analyze", "--json", str(path))
    document = json.loads(out)
    coverage = document["coverage"]
    assert coverage["internal_errors"] == 1 and coverage["steps_judged"] == 5
    assert "internal-errors" in {w["code"] for w in coverage["warnings"]}
    assert "Traceback" not in err and "RuntimeError: simulated bug" in err


def test_stream_cut_live_without_recorded_chunks_replays_as_the_live_cut(tmp_path, capsys) -> None:
    """A model span whose live breaker cut the stream, with no chunk recorded, keeps the live break verdict."""
    recorded = {"otelguard.verdict": "repetitive_output", "otelguard.guard": "thinking-loop-guard",
                "otelguard.rule": "identical-chunks", "otelguard.action": "break", "otelguard.stream.chars": 240,
                "otelguard.error.code": "REPETITIVE_OUTPUT"}
    cut = model("m1", None, 0, 10, text="tick" * 60)
    cut["attributes"] += attributes(recorded)
    path = write(tmp_path / "cut.jsonl", request(cut))
    _, document = run_json(capsys, str(path))
    assert findings(document) == [("thinking-loop-guard", "identical-chunks", "break", sid("m1"))]
    assert document["verdicts"][0]["stream_chars"] == 240
    assert document["coverage"]["verdicts_from_live_record"] == 1


# --- coverage warnings -------------------------------------------------------------------------------


def test_dropped_events_and_uncaptured_output_mark_the_scope_incomplete(tmp_path, capsys) -> None:
    """A model span that lost events and one without captured output each raise a warning."""
    no_output = span("chat m", "m2", start=20, end=30, attrs={"gen_ai.operation.name": "chat"})
    path = write(tmp_path / "gaps.jsonl", request(model("m1", None, 0, 10, text="ok", dropped_events=36), no_output))
    code, document = run_json(capsys, str(path))
    coverage = document["coverage"]
    codes = {w["code"] for w in coverage["warnings"]}
    assert {"dropped-span-events", "model-output-not-captured"} <= codes
    assert coverage["dropped_span_events"] == {"spans": 1, "events": 36}
    assert coverage["verdict_scope_incomplete"] is True
    _, out, _ = run(capsys, "analyze", str(path))
    assert "⚠ 1 model or tool span lost 36 span events" in out
    assert "verdict scope: INCOMPLETE" in out


def test_log_records_are_counted_and_warned_about(tmp_path, capsys) -> None:
    """OTLP log lines are not read; gen_ai content in them is counted and marks the scope incomplete."""
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.choice", "body": {"stringValue": "x"}},
        {"attributes": attributes({"other": "y"})}]}]}]}
    path = write(tmp_path / "only.logs.otlp.jsonl", logs)
    code, document = run_json(capsys, str(path))
    assert code == 0
    coverage = document["coverage"]
    assert (coverage["log_records_not_read"], coverage["log_records_with_genai_content"]) == (2, 1)
    assert "only 2 OTLP log records on 1 line" in coverage["nothing_judged"]
    assert coverage["verdict_scope_incomplete"] is True


def test_text_report_lists_every_step_with_its_verdict(tmp_path, capsys) -> None:
    """The text report has one row per model/tool step, the verdict columns, a summary and the coverage block."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    code, out, _ = run(capsys, "analyze", str(path))
    assert code == 0
    lines = out.splitlines()
    rows = [index for index, line in enumerate(lines) if line.strip()[:1].isdigit()]
    assert len(rows) == 6
    assert "get_weather {\"city\":\"Paris\"}" in lines[rows[5]]
    assert lines[rows[5] + 1].split() == ["↳", "remind", "repeated_tool_call", "repeat-threshold", "count", "3"]
    assert lines[rows[3] + 1].split() == ["↳", "none", "repeated_tool_call", "repeat-threshold", "count", "2"]
    assert "verdicts with an action: 1 (remind 1)" in out
    assert "verdict scope: complete" in out


def test_json_report_has_the_contract_shape(tmp_path, capsys) -> None:
    """--json has files, config, coverage, agents, verdicts; verdicts carry hex ids, agent, guard, rule, counts."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    _, document = run_json(capsys, str(path))
    assert {"files", "config", "coverage", "agents", "verdicts"} <= set(document)
    assert document["files"] == [str(path)]
    verdict = [v for v in document["verdicts"] if not v["counting"]][0]
    assert verdict["trace_id"] == TRACE and verdict["span_id"] == sid("t2")
    assert (verdict["agent"], verdict["guard"], verdict["rule"], verdict["action"], verdict["count"]) == \
        ("weather", "repeat-tool-reminder", "repeat-threshold", "remind", 3)
    assert verdict["message"] == SHORT_REMINDER
    assert document["coverage"]["verdict_scope_incomplete"] is False
    assert document["config"]["guards"][1]["id"] == "repeat-tool-reminder"
    steps = document["agents"][0]["steps"]
    assert [s["kind"] for s in steps] == ["model", "tool"] * 3


# --- hard inputs ----------------------------------------------------------------------------------------


def test_empty_file_is_not_an_error_but_says_it_is_empty(tmp_path, capsys) -> None:
    """An empty file exits 0 and the report says nothing was judged because the input is empty."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert document["coverage"]["nothing_judged"] == "the input is empty: 0 lines in 1 file"


def test_truncated_last_line_is_counted_and_the_rest_judged(tmp_path, capsys) -> None:
    """A file cut mid-line: the complete lines are judged, the cut one is counted as unparsable."""
    good = json.dumps(request(*tool_loop(3)))
    path = tmp_path / "cut.jsonl"
    path.write_text(good + "\n" + good[: len(good) // 2], encoding="utf-8")
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    assert document["coverage"]["unparsable_lines"] == 1
    assert document["coverage"]["verdict_scope_incomplete"] is True


def test_truncated_first_line_is_counted_and_the_rest_judged(tmp_path, capsys) -> None:
    """A first line cut inside its object (it looks like a pretty-printed document) costs only that line."""
    good = json.dumps(request(*tool_loop(3)))
    path = tmp_path / "cut-first.jsonl"
    path.write_text(good[: len(good) // 3] + "\n" + good + "\n", encoding="utf-8")
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    assert document["coverage"]["unparsable_examples"][0]["line"] == 1


def test_corrupt_span_fields_are_counted_as_bad_spans(tmp_path, capsys) -> None:
    """A span with an impossible id is skipped and counted; the others are judged."""
    bad = tool("t9", "a1", 1, 2)
    bad["spanId"] = "not-an-id!"
    path = write(tmp_path / "bad.jsonl", request(*tool_loop(3), bad))
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert document["coverage"]["skipped"]["unreadable span (no valid ids, wrong field types)"] == 1
    assert document["coverage"]["unreadable_spans"] == 1
    assert len(findings(document)) == 1


@pytest.mark.parametrize("content, expected", [
    (b"\x00\x01\x02binary\xff\xfe" * 50, "line 1: binary data, not OTLP JSON"),
    (b"just some text\nnot json either\n", "line 1: not OTLP JSON: not JSON: just some text"),
    (b'{"hello": "world"}\n', "line 1: not OTLP JSON: JSON, but not an OTLP request: keys: hello"),
])
def test_input_that_is_not_otlp_exits_2_with_one_line(tmp_path, capsys, content: bytes, expected: str) -> None:
    """Binary data, text and foreign JSON exit 2 with one line naming the file and the line, no traceback."""
    path = tmp_path / "input.jsonl"
    path.write_bytes(content)
    code, out, err = run(capsys, "analyze", str(path))
    assert code == 2
    assert out == ""
    assert err == f"otelguard analyze: error: {path}: {expected}\n"


def test_missing_file_and_directory_exit_2(tmp_path, capsys) -> None:
    """A missing file or a directory exits 2 with one line naming it."""
    code, _, err = run(capsys, "analyze", str(tmp_path / "nope.jsonl"))
    assert code == 2 and err.count("\n") == 1 and "nope.jsonl: cannot open: No such file" in err
    code, _, err = run(capsys, "analyze", str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_gzip_input_reads_like_plain(tmp_path, capsys) -> None:
    """A gzipped file gives the same verdicts as the plain one and is reported as compressed."""
    plain = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    packed = tmp_path / "loop.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    _, a = run_json(capsys, str(plain))
    _, b = run_json(capsys, str(packed))
    assert findings(a) == findings(b)
    assert b["coverage"]["files"][0]["compressed"] is True


def test_truncated_gzip_exits_2_naming_the_file(tmp_path, capsys) -> None:
    """A gzip stream cut short exits 2 with one line naming the file, no traceback."""
    data = gzip.compress((json.dumps(request(*tool_loop(3))) + "\n").encode() * 200)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    code, out, err = run(capsys, "analyze", str(path))
    assert code == 2
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err


def test_file_named_gz_that_is_not_gzip(tmp_path, capsys) -> None:
    """A .gz name on plain OTLP JSON is read as text; on binary data it exits 2 saying it is not gzip."""
    path = write(tmp_path / "plain.jsonl.gz", request(*tool_loop(3)))
    code, out, _ = run(capsys, "analyze", str(path))
    assert code == 0 and "named .gz but not gzip" in out
    path.write_bytes(b"PK\x03\x04\x00\x00 zip, not gzip")
    code, _, err = run(capsys, "analyze", str(path))
    assert code == 2 and "(named .gz, but not gzip data)" in err


def test_pretty_printed_single_document_is_read(tmp_path, capsys) -> None:
    """One indented `{"resourceSpans": ...}` document is read whole."""
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(request(*tool_loop(3)), indent=2), encoding="utf-8")
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]


def test_huge_lines_are_read_or_counted_never_a_traceback(tmp_path, capsys) -> None:
    """A 50 MB line holding one span is judged; a 50 MB line of garbage is counted as unparsable."""
    big_text = "The answer is long. " * (50 * 1024 * 1024 // 20)
    path = write(tmp_path / "huge.jsonl", request(model("m1", None, 0, 10, text=big_text)))
    assert path.stat().st_size > 50 * 1024 * 1024
    code, document = run_json(capsys, str(path))
    assert code == 0
    assert document["coverage"]["steps_judged"] == 1
    garbage = tmp_path / "garbage.jsonl"
    with garbage.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(request(*tool_loop(3))) + "\n")
        handle.write("x" * (50 * 1024 * 1024) + "\n")
    code, document = run_json(capsys, str(garbage))
    assert code == 0
    assert document["coverage"]["unparsable_lines"] == 1
    assert len(document["coverage"]["unparsable_examples"][0]["detail"]) < 200


# --- exit codes, knobs, the command --------------------------------------------------------------------


def test_action_order_is_total_and_fail_on_uses_it() -> None:
    """none < remind < warn < steer < block < abort < break < cancel; a threshold is reached by itself and stronger."""
    assert ACTION_ORDER == ("none", "remind", "warn", "steer", "block", "abort", "break", "cancel")
    assert FAIL_ON_CHOICES == ACTION_ORDER[1:]
    for i, threshold in enumerate(FAIL_ON_CHOICES, start=1):
        for j, action in enumerate(ACTION_ORDER):
            assert action_reaches(action, threshold) is (j >= i)
    assert not action_reaches("none", "remind")
    assert not action_reaches("something-new", "remind")


def test_fail_on_exit_codes(tmp_path, capsys) -> None:
    """--fail-on remind exits 1 on a reminder; --fail-on steer exits 0 on it; no --fail-on exits 0."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    assert run(capsys, "analyze", str(path), "--fail-on", "remind")[0] == 1
    assert run(capsys, "analyze", str(path), "--fail-on", "steer")[0] == 0
    assert run(capsys, "analyze", str(path))[0] == 0
    code, _, err = run(capsys, "analyze", str(path), "--fail-on", "loud")
    assert code == 2 and "invalid choice" in err


def test_knob_flags_override_the_config(tmp_path, capsys) -> None:
    """--repeat-thresholds 2 reminds at the second call; the knobs land in the reported config."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(2)))
    code, document = run_json(capsys, str(path), "--repeat-thresholds", "2,4", "--similarity", "0.6", "--thinking-threshold", "4",
                              "--max-fires", "2", "--max-repeated-text", "10", "--max-repeated-cycle", "32",
                              "--min-repeated-cycle", "128", "--min-chars", "512")
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t1"))]
    rows = {row["id"]: row["config"] for row in document["config"]["guards"]}
    assert rows["repeat-tool-reminder"]["thresholds"] == [2, 4]
    thinking = rows["thinking-loop-guard"]
    assert (thinking["similarity_threshold"], thinking["max_thinking_steps"], thinking["min_reasoning_chars"],
            thinking["max_fires"], thinking["max_repeated_text"], thinking["max_repeated_cycle_chars"],
            thinking["min_repeated_cycle_chars"]) == (0.6, 4, 512, 2, 10, 32, 128)


def test_the_old_knob_spellings_still_set_the_knobs_and_warn(tmp_path, capsys) -> None:
    """--threshold and --thresholds (one letter apart, two guards) are now --thinking-threshold and
    --repeat-thresholds: the old spellings still work, unlisted, each with a warning naming the new one."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(2)))
    code, out, err = run(capsys, "analyze", "--json", str(path), "--thresholds", "2,4", "--threshold", "4")
    assert code == 0 and err.splitlines() == [
        "otelguard analyze: warning: --thresholds is now --repeat-thresholds; the old spelling will go",
        "otelguard analyze: warning: --threshold is now --thinking-threshold; the old spelling will go"]
    rows = {row["id"]: row["config"] for row in json.loads(out)["config"]["guards"]}
    assert (rows["repeat-tool-reminder"]["thresholds"], rows["thinking-loop-guard"]["max_thinking_steps"]) == ([2, 4], 4)
    assert main(["analyze", "--help"]) == 0
    listed = capsys.readouterr().out
    assert "--repeat-thresholds" in listed and "--thinking-threshold" in listed
    assert "--thresholds" not in listed and "--threshold " not in listed


def test_knob_over_a_config_file_row(tmp_path, capsys) -> None:
    """Knobs override the --config file's rows; a knob for a guard the file does not run is a usage error."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(4)))
    config = tmp_path / "guard.yaml"
    config.write_text("guards:\n  - id: repeat-tool-reminder\n    config:\n      thresholds: [4]\n", encoding="utf-8")
    _, document = run_json(capsys, str(path), "--config", str(config))
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t3"))]
    _, document = run_json(capsys, str(path), "--config", str(config), "--repeat-thresholds", "3")
    assert findings(document) == [("repeat-tool-reminder", "repeat-threshold", "remind", sid("t2"))]
    code, _, err = run(capsys, "analyze", str(path), "--config", str(config), "--similarity", "0.5")
    assert code == 2 and "--similarity sets thinking-loop-guard" in err


@pytest.mark.parametrize("argv, message", [
    (["--min-chars", "64"], "min_reasoning_chars"),
    (["--repeat-thresholds", "1,3"], "thresholds"),
    (["--repeat-thresholds", "3,x"], "expected integers separated by commas"),
    (["--similarity", "2"], "similarity_threshold"),
    (["--flush-after", "0"], "must be >= 1"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_invalid_knobs_are_usage_errors(tmp_path, capsys, argv: list[str], message: str) -> None:
    """Out-of-range knobs exit 2 with a message naming the field, never a traceback."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(1)))
    code, out, err = run(capsys, "analyze", str(path), *argv)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_invalid_config_file_is_a_usage_error(tmp_path, capsys) -> None:
    """A config file that does not validate exits 2 naming the field."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(1)))
    config = tmp_path / "bad.yaml"
    config.write_text("guards:\n  - id: thinking-loop-guard\n    config:\n      max_fires: 0\n", encoding="utf-8")
    code, _, err = run(capsys, "analyze", str(path), "--config", str(config))
    assert code == 2 and "max_fires" in err and err.count("\n") == 1
    code, _, err = run(capsys, "analyze", str(path), "--config", str(tmp_path / "missing.yaml"))
    assert code == 2 and "missing.yaml" in err


def test_files_after_options_are_still_files(tmp_path, capsys) -> None:
    """`analyze a.jsonl --json b.jsonl` reads both files."""
    a = write(tmp_path / "a.jsonl", request(*tool_loop(3, trace=TRACE)))
    b = write(tmp_path / "b.jsonl", request(*tool_loop(3, trace=OTHER_TRACE)))
    code, out, _ = run(capsys, "analyze", str(a), "--json", str(b))
    assert json.loads(out)["files"] == [str(a), str(b)]


def test_no_command_prints_usage_and_exits_2(capsys) -> None:
    """`otelguard` alone is a usage error."""
    code, _, err = run(capsys)
    assert code == 2 and "analyze" in err


def test_internal_error_is_one_line_and_exit_3(tmp_path, capsys, monkeypatch) -> None:
    """A bug inside the analyzer prints one line (no traceback) and exits 3."""
    import otelguard.analyzer as analyzer_module

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(analyzer_module, "analyze", broken)
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(1)))
    code, _, err = run(capsys, "analyze", str(path))
    assert code == 3 and err.count("\n") == 1 and "internal error: RuntimeError: boom" in err


def test_demo_without_the_demo_module_fails_clearly(capsys, monkeypatch) -> None:
    """`otelguard demo` without otelguard.demo exits 2 with a message saying the module is missing."""
    monkeypatch.setitem(sys.modules, "otelguard.demo.run", None)
    code, _, err = run(capsys, "demo", "--help")
    assert code == 2 and "otelguard.demo is missing" in err


def test_demo_arguments_are_passed_through(capsys, monkeypatch) -> None:
    """Every argument after `demo`, options included, reaches otelguard.demo.run.main."""
    import types

    seen: list[list[str]] = []
    module = types.ModuleType("otelguard.demo.run")
    module.main = lambda argv: seen.append(list(argv)) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "otelguard.demo.run", module)
    assert run(capsys, "demo", "--scenario", "tool-loop", "-v")[0] == 0
    assert seen == [["--scenario", "tool-loop", "-v"]]


def test_python_dash_m_runs_the_command(tmp_path) -> None:
    """`python -m otelguard analyze` works as a process: exit status, stdout, stderr, `-` for stdin."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    done = subprocess.run([sys.executable, "-m", "otelguard", "analyze", str(path), "--fail-on", "remind"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "remind" in done.stdout
    done = subprocess.run([sys.executable, "-m", "otelguard", "analyze", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "otelguard", "analyze", "--json", "-"], input=path.read_text(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["coverage"]["steps_judged"] == 6


def test_library_api_bounds_memory_options(tmp_path) -> None:
    """`analyze()` can be called directly, and the memory bounds are validated."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)))
    analysis = analyze([path], options=AnalyzerOptions(limits=ReplayLimits(flush_after_records=1)))
    assert [row.verdict.action for row in analysis.reaching("remind")] == ["remind"]
    with pytest.raises(ValueError):
        ReplayLimits(max_buffered_spans=0)


def test_step_rows_name_each_model_calls_model(tmp_path) -> None:
    """A model step's row shows the model its convention names: GenAI's request model (else its
    response model), OpenInference's llm.model_name."""
    messages = output_messages(text="done")
    path = write(tmp_path / "models.jsonl", request(
        agent("a", 0, 100),
        model("m1", "a", 1, 10),
        span("chat other", "m2", start=11, end=20, parent="a",
             attrs={"gen_ai.operation.name": "chat", "gen_ai.response.model": "resp-model",
                    "gen_ai.output.messages": messages}),
        span("ChatOpenAI", "m3", start=21, end=30, parent="a",
             attrs={"openinference.span.kind": "LLM", "llm.model_name": "oi-model",
                    "gen_ai.request.model": "not-this-one", "output.value": "done"}),
    ))
    findings = analyze([path]).findings
    (agent_summary,) = findings.agents()
    steps = findings.steps(agent_summary.key)
    assert [step.to_json()["model"] for step in steps] == ["fake-model", "resp-model", "oi-model"]
