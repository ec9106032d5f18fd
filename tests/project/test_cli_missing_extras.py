"""What each command needs, said up front: `otelguard --help` names the extras, `serve --help` its
endpoints, and `otelguard serve` without the otelguard[serve] extra names the extra to install (exit 2)
instead of reporting an internal error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from otelguard.cli import main


@pytest.mark.parametrize("missing", ["opentelemetry.exporter.prometheus", "uvicorn"])
def test_serve_without_its_extra_names_the_extra(missing: str) -> None:
    # A module set to None in sys.modules fails to import as an uninstalled one does.
    program = (f"import sys; sys.modules[{missing!r}] = None; from otelguard.cli import main; "
               "sys.exit(main(['serve', '--http', '127.0.0.1:0', '--grpc', 'off', '--metrics', '127.0.0.1:0']))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"otelguard serve: error: needs otelguard[serve] (no module named {missing!r}): "
        "pip install 'otelguard[serve]'"]


def test_help_says_what_each_command_needs_and_serve_names_its_endpoints(capsys) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "demo needs otelguard[demo] and serve otelguard[serve]" in text
    assert "analyze, hook and install-hook need otelguard alone" in text
    assert main(["serve", "--help"]) == 0
    text = capsys.readouterr().out
    for endpoint in ("/v1/traces", "/v1/verdicts?session=ID", "/v1/hook/<cli>", "GET  /metrics"):
        assert endpoint in text
