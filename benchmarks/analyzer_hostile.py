"""Memory and time of `otelguard analyze` on hostile and huge inputs (issue 20), at full size.

    .venv/bin/python benchmarks/analyzer_hostile.py [--scale 1.0] [--only SUBSTRING]

Each input is written into a temporary directory by `tests/support/hostile_inputs.py` (the writers the tests
use at small sizes) and analysed by a fresh child process (`python -m otelguard analyze`); its peak
RSS (VmHWM, Linux) and wall time are measured. Prints a Markdown table for benchmarks/RESULTS.md:
per input its size, the exit status, the reminders found of those in it, what the coverage block
said, peak memory and time. `--scale` shrinks or grows every input (1.0: the sizes of the issue's
probe, except where noted in the table).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the tests' helpers

import hostile_inputs as hostile  # noqa: E402

MiB = 2**20
_CHILD = """import sys
from otelguard.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
status = open('/proc/self/status').read()
print('VmHWM', int(status.split('VmHWM:')[1].split()[0]) * 1024, file=sys.stderr)
sys.exit(code)
"""


def cases(scale: float) -> list[tuple[str, object, int, tuple[str, ...]]]:
    """(name, writer, units, extra arguments)."""

    def n(units: int) -> int:
        return max(1, int(units * scale))

    return [
        ("12,000 looping runs open at once", hostile.concurrent_looping_runs, n(12_000), ()),
        ("12,000 looping runs open at once, --max-tracked-agents 20000", hostile.concurrent_looping_runs,
         n(12_000), ("--max-tracked-agents", "20000")),
        ("20,000 looping runs open at once", hostile.concurrent_looping_runs, n(20_000), ()),
        ("cut-off first record, then 100,000 records", hostile.cut_off_first_record, n(100_000), ()),
        ("first line `{`, then 100,000 records", hostile.open_brace_then_records, n(100_000), ()),
        ("resourceSpans twice in one record", lambda path, _: hostile.duplicated_resource_spans(path), 1, ()),
        ("1 GiB of spaces, no newline (gzip)", hostile.spaces_without_newline, n(1024 * MiB), ()),
        ("a record without end, 1 GiB (gzip)", hostile.long_line, n(1024 * MiB), ()),
        ("first line `{`, then 20 M short lines (160 MB)", hostile.open_brace_then_short_lines, n(20_000_000), ()),
        ("100 MiB of newlines", hostile.newlines, n(100 * MiB), ()),
        ("agent runs nested 3,000 deep, 300-character names", hostile.nested_runs, n(3_000), ()),
        ("100,000 traces, each with a verdict (text)", hostile.traces_with_a_verdict, n(100_000), ("--text",)),
        ("100,000 traces, each with a verdict (--json)", hostile.traces_with_a_verdict, n(100_000), ()),
        ("ANSI escapes in a tool name (text)", lambda path, _: hostile.ansi_tool_name(path), 1, ("--text",)),
        ("700-byte YAML config of nested aliases", lambda path, _: path.write_text(
            hostile.one_run_per_line(1)[0] + "\n"), 1, ("--laughs",)),
    ]


def run(path: Path, args: tuple[str, ...], workdir: Path, ansi: bool) -> dict[str, object]:
    argv = ["analyze", str(path)]
    text = "--text" in args
    if "--laughs" in args:
        config = workdir / "laughs.yaml"
        config.write_text(hostile.BILLION_LAUGHS_YAML)
        argv += ["--config", str(config)]
    argv += [a for a in args if a not in ("--text", "--laughs")]
    if not text:
        argv.append("--json")
    out_path = workdir / "out"
    started = time.perf_counter()
    with out_path.open("wb") as out:
        done = subprocess.run([sys.executable, "-c", _CHILD, *argv], stdout=out, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    lines = done.stderr.strip().splitlines()
    peak = int(lines[-1].split()[1]) if lines and lines[-1].startswith("VmHWM") else 0
    error = next((line for line in lines if "error" in line), "")
    error = error.replace(str(workdir) + "/", "").replace("otelguard analyze: error: ", "")
    result: dict[str, object] = {"exit": done.returncode, "peak": peak, "seconds": seconds, "error": error}
    output = out_path.read_bytes()
    if ansi:
        result["escape_in_output"] = b"\x1b" in output
    elif not text and done.returncode in (0, 1) and output:
        document = json.loads(output)
        coverage = document["coverage"]
        result.update(reminders=document["summary"]["findings_by_action"].get("remind", 0),
                      evicted=coverage["agents_evicted"], incomplete=coverage["verdict_scope_incomplete"],
                      duplicate_keys=coverage["duplicate_keys"], unparsable=coverage["unparsable_lines"])
    return result


def describe(result: dict[str, object], expect: hostile.Expect) -> str:
    if result.get("error"):
        return f"`{str(result['error'])[:150]}`"
    notes = []
    if "reminders" in result:
        notes.append(f"reminders {result['reminders']:,}/{expect.reminders:,}")
        if result["evicted"]:
            notes.append(f"agents_evicted {result['evicted']:,}")
        if result["duplicate_keys"]:
            notes.append(f"duplicate_keys {result['duplicate_keys']}")
        if result["unparsable"]:
            notes.append(f"unparsable lines {result['unparsable']}")
        notes.append("scope INCOMPLETE" if result["incomplete"] else "scope complete")
    if "escape_in_output" in result:
        notes.append("ESC reached the output" if result["escape_in_output"] else "no ESC in the output")
    return "; ".join(notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    options = parser.parse_args()
    print("| input | size | exit | what the analysis said | peak RSS | time |")
    print("|---|---:|---:|---|---:|---:|")
    for name, write, units, args in cases(options.scale):
        if options.only not in name:
            continue
        with tempfile.TemporaryDirectory() as directory:
            workdir = Path(directory)
            path = workdir / ("input.jsonl.gz" if "gzip" in name else "input.jsonl")
            expect = write(path, units)  # type: ignore[operator]
            size = path.stat().st_size
            result = run(path, args, workdir, ansi="ANSI" in name)
        print(f"| {name} | {size / MiB:,.1f} MB | {result['exit']} | {describe(result, expect or hostile.Expect())} | "
              f"{int(result['peak']) / MiB:,.0f} MiB | {float(result['seconds']):,.1f} s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
