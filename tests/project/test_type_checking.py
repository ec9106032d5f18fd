"""mypy, configured in pyproject.toml, accepts the package and the public API used as the README shows
it (`type_checking/public_api_usage.py`), and rejects that use with one field of the wrong type.

mypy runs once for the three (in a subprocess, from the repository root, so that pyproject.toml's
settings apply). Its cache is the repository's `.mypy_cache`: a first run checks the package's
imports too and takes a minute or more; a warm one, seconds.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import paths

ROOT = paths.ROOT
USAGE = paths.TYPE_CHECKING_USAGE
RIGHT = 'span = SpanView("x", 1, 2)'
WRONG = 'span = SpanView("x", "1", 2)'  # the trace id as a string: SpanView's trace_id is an int
ERROR = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): error: (?P<message>.*)$", re.MULTILINE)
MAX_IGNORES = 20

pytestmark = pytest.mark.timeout(600)  # a cold mypy cache: the whole dependency tree is read once


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str]]]:
    """mypy's errors by file (`package`, `usage`, `wrong`): (line, message) each."""
    usage = USAGE.read_text(encoding="utf-8")
    assert usage.count(RIGHT) == 1
    wrong = tmp_path_factory.mktemp("typing") / "public_api_usage_wrong.py"
    wrong.write_text(usage.replace(RIGHT, WRONG), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mypy", "otelguard", str(USAGE), str(wrong)],
                          cwd=ROOT, capture_output=True, text=True, timeout=540)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: mypy itself failed (bad config, crash)
    errors: dict[str, list[tuple[int, str]]] = {"package": [], "usage": [], "wrong": []}
    for found in ERROR.finditer(done.stdout):
        path = Path(found["path"])
        where = "wrong" if path.name == wrong.name else "usage" if path.name == USAGE.name else "package"
        errors[where].append((int(found["line"]), f"{found['path']}:{found['line']}: {found['message']}"))
    return errors


def test_the_package_type_checks(mypy_errors):
    """`check_untyped_defs` on, no module left out: every error is fixed, none ignored wholesale."""
    assert [message for _, message in mypy_errors["package"]] == []


def test_the_public_api_type_checks_as_the_readme_uses_it(mypy_errors):
    """Records built positionally (`SpanView("x", 1, 2)`, a `Verdict(...)`) and the README's calls pass."""
    assert [message for _, message in mypy_errors["usage"]] == []


def test_a_field_of_the_wrong_type_is_rejected(mypy_errors):
    """The same file with a string where SpanView takes an int: exactly that line is an error."""
    line = USAGE.read_text(encoding="utf-8").splitlines().index(RIGHT) + 1
    assert [(at, "SpanView" in message and "[arg-type]" in message) for at, message in mypy_errors["wrong"]] == \
        [(line, True)]


def test_every_type_ignore_in_the_package_names_its_code_and_says_why():
    """At most a few, each `# type: ignore[code]` followed by a comment giving its reason."""
    ignores = [(path, line) for path in sorted((ROOT / "otelguard").rglob("*.py"))
               for line in path.read_text(encoding="utf-8").splitlines() if "type: ignore" in line]
    unexplained = [f"{path.relative_to(ROOT)}: {line.strip()}" for path, line in ignores
                   if not re.search(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]  # \S", line)]
    assert unexplained == []
    assert len(ignores) <= MAX_IGNORES
