"""`otelguard analyze` reports each tool loop the guard acted on with what it spent: on the real runs
(tests/realruns: mini-swe-agent with DeepSeek, whose model spans report their usage) and on the
coding-agent CLIs' own telemetry (tests/fixtures/agent-clis), in the JSON and the text report."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from otel_support import FIXTURES
from realruns_support import TRACES, spans

from otelguard.analyzer import analyze
from otelguard.cli import main
from otelguard.engine.pricing import price_usd, wait_until_loaded

CAPTURES = FIXTURES / "agent-clis"
DEEPSEEK = "deepseek/deepseek-chat"  # the runs' request model, priced as DeepSeek's deepseek-chat


@pytest.fixture(autouse=True)
def price_table() -> None:
    assert wait_until_loaded(timeout=30)


def model_usage_between(file: str, first: int, last: int) -> tuple[int, int]:
    """Input and output tokens of the run's model calls among steps `first`..`last` (the analyzer's
    steps: model and tool spans numbered from 1 in start order), read from the spans themselves."""
    steps = sorted((span for span in spans(file)
                    if span.attributes.get("gen_ai.operation.name") in ("chat", "execute_tool")),
                   key=lambda span: span.start_ns)
    chats = [span.attributes for span in steps[first - 1:last] if span.attributes["gen_ai.operation.name"] == "chat"]
    return (sum(int(chat["gen_ai.usage.input_tokens"]) for chat in chats),
            sum(int(chat["gen_ai.usage.output_tokens"]) for chat in chats))


# Each run's acted tool loop, read by hand: the command repeated with the same result, the step of
# its first repeat and the step of the loop's last verdict. (Model calls are the odd steps: the one
# before a tool step asked for it.)
REAL_LOOPS = [
    # `git checkout src/marshmallow/schema.py` at 180, 190, 198 (reminded), again at 204 and 214
    ("deepseek_chat_dev_rerun__marshmallow-code__marshmallow-1343.otlp.jsonl.gz", 190, 198, 214),
    # `python test_author_pk.py` at 180, 184, 192 (reminded), the same output each time
    ("deepseek_chat_test_1-100__django__django-12470.otlp.jsonl.gz", 184, 192, 192),
]


@pytest.mark.parametrize(("file", "first_repeat", "first_verdict", "last_verdict"), REAL_LOOPS)
def test_a_real_run_s_tool_loop_is_reported_with_the_usage_of_the_model_calls_that_asked_for_its_repeats(
        file: str, first_repeat: int, first_verdict: int, last_verdict: int):
    (agent,) = [agent for agent in analyze([TRACES / file]).findings.agents() if agent.acted_loops]
    (loop,) = agent.acted_loops
    assert (loop.kind, loop.rule, loop.first_step, loop.last_step) == (
        "no_progress", "same-result", first_verdict, last_verdict)
    tokens = model_usage_between(file, first_repeat - 1, last_verdict - 1)
    assert (loop.spend.input_tokens, loop.spend.output_tokens) == tokens
    assert loop.spend.cost_usd == pytest.approx(price_usd(DEEPSEEK, *tokens)) and loop.spend.cost_usd > 0


def test_the_report_gives_the_real_runs_tool_loops_per_agent_and_in_total(capsys):
    """Both runs at once: the JSON's summary and agents, and the text's loop lines."""
    files = [str(TRACES / file) for file, *_ in REAL_LOOPS]
    assert main(["analyze", "--json", *files]) == 0
    report = json.loads(capsys.readouterr().out)
    loops = [loop for agent in report["agents"] for loop in agent["loops"]]
    assert [(loop["kind"], loop["rule"], loop["unpriced"]) for loop in loops] == [
        ("no_progress", "same-result", None)] * 2
    summary = report["summary"]["loops"]
    assert (summary["count"], summary["tool_call_loops"], summary["model_call_loops"], summary["unpriced"]) == (2, 2, 0, 0)
    assert summary["input_tokens"] == sum(loop["input_tokens"] for loop in loops)
    assert summary["cost_usd"] == pytest.approx(sum(loop["cost_usd"] for loop in loops), abs=2e-6)  # (each rounded)
    assert main(["analyze", *files]) == 0
    text = capsys.readouterr().out
    assert (f"loops: 2 loops of tool calls, {summary['input_tokens']:,} tokens in, {summary['output_tokens']:,} out, "
            f"${summary['cost_usd']:,.2f}") in text
    assert text.count("    mini-swe-agent: 1 loop, ") == 2


# --- the coding-agent CLIs' telemetry ------------------------------------------------------------------

# Each capture: one call with identical arguments 6 times (the repeat ladder reminds at 3 and 5), then
# read/count alternating 3 times (a no-progress cycle, reminded at the sixth of those calls). Every
# model call of the scripted model reports 1,200 tokens in and 30 out, in the CLI's own record of it.
CLI_CAPTURES = {"claude": "claude-opus-4-8", "codex": "fake-model", "gemini": "gemini-2.5-pro", "opencode": "fake-model"}
LADDER_CALLS = 5  # calls 2 to 6, each asked for by its own model call
CYCLE_CALLS = 4  # its first repeat is the third call of the alternation: calls 9 to 12


@pytest.mark.parametrize("capture", sorted(CLI_CAPTURES))
def test_a_cli_s_tool_loops_are_reported_with_the_tokens_its_telemetry_told(capture: str):
    files = [CAPTURES / capture / "logs.jsonl.gz", CAPTURES / capture / "traces.jsonl.gz"]
    (agent,) = [agent for agent in analyze(files).findings.agents() if agent.acted_loops]
    loops = agent.acted_loops
    assert [(loop.kind, loop.spend.input_tokens, loop.spend.output_tokens) for loop in loops] == [
        ("repeated_tool_call", 1200 * LADDER_CALLS, 30 * LADDER_CALLS),
        ("no_progress", 1200 * CYCLE_CALLS, 30 * CYCLE_CALLS)]
    model = CLI_CAPTURES[capture]
    for loop in loops:
        expected = price_usd(model, loop.spend.input_tokens, loop.spend.output_tokens)
        if expected is None:  # the scripted model's name is in no price table: said so
            assert (loop.spend.cost_usd, loop.spend.unpriced) == (None, "model not in genai-prices' table")
        else:
            assert loop.spend.cost_usd == pytest.approx(expected)


def test_a_cli_s_hook_records_alone_give_tool_loops_whose_spend_is_unknown(tmp_path: Path, capsys):
    """The tool calls without the CLI's model-call records (its tool-result log alone): the loops are
    reported, their tokens unknown and said so, not 0."""
    only_tools = tmp_path / "claude-tool-results.jsonl"
    with gzip.open(CAPTURES / "claude" / "logs.jsonl.gz", "rt") as lines, open(only_tools, "w") as out:
        for line in lines:
            request = json.loads(line)
            for resource in request["resourceLogs"]:
                for scope in resource["scopeLogs"]:
                    scope["logRecords"] = [record for record in scope["logRecords"]
                                           if {"key": "event.name", "value": {"stringValue": "api_request"}}
                                           not in record["attributes"]]
            out.write(json.dumps(request) + "\n")
    assert main(["analyze", "--json", str(only_tools)]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]["loops"]
    assert (summary["count"], summary["input_tokens"], summary["cost_usd"]) == (2, 0, None)
    assert summary["unpriced_by_reason"] == {"no token usage reported": 2}
    assert main(["analyze", str(only_tools)]) == 0
    report = " ".join(capsys.readouterr().out.split())  # (lines are wrapped to the report's width)
    assert "cost unknown (2 not priced: no token usage reported)" in report



def test_opencode_s_tool_calls_stand_after_the_request_that_asked_for_them(tmp_path: Path):
    """opencode runs a tool inside its step's span: the step's request (`ai.streamText.doStream`, with
    the usage) ends after the tool. Each request of the capture given its own token count, a loop's
    tokens are those of the requests that asked for its repeated calls (the request in each call's
    step), not the requests before them."""
    requests: dict[str, int] = {}  # step span id -> the input tokens given to its request
    steps: list[tuple[int, str]] = []  # (start, step span id) of each tool call
    rewritten = tmp_path / "traces.jsonl"
    with gzip.open(CAPTURES / "opencode" / "traces.jsonl.gz", "rt") as lines, open(rewritten, "w") as out:
        for line in lines:
            request = json.loads(line)
            for resource in request["resourceSpans"]:
                for scope in resource["scopeSpans"]:
                    for span in scope["spans"]:
                        if span["name"] == "ai.streamText.doStream":
                            tokens = requests[span["parentSpanId"]] = 1000 * (len(requests) + 1)
                            for attribute in span["attributes"]:
                                if attribute["key"] == "ai.usage.inputTokens":
                                    attribute["value"] = {"intValue": str(tokens)}
                        elif span["name"] == "ai.toolCall":
                            steps.append((int(span["startTimeUnixNano"]), span["parentSpanId"]))
            out.write(json.dumps(request) + "\n")
    asked = [requests[step] for _, step in sorted(steps)]  # each tool call's request's tokens, in call order
    (agent,) = [agent for agent in analyze([rewritten]).findings.agents() if agent.acted_loops]
    assert [loop.spend.input_tokens for loop in agent.acted_loops] == [
        sum(asked[1:6]),  # the ladder: calls 2 to 6
        sum(asked[8:12])]  # the cycle: calls 9 to 12


def test_the_summary_names_the_costliest_looping_agents_and_counts_the_rest(tmp_path: Path, capsys):
    """Thirty runs that each loop on a tool: the summary's loop line counts all thirty, names ten agents
    and counts the other twenty (every one is in --json), so its length does not grow with the input."""
    import hostile_inputs

    path = tmp_path / "thirty.jsonl"
    hostile_inputs.traces_with_a_verdict(path, 30)
    assert main(["analyze", str(path)]) == 0
    summary = " ".join(capsys.readouterr().out.split("\nsummary\n", 1)[1].split())
    assert "loops: 30 loops of tool calls" in summary
    assert "and 20 more agents with loops (--json lists every one)" in summary
    assert main(["analyze", "--json", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert sum(len(agent["loops"]) for agent in document["agents"]) == 30 == document["summary"]["loops"]["count"]
