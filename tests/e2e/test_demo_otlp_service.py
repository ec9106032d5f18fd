"""`otelguard demo --otlp-service`: the CLI captures replayed over OTLP/HTTP to a service the demo
starts; each CLI's two repeat reminders and its no-progress cycle reminder (the captures' A/B
alternation) are printed as they fire, then counted by sender."""

from __future__ import annotations

import io

from otelguard.demo import run as demo


def test_demo_replays_cli_captures_to_a_service_and_prints_alerts() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert demo.main(["--otlp-service", "--speed", "200"], out=out, err=err) == 0, err.getvalue()
    text = out.getvalue().replace("\n      ", " ")  # an alert's line, wrapped to the report's width, rejoined
    for service, tool in (("claude-code", "Bash"), ("gemini-cli", "run_shell_command"), ("codex_exec", "exec_command"),
                          ("opencode", "bash")):
        alerts = [line for line in text.splitlines() if "ALERT" in line and f"service={service} " in line]
        assert [(line.split()[1], line.rsplit("count=", 1)[1]) for line in alerts] == [
            ("repeat-tool-reminder", "3"), ("repeat-tool-reminder", "5"), ("no-progress", "3")], text
        assert all("action=remind" in line for line in alerts)
        assert all(f"tool={tool}" in line for line in alerts[:2])
        assert f"{service}: repeat-tool-reminder repeat-threshold remind x2" in text
        assert f"{service}: no-progress cycle remind x1" in text


def test_demo_without_captures_says_where_to_point_it(tmp_path) -> None:
    err = io.StringIO()
    assert demo.main(["--otlp-service", "--captures", str(tmp_path / "none")], out=io.StringIO(), err=err) == 2
    assert "--captures DIR" in err.getvalue()
