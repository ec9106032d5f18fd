"""External components some tests need, named by a marker: what they are and the command that installs them.

A test that needs a real binary carries the component's marker (`@pytest.mark.prometheus`, registered in
pyproject.toml). Before such a test runs, tests/conftest.py calls `require`: when a binary is missing the
test is skipped with the command that installs it, so a developer without it can run the rest of the
suite; under CI (CI=true, as CI services set it) a missing binary fails the test instead, so a CI run
never passes by skipping a tier. `.ci/run` installs every component listed here.

The coding-agent CLIs (`agent_cli`) are npm packages at pinned versions, installed into the
repository's `.agent-clis/` (or the prefix `OTELGUARD_AGENT_CLIS` names) and found there or on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import paths


@dataclass(frozen=True)
class Component:
    binaries: tuple[str, ...]
    install: str  # the command that installs every one of `binaries`
    search: tuple[str, ...] = ()  # directories looked in before PATH


# The CLIs the agent_cli tier drives, at the versions it was written against (.ci/run installs these).
AGENT_CLI_PACKAGES = tuple(json.loads(paths.AGENT_CLIS_JSON.read_text())["packages"])
AGENT_CLI_PREFIX = Path(os.environ.get("OTELGUARD_AGENT_CLIS") or paths.ROOT / ".agent-clis")


COMPONENTS: dict[str, Component] = {
    # Debian's prometheus package ships both the server and promtool.
    "prometheus": Component(binaries=("prometheus", "promtool"), install="apt-get install -y prometheus"),
    # Debian's package names the server prometheus-alertmanager (upstream: alertmanager) and ships amtool.
    "alertmanager": Component(
        binaries=("prometheus-alertmanager", "amtool"), install="apt-get install -y prometheus-alertmanager"
    ),
    # The HTML report's browser tests (tests/e2e/browser/): Debian's Chromium, driven by Playwright's Python API.
    "browser": Component(binaries=("chromium",), install="apt-get install -y chromium"),
    "agent_cli": Component(
        binaries=("claude", "gemini", "codex", "opencode"),
        install=f"npm install --prefix {AGENT_CLI_PREFIX} {' '.join(AGENT_CLI_PACKAGES)}",
        search=(str(AGENT_CLI_PREFIX / "node_modules" / ".bin"),),
    ),
}


# Fixtures that hand a test a component's binary: a test using one must carry the component's marker.
COMPONENT_FIXTURES: dict[str, str] = {
    "promtool": "prometheus", "prometheus_binary": "prometheus",
    "alertmanager_binary": "alertmanager", "amtool": "alertmanager",
    "chromium": "browser",
}


def in_ci() -> bool:
    """True under CI: CI set to anything but empty, 0 or false."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def missing_message(marker: str, binary: str) -> str:
    return f"{binary} not found (needed by the {marker!r} tests): install it with `{COMPONENTS[marker].install}`"


def binary(marker: str, name: str) -> str:
    """The path of `name`, one of the binaries of component `marker`; skip (fail under CI) when it is missing."""
    search = os.pathsep.join([*COMPONENTS[marker].search, os.environ.get("PATH", os.defpath)])
    path = shutil.which(name, path=search)
    if path is None:
        message = missing_message(marker, name)
        if in_ci():
            pytest.fail(message + " (CI is set: a missing component fails)", pytrace=False)
        pytest.skip(message)
    return path


def require(marker: str) -> None:
    """Skip (fail under CI) unless every binary of component `marker` is installed."""
    for name in COMPONENTS[marker].binaries:
        binary(marker, name)
