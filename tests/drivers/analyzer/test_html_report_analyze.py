"""`otelguard analyze --html`: the page beside the unchanged text output and exit codes; its data
agrees with `--json`; untrusted strings stay data; `--html-no-content` leaves content out."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from html_report_support import (
    CORPUS,
    CORPUS_QUIET,
    CORPUS_WITH_VERDICTS,
    HOSTILE,
    PAYLOADS,
    csp_of,
    looping_run,
    nonce_of,
    page_data,
    page_parts,
    write_traces,
)

from otelguard.cli import main


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_the_page_comes_beside_the_same_text_and_exit_code(tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "loop.jsonl", looping_run())
    page = tmp_path / "report.html"
    plain = _run("analyze", str(traces), "--fail-on", "remind")
    with_html = _run("analyze", str(traces), "--fail-on", "remind", "--html", str(page))
    assert plain[0] == with_html[0] == 1
    assert plain[1] == with_html[1]
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_every_acting_verdict_of_the_json_is_in_the_page_with_its_loop_cost(tmp_path: Path) -> None:
    files = [str(CORPUS / name) for name in (*CORPUS_WITH_VERDICTS, *CORPUS_QUIET)]
    page = tmp_path / "report.html"
    code, out, _ = _run("analyze", *files, "--json", "--html", str(page))
    assert code == 0
    document = json.loads(out)
    data = page_data(page.read_text(encoding="utf-8"))
    runs = {row[2]: row for row in data["og-runs"]}  # by agent key
    assert len(runs) == len(document["agents"]) == 2
    shown = {(row[0], row[2], row[7]): row for row in data["og-verdicts"]}
    acting = [v for v in document["verdicts"] if v["action"] != "none"]
    assert acting
    for verdict in acting:
        run = runs[verdict["agent_key"]]
        assert run[14], "a run with an acting verdict has a timeline"
        row = shown[(run[0], verdict["step"], verdict["action"])]
        assert row[6] == verdict["rule"]
        agent = next(a for a in document["agents"] if a["key"] == verdict["agent_key"])
        loop = next(l for l in agent["loops"] if l["first_step"] <= verdict["step"] <= l["last_step"])
        assert row[13][:3] == [loop["input_tokens"], loop["output_tokens"], loop["cost_usd"]]
        assert row[11] in ("stopped", "continued")
        steps = [step[0] for step in data[f"og-run-{run[0]}"]["steps"]]
        assert verdict["step"] in steps
    quiet = [row for row in data["og-runs"] if not row[6]]
    assert quiet and not any(row[14] for row in quiet), "a run without an acting verdict is in the index only"
    assert all(f"og-run-{row[0]}" not in data for row in quiet)
    head = data["og-head"]
    totals = document["summary"]["loops"]
    assert [head["totals"]["loops"], *head["totals"]["spend"][:2]] == \
        [totals["count"], totals["input_tokens"], totals["output_tokens"]]
    by_rule = {(r["guard"], r["rule"]): r for r in head["rules"]}
    assert set(by_rule) == {(v["guard"], v["rule"]) for v in acting} != set()
    for (guard, rule), counts in by_rule.items():
        rows = [v for v in acting if (v["guard"], v["rule"]) == (guard, rule)]
        assert counts["acting"] == len(rows) == counts["stopped"] + counts["continued"]


def test_hostile_strings_stay_data(tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "hostile.jsonl", looping_run(
        agent=HOSTILE, tool=HOSTILE, arguments=json.dumps({"q": HOSTILE}), result=HOSTILE, text=HOSTILE,
        conversation=HOSTILE))
    page = tmp_path / "report.html"
    code, _, err = _run("analyze", str(traces), "--html", str(page))
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    parts = page_parts(html)
    csp = csp_of(html)
    assert "default-src 'none'" in csp
    nonce = nonce_of(csp)
    runnable = [attrs for attrs, _ in parts.scripts if attrs.get("type") != "application/json"]
    assert runnable == [{"nonce": nonce}], "one script runs: the page's own"
    assert parts.styles == [{"nonce": nonce}]
    assert not {"img", "svg", "iframe", "a", "object", "embed"} & set(parts.tags)
    for _, text in parts.scripts:
        assert "\u2028" not in text and "\u2029" not in text
    data = page_data(html)
    assert any(row[1] == HOSTILE.replace("\ud800", "\ufffd") or row[1] == HOSTILE for row in data["og-runs"])
    steps = next(value for key, value in data.items() if key.startswith("og-run-"))["steps"]
    first_tool = next(step for step in steps if step[1] == "tool")
    assert PAYLOADS[3] in first_tool[8] and first_tool[10] == HOSTILE  # arguments (canonical JSON) and result


def test_no_content_leaves_arguments_results_and_messages_out(tmp_path: Path) -> None:
    secret = "s3cr3t-argument-value"
    traces = write_traces(tmp_path / "loop.jsonl", looping_run(arguments=json.dumps({"q": secret}),
                                                                result=f"result {secret}", text=f"text {secret}"))
    page = tmp_path / "report.html"
    code, _, _ = _run("analyze", str(traces), "--html", str(page), "--html-no-content")
    assert code == 0
    html = page.read_text(encoding="utf-8")
    assert secret not in html
    data = page_data(html)
    assert data["og-head"]["content"] is False
    assert data["og-verdicts"] and all(row[8] is None for row in data["og-verdicts"])


def test_html_no_content_needs_html_and_an_unwritable_path_is_a_usage_error(tmp_path: Path) -> None:
    traces = write_traces(tmp_path / "loop.jsonl", looping_run())
    assert _run("analyze", str(traces), "--html-no-content")[0] == 2
    code, _, err = _run("analyze", str(traces), "--html", str(tmp_path / "missing" / "report.html"))
    assert code == 2 and "--html" in err
