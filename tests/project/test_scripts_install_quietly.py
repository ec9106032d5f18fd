"""The scripts' first run (scripts/_venv.sh, sourced by scripts/test and scripts/demo) installs without
setuptools' "Editable installation" notice, which pip shows of the build backend. A real install into a
fresh venv (dependencies left out, still about 40 s): run by the thorough profile, as .ci/run sets it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import paths

ROOT = paths.ROOT

pytestmark = pytest.mark.thorough  # a real editable install, about 40 s


def test_the_first_install_shows_no_editable_installation_notice(tmp_path: Path) -> None:
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ("otelguard", "scripts"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(["bash", "-c", "set -euo pipefail; source scripts/_venv.sh test"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_NO_DEPS": "1"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".venv" / ".installed-test").exists()
    assert "Editable installation" not in done.stdout + done.stderr
