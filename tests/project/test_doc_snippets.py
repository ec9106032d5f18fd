"""Every fenced Python block in the README and docs/ is code that runs: it is either a marked region of
a script in examples/ (`# [docs:NAME]` ... `# [/docs:NAME]`, compared dedented; test_examples_run.py
runs the scripts), or it runs as is in a fresh interpreter. The strict MkDocs build passes (a broken
link, a missing anchor or a page left out of the nav fails it). Both run in the thorough profile (.ci/run's)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
import paths

ROOT = paths.ROOT
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
REGION = re.compile(r"^[ \t]*# \[docs:(?P<name>[\w-]+)\]\n(?P<body>.*?)^[ \t]*# \[/docs:(?P=name)\]", re.S | re.M)


def regions() -> dict[str, str]:
    found: dict[str, str] = {}
    for script in sorted((ROOT / "examples").glob("*.py")):
        for match in REGION.finditer(script.read_text()):
            assert match["name"] not in found, f"region {match['name']} marked twice"
            found[match["name"]] = textwrap.dedent(match["body"]).strip()
    return found


def python_blocks() -> list[tuple[str, str]]:
    return [(f"{document.name}:{document.read_text()[:match.start()].count(chr(10)) + 1}", match[1])
            for document in DOCUMENTS for match in PYTHON_BLOCK.finditer(document.read_text())]


BLOCKS = python_blocks()
REGIONS = regions()


@pytest.mark.thorough  # a fresh interpreter a block, and the docs' build: seconds the default run has not to spare
@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_python_block_is_an_example_region_or_runs_as_is(where, code, tmp_path):
    if code.strip() in REGIONS.values():
        return
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{where}: neither an examples/ region nor runnable as is:\n{done.stderr}"


def test_every_example_region_is_shown_somewhere():
    shown = {code.strip() for _, code in BLOCKS}
    assert [name for name, body in REGIONS.items() if body not in shown] == []


@pytest.mark.thorough
def test_the_docs_build_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
