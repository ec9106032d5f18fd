"""A CLI hook's whole wall time, interpreter start included: `otelguard hook claude-code` (or `--cli`
another) spawned as the CLI spawns it, one process per hook, on recorded stdin. Bars: p95 <= 200 ms
on the local path, p95 <= 100 ms through `otelguard serve` (`--service`).

The stdin is a real session's pre- and post-tool hook records (tests/fixtures/agent_cli_hooks/
<cli>.jsonl: six identical calls, then an A/B alternation), replayed in turn with fresh call ids, so the runs mix plain calls, reminders and (past the 8th identical call) denials,
against a session history that already holds `--history` calls (the hook replays up to 256 events).
The history is in a temporary directory; the config is validated once before timing (as after a
user's first call). The package's bytecode is compiled first, as `pip install` does (a checkout run
with PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module in every process).

Printed: wall p50 / p95 / max, the processes' CPU time (user + system, which the machine's load
changes far less than the wall time), the same for a bare `python -c pass` of the same interpreter,
and the load average before and after: on a shared machine the wall figures move with the load.
`--instructions` adds one hook's and one bare interpreter's instruction counts (valgrind callgrind),
which no load changes.

`--service` starts `otelguard serve` and sets OTELGUARD_URL, so each hook asks the warm service
(`POST /v1/hook/<cli>`) instead of importing the engine and replaying the history itself.

Run: .venv/bin/python benchmarks/hook_latency.py [--cli claude-code] [--runs 200] [--history 100]
     [--otelguard PATH] [--instructions] [--service]

Measure an installed otelguard, not the repository's editable one (its import finder costs every
start): `python -m venv /tmp/og && /tmp/og/bin/pip install '.[serve]'`, then `--otelguard
/tmp/og/bin/otelguard` (`[serve]` only for `--service`).
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

from otelguard.hooks import CLIS

BAR_LOCAL_P95_MS = 200.0
BAR_SERVICE_P95_MS = 100.0
RECORDED = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "agent_cli_hooks"


def _as_call(cli: str, record: dict, session: str, call_id: str, arguments: dict | None = None) -> dict:
    """`record` (a recorded hook input of `cli`) as a call of `session` with id `call_id` (Gemini CLI
    sends none), with other arguments if given."""
    record = json.loads(json.dumps(record))
    if cli == "opencode":
        record["input"].update(sessionID=session, callID=call_id)
        if arguments is not None:
            record["input"]["args"] = record["output"]["args"] = arguments
        return record
    record["session_id"] = session
    if cli != "gemini-cli":
        record["tool_use_id"] = call_id
    if arguments is not None:
        record["tool_input"] = arguments
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", choices=CLIS, default="claude-code")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--history", type=int, default=100, help="calls already in the session's history")
    parser.add_argument("--otelguard", default=str(Path(sys.executable).with_name("otelguard")),
                        help="the otelguard command to spawn (default: beside this Python)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions (needs valgrind)")
    parser.add_argument("--service", action="store_true",
                        help="start `otelguard serve` and let each hook ask it (OTELGUARD_URL): the warm path")
    args = parser.parse_args()
    command = shutil.which(args.otelguard) or args.otelguard
    python = _interpreter_of(command)
    _compile_package(python)
    records = [json.loads(line)["stdin"] for line in (RECORDED / f"{args.cli}.jsonl").read_text().splitlines()]

    with tempfile.TemporaryDirectory() as state:
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("OTELGUARD_", "OTEL_"))}
        env["OTELGUARD_HOOK_DB"] = os.path.join(state, "hooks.sqlite3")
        env["HOME"] = state  # no user config
        service = _start_service(command, env) if args.service else None
        if service is not None:
            env["OTELGUARD_URL"] = service[1]
        session = "bench-session"
        for n in range(args.history):  # earlier calls of the session, all different
            for record in records[:2]:  # the recorded first call's pre- and post-tool hooks
                _spawn(command, args.cli, _as_call(args.cli, record, session, f"history-{n}", {"command": f"echo {n}"}),
                       env)
        load_before = os.getloadavg()
        walls, cpus, answered = [], [], 0
        for n in range(args.runs):
            payload = _as_call(args.cli, records[n % len(records)], session, f"run-{n // 2}")
            wall, cpu, stdout = _spawn(command, args.cli, payload, env)
            walls.append(wall)
            cpus.append(cpu)
            answered += bool(stdout)
        bare_walls, bare_cpus = zip(*[_spawn_bare(python) for _ in range(min(args.runs, 50))])
        load_after = os.getloadavg()
        fallbacks = _fallbacks(os.path.join(state, "hooks.log"))
        if args.instructions:  # (under valgrind a hook runs ~50x slower: the service is given the time)
            payload = _as_call(args.cli, records[1], session, "counted")
            hook_ir = _instructions([command, "hook", args.cli], json.dumps(payload).encode(),
                                    {**env, "OTELGUARD_URL_TIMEOUT_MS": "60000"})
            bare_ir = _instructions([python, "-c", "pass"], b"", env)
        if service is not None:
            service[0].terminate()
            service[0].wait(timeout=30)

    p50, p95 = _percentile(walls, 50), _percentile(walls, 95)
    print(f"otelguard hook {args.cli}: {command}" + (f" asking otelguard serve ({fallbacks} fell back to the "
                                                      "local path)" if args.service else ""))
    print(f"  runs {args.runs} (of which {answered} answered: reminders or denials), session history "
          f"{args.history} calls, {os.cpu_count()} CPUs")
    print(f"  wall  p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   max {max(walls):6.1f} ms")
    print(f"  cpu   p50 {_percentile(cpus, 50):6.1f} ms   p95 {_percentile(cpus, 95):6.1f} ms")
    print(f"  bare `python -c pass`: wall p50 {_percentile(list(bare_walls), 50):.1f} ms, "
          f"cpu p50 {_percentile(list(bare_cpus), 50):.1f} ms")
    print(f"  load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    if args.instructions:
        print(f"  instructions: hook {hook_ir / 1e6:.0f} M, bare interpreter {bare_ir / 1e6:.0f} M (callgrind)")
    bar = BAR_SERVICE_P95_MS if args.service else BAR_LOCAL_P95_MS
    verdict = "PASS" if p95 <= bar else "FAIL"
    print(f"  {verdict}: wall p95 {p95:.1f} ms against the bar of {bar:.0f} ms")
    return 0 if verdict == "PASS" else 1


def _start_service(command: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`otelguard serve` on free ports (its hook history the benchmark's); (process, its HTTP URL)."""
    import socket
    import urllib.request

    ports = []
    for _ in range(3):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    http, grpc, metrics = (f"127.0.0.1:{port}" for port in ports)
    process = subprocess.Popen([command, "serve", "--http", http, "--grpc", grpc, "--metrics", metrics], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://{metrics}/metrics", timeout=1).close()
            return process, f"http://{http}"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("hook_latency: otelguard serve did not start")


def _fallbacks(log_path: str) -> int:
    """Hooks that got no answer from the service and decided locally (the hook log says each)."""
    try:
        return Path(log_path).read_text(encoding="utf-8").count("service fallback")
    except OSError:
        return 0


def _spawn(command: str, cli: str, payload: dict, env: dict[str, str]) -> tuple[float, float, bytes]:
    data = json.dumps(payload).encode()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([command, "hook", cli], input=data, capture_output=True, env=env, check=True)
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
