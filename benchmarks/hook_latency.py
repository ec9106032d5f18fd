"""A CLI hook's whole wall time, interpreter start included: `otelguard hook claude-code` spawned as
Claude Code spawns it, one process per hook, on recorded stdin. Bar: p95 <= 100 ms.

The stdin is a real Claude Code session's PreToolUse / PostToolUse records (tests/fixtures/
agent_cli_hooks/claude-code.jsonl: six identical calls, then an A/B alternation), replayed in turn
with fresh call ids, so the runs mix plain calls, reminders and (past the 8th identical call) denials,
against a session history that already holds `--history` calls (the hook replays up to 256 events).
The history is in a temporary directory; the config is validated once before timing (as after a
user's first call). The package's bytecode is compiled first, as `pip install` does (a checkout run
with PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module in every process).

Printed: wall p50 / p95 / max, the processes' CPU time (user + system, which the machine's load
changes far less than the wall time), the same for a bare `python -c pass` of the same interpreter,
and the load average before and after: on a shared machine the wall figures move with the load.
`--instructions` adds one hook's and one bare interpreter's instruction counts (valgrind callgrind),
which no load changes.

Run: .venv/bin/python benchmarks/hook_latency.py [--runs 200] [--history 100] [--otelguard PATH] [--instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BAR_P95_MS = 100.0
RECORDED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "agent_cli_hooks" / "claude-code.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--history", type=int, default=100, help="calls already in the session's history")
    parser.add_argument("--otelguard", default=str(Path(sys.executable).with_name("otelguard")),
                        help="the otelguard command to spawn (default: beside this Python)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions (needs valgrind)")
    args = parser.parse_args()
    command = shutil.which(args.otelguard) or args.otelguard
    python = _interpreter_of(command)
    _compile_package(python)
    records = [json.loads(line)["stdin"] for line in RECORDED.read_text().splitlines()]

    with tempfile.TemporaryDirectory() as state:
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("OTELGUARD_", "OTEL_"))}
        env["OTELGUARD_HOOK_DB"] = os.path.join(state, "hooks.sqlite3")
        env["HOME"] = state  # no user config
        session = "bench-session"
        for n in range(args.history):  # earlier calls of the session, all different
            for phase, record in (("PreToolUse", records[0]), ("PostToolUse", records[1])):
                payload = dict(record, session_id=session, hook_event_name=phase, tool_use_id=f"history-{n}",
                               tool_input={"command": f"echo {n}"})
                _spawn(command, payload, env)
        load_before = os.getloadavg()
        walls, cpus, answered = [], [], 0
        for n in range(args.runs):
            record = records[n % len(records)]
            payload = dict(record, session_id=session, tool_use_id=f"run-{n // 2}")
            wall, cpu, stdout = _spawn(command, payload, env)
            walls.append(wall)
            cpus.append(cpu)
            answered += bool(stdout)
        bare_walls, bare_cpus = zip(*[_spawn_bare(python) for _ in range(min(args.runs, 50))])
        load_after = os.getloadavg()
        if args.instructions:
            payload = dict(records[1], session_id=session, tool_use_id="counted")
            hook_ir = _instructions([command, "hook", "claude-code"], json.dumps(payload).encode(), env)
            bare_ir = _instructions([python, "-c", "pass"], b"", env)

    p50, p95 = _percentile(walls, 50), _percentile(walls, 95)
    print(f"otelguard hook claude-code: {command}")
    print(f"  runs {args.runs} (of which {answered} answered: reminders or denials), session history "
          f"{args.history} calls, {os.cpu_count()} CPUs")
    print(f"  wall  p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   max {max(walls):6.1f} ms")
    print(f"  cpu   p50 {_percentile(cpus, 50):6.1f} ms   p95 {_percentile(cpus, 95):6.1f} ms")
    print(f"  bare `python -c pass`: wall p50 {_percentile(list(bare_walls), 50):.1f} ms, "
          f"cpu p50 {_percentile(list(bare_cpus), 50):.1f} ms")
    print(f"  load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    if args.instructions:
        print(f"  instructions: hook {hook_ir / 1e6:.0f} M, bare interpreter {bare_ir / 1e6:.0f} M (callgrind)")
    verdict = "PASS" if p95 <= BAR_P95_MS else "FAIL"
    print(f"  {verdict}: wall p95 {p95:.1f} ms against the bar of {BAR_P95_MS:.0f} ms")
    return 0 if verdict == "PASS" else 1


def _spawn(command: str, payload: dict, env: dict[str, str]) -> tuple[float, float, bytes]:
    data = json.dumps(payload).encode()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([command, "hook", "claude-code"], input=data, capture_output=True, env=env, check=True)
    wall = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done.stdout


def _spawn_bare(python: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([python, "-c", "pass"], check=True)
    wall = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def _instructions(command: list[str], data: bytes, env: dict[str, str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command], input=data,
                          capture_output=True, env=env, check=True)
    collected = [line for line in done.stderr.decode().splitlines() if "Collected :" in line]
    return int(collected[-1].split()[-1])


def _interpreter_of(command: str) -> str:
    """The Python a console script runs (its shebang line)."""
    with open(command, "rb") as script:
        first = script.readline().decode().strip()
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


def _compile_package(python: str) -> None:
    """Bytecode for the otelguard that command runs, as `pip install` writes it."""
    code = "import compileall, os, otelguard; compileall.compile_dir(os.path.dirname(otelguard.__file__), quiet=1)"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([python, "-c", code], check=True, env=env)


def _percentile(values: list[float], percent: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(percent) - 1] if len(values) > 1 else values[0]


if __name__ == "__main__":
    sys.exit(main())
