"""`otelguard demo --html PATH` writes the run's HTML report: each scenario's agent in the index, the
verdicts that acted on the page."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from html_report_support import page_data

from otelguard.demo import run as demo


def test_the_demo_writes_its_report(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    page = tmp_path / "demo.html"
    assert demo.main(parser.parse_args(["--html", str(page)]), out=out, err=err) == 0, err.getvalue()
    assert "wrote the run's HTML report to" in " ".join(out.getvalue().split())
    data = page_data(page.read_text(encoding="utf-8"))
    assert {"weather-agent", "planner-agent"} <= {row[1] for row in data["og-runs"]}
    assert {row[7] for row in data["og-verdicts"]} >= {"remind"}
