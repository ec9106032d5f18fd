"""The command line's exit codes a CI gate relies on, and `--version`."""

from __future__ import annotations

from analyzer_support import request, run, tool_loop, write

from otelguard import __version__


def test_version_prints_the_version(capsys):
    """`otelguard --version` prints the package version and exits 0."""
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"otelguard {__version__}"


def test_require_complete_fails_an_input_with_nothing_to_judge(tmp_path, capsys):
    """An empty trace file passes `--fail-on remind` (nothing reaches it) but not `--require-complete`."""
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    assert run(capsys, "analyze", str(path), "--fail-on", "remind")[0] == 0
    code, _, err = run(capsys, "analyze", str(path), "--fail-on", "remind", "--require-complete")
    assert code == 4 and "--require-complete" in err


def test_require_complete_fails_an_incomplete_verdict_scope(tmp_path, capsys):
    """A file with an unparsable line has an incomplete verdict scope: exit 4, though steps were judged."""
    path = write(tmp_path / "partial.jsonl", request(*tool_loop(2)), "{not json")
    code, _, _ = run(capsys, "analyze", str(path), "--require-complete")
    assert code == 4


def test_require_complete_passes_a_complete_judged_input(tmp_path, capsys):
    """Every line read and steps judged: `--require-complete` exits 0."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(2)))
    assert run(capsys, "analyze", str(path), "--require-complete")[0] == 0


def test_fail_on_is_reported_before_require_complete(tmp_path, capsys):
    """A verdict reaching --fail-on exits 1 even when the scope is also incomplete."""
    path = write(tmp_path / "loop.jsonl", request(*tool_loop(3)), "{not json")
    assert run(capsys, "analyze", str(path), "--fail-on", "remind", "--require-complete")[0] == 1
