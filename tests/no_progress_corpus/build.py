"""Writes corpus.jsonl: labelled tool-call sequences for the `no-progress` guard.

Written for this project from the loop shapes users of coding agents describe in public issue trackers
(alternating reads, send/list and paging loops, retries of the same failure, re-reads between
bookkeeping calls, near-identical shell commands) and from the legitimate shapes peers document as
their false positives (polling whose result changes, paging forward, edit-test cycles that make
progress, retries that succeed, different calls that all fail). Nothing is copied from a trace.

Each line: {"id", "rule", "label": "loop" | "legit", "split": "tune" | "held-out", "shape", "calls":
[{"tool", "args", "result"?, "error"?}]}. `rule` is the rule the sequence was written for (a loop the
rule should catch, or a legitimate look-alike it must leave alone). Sequences alternate between the two
splits within each (rule, label): tune the guard on one, report on the other.

Run `python tests/no_progress_corpus/build.py` to rewrite the file; it is deterministic.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable

OUT = Path(__file__).with_name("corpus.jsonl")

# Tool dialects of five agents: (read, shell, edit, search, todo, think) names and argument keys.
DIALECTS: list[dict[str, Any]] = [
    {"read": ("Read", "file_path"), "shell": ("Bash", "command"), "edit": ("Edit", "file_path"),
     "search": ("Grep", "pattern"), "todo": "TodoWrite", "think": "think", "fetch": ("WebFetch", "url")},
    {"read": ("read_file", "absolute_path"), "shell": ("run_shell_command", "command"), "edit": ("replace", "file_path"),
     "search": ("search_file_content", "pattern"), "todo": "write_todos", "think": "think", "fetch": ("web_fetch", "prompt")},
    {"read": ("read", "filePath"), "shell": ("bash", "command"), "edit": ("edit", "filePath"),
     "search": ("grep", "pattern"), "todo": "todowrite", "think": "think", "fetch": ("webfetch", "url")},
    {"read": ("read_file", "path"), "shell": ("shell", "command"), "edit": ("apply_patch", "input"),
     "search": ("grep_files", "pattern"), "todo": "update_plan", "think": "think", "fetch": ("fetch", "url")},
    {"read": ("view", "path"), "shell": ("execute_bash", "command"), "edit": ("str_replace_editor", "path"),
     "search": ("search", "query"), "todo": "todo_write", "think": "think", "fetch": ("browse", "url")},
]

FILES = ["src/app.py", "src/models/user.py", "tests/test_api.py", "package.json", "README.md", "lib/util.ts",
         "cmd/server/main.go", "src/lib.rs", "config/settings.yaml", "docs/index.md", "web/src/App.tsx",
         "internal/db/query.go", "Cargo.toml", "pyproject.toml", "src/handlers/auth.js"]
WORDS = ["timeout", "retry", "UserService", "parse_config", "TODO", "deprecated", "api_key", "handleClick",
         "connect", "migrate", "render", "schema", "token", "cache", "logger"]
COMMANDS = ["npm test", "pytest -q", "go build ./...", "cargo check", "make lint", "git status", "ls -la src",
            "python -m mypy src", "yarn build", "go test ./internal/...", "tsc --noEmit", "ruff check ."]
ERRORS = [
    "Error: Cannot find module './config' imported from {path}:{line}",
    "error[E0425]: cannot find value `cfg` in this scope --> {path}:{line}:5",
    "HTTP 401 Unauthorized: invalid api key (request id {id})",
    "ENOENT: no such file or directory, open '{path}'",
    "SyntaxError: unexpected indent ({path}, line {line})",
    "{path}:{line}: undefined: NewClient",
    "TypeError: Cannot read properties of undefined (reading 'map') at {path}:{line}:17",
    "permission denied: {path}",
    "Error 429: rate limit exceeded, retry after {line}s (trace {id})",
    "AssertionError: expected 200, got 500 in {path}:{line}",
]


class Writer:
    def __init__(self, rng: random.Random, dialect: dict[str, Any]):
        self.rng, self.d = rng, dialect

    def read(self, path: str, content: str | None = None) -> dict[str, Any]:
        name, key = self.d["read"]
        return {"tool": name, "args": {key: path}, "result": content if content is not None else f"contents of {path}\n" + "x = 1\n" * 3}

    def shell(self, command: str, result: str = "", error: str | None = None) -> dict[str, Any]:
        name, key = self.d["shell"]
        call: dict[str, Any] = {"tool": name, "args": {key: command}, "result": result}
        if error is not None:
            call["error"] = error
        return call

    def edit(self, path: str, old: str, new: str) -> dict[str, Any]:
        name, key = self.d["edit"]
        return {"tool": name, "args": {key: path, "old_string": old, "new_string": new}, "result": "ok"}

    def search(self, pattern: str, hits: int | None = None) -> dict[str, Any]:
        name, key = self.d["search"]
        count = hits if hits is not None else len(pattern) % 5
        return {"tool": name, "args": {key: pattern}, "result": "\n".join(f"{f}:{i + 3}" for i, f in enumerate(FILES[:count]))}

    def think(self) -> dict[str, Any]:
        return {"tool": self.d["think"], "args": {"thought": f"step {self.rng.randrange(10**6)}: let me check again"},
                "result": "ok"}

    def todo(self) -> dict[str, Any]:
        items = [{"content": w, "status": self.rng.choice(["pending", "in_progress"])} for w in self.rng.sample(WORDS, 3)]
        return {"tool": self.d["todo"], "args": {"todos": items}, "result": "todos updated"}

    def fetch(self, url: str, body: str) -> dict[str, Any]:
        name, key = self.d["fetch"]
        return {"tool": name, "args": {key: url}, "result": body}

    def healthy(self, n: int) -> list[dict[str, Any]]:
        """n varied calls an agent makes while it progresses."""
        rng, out = self.rng, []
        for _ in range(n):
            kind = rng.randrange(4)
            if kind == 0:
                out.append(self.read(rng.choice(FILES) + f"#{rng.randrange(10**4)}"))
            elif kind == 1:
                out.append(self.search(rng.choice(WORDS) + str(rng.randrange(100))))
            elif kind == 2:
                out.append(self.shell(rng.choice(COMMANDS) + f" --run {rng.randrange(10**4)}", f"ok {rng.randrange(10**6)}"))
            else:
                path = rng.choice(FILES)
                out.append(self.edit(path, f"v{rng.randrange(1000)}", f"v{rng.randrange(1000, 2000)}"))
        return out

    def error_text(self, template: str, vary: bool) -> str:
        rng = self.rng
        return template.format(path=rng.choice(FILES) if vary else FILES[0], line=rng.randrange(1, 400) if vary else 12,
                               id=f"{rng.getrandbits(64):016x}")


def stamp(rng: random.Random) -> str:
    return f"2026-11-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z"


# --- the shapes: each takes a Writer and returns the calls -----------------------------------------
Shape = Callable[[Writer], list[dict[str, Any]]]


def cycle_loop(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    period = rng.choice([2, 2, 2, 3, 3, 4, 5])
    kinds = [
        lambda i: w.read(FILES[i]),
        lambda i: w.fetch(f"https://api.example.com/items?page={i + 2}", json.dumps({"page": i + 2, "items": [i, i + 1]})),
        lambda i: (w.shell("send --to ops 'deploy done'", "sent") if i == 0 else w.shell(f"list --box {i}", "3 messages")),
        lambda i: w.search(WORDS[i]),
    ]
    make = rng.choice(kinds)
    block = [make(i) for i in range(period)]
    repeats = rng.choice([3, 4, 5, 6])
    return w.healthy(rng.randrange(0, 4)) + block * repeats


def cycle_legit(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    shape = rng.randrange(5)
    out = w.healthy(rng.randrange(0, 3))
    if shape == 0:  # paging forward
        for page in range(1, rng.randrange(6, 12)):
            out.append(w.fetch(f"https://api.example.com/items?page={page}", json.dumps({"page": page, "items": [page * 10]})))
            out.append(w.think())
    elif shape == 1:  # edit-test cycle that makes progress: the failures go down
        failing = rng.randrange(4, 8)
        for step in range(failing):
            out.append(w.edit(FILES[0], f"bug{step}", f"fix{step}"))
            out.append(w.shell("pytest -q", f"{failing - step - 1} failed, {10 + step} passed"))
    elif shape == 2:  # poll with a sleep between, the status moves on
        statuses = ["queued", "queued", "running", "running 40%", "running 80%", "done"]
        for status in statuses:
            out.append(w.shell("gh run view 4711 --json status", json.dumps({"status": status, "checked": stamp(rng)})))
            out.append(w.shell("sleep 10", ""))
    elif shape == 3:  # for each file: read it, edit it (a rotation over different items)
        for path in rng.sample(FILES, rng.randrange(4, 8)):
            out.append(w.read(path))
            out.append(w.edit(path, "old", "new"))
    else:  # A/B twice only, then onwards
        block = [w.read(FILES[1]), w.read(FILES[2])]
        out += block * 2 + w.healthy(rng.randrange(3, 6))
    return out


def interleaved_loop(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    target = rng.choice([
        w.read(rng.choice(FILES)),
        w.shell(rng.choice(COMMANDS), "FAILED tests/test_api.py::test_login"),
        w.search(rng.choice(WORDS), hits=0),
        w.fetch("https://docs.example.com/api", "<html>API docs</html>"),
    ])
    between = [w.think, w.todo]
    repeats = rng.choice([3, 4, 5])
    out = w.healthy(rng.randrange(0, 4))
    for i in range(repeats):
        out.append(dict(target))
        if i < repeats - 1:
            out += [rng.choice(between)() for _ in range(rng.choice([1, 1, 2]))]
    return out


def interleaved_legit(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    shape = rng.randrange(4)
    out = w.healthy(rng.randrange(0, 3))
    if shape == 0:  # different calls between bookkeeping
        for path in rng.sample(FILES, rng.randrange(4, 7)):
            out += [w.read(path), w.think()]
    elif shape == 1:  # a poll with a think between, the result moves on
        for n in range(rng.randrange(4, 7)):
            out += [w.shell("kubectl rollout status deploy/web", f"{n} of 6 updated replicas are available"), w.think()]
    elif shape == 2:  # the same call twice, then onwards
        call = w.read(FILES[3])
        out += [call, w.todo(), dict(call), w.todo()] + w.healthy(4)
    else:  # a re-read after an edit between the plan updates
        for step in range(rng.randrange(3, 6)):
            out += [w.read(FILES[4], f"draft {step}"), w.todo(), w.edit(FILES[4], f"draft {step}", f"draft {step + 1}")]
    return out


def same_result_loop(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    shape = rng.randrange(3)
    if shape == 0:
        target = w.read(rng.choice(FILES))
    elif shape == 1:  # same page, only its fetch time and request id change
        def target_call() -> dict[str, Any]:
            return w.fetch("https://status.example.com/api", json.dumps(
                {"state": "degraded", "fetched_at": stamp(rng), "request_id": f"{rng.getrandbits(128):032x}"}))
    else:
        target = w.shell("cat /var/log/app.log | tail -5", "ERROR db connection refused\n" * 3)
    repeats = rng.choice([3, 4])
    out = w.healthy(rng.randrange(0, 3))
    for i in range(repeats):
        out.append(target_call() if shape == 1 else dict(target))
        if i < repeats - 1:
            out += w.healthy(rng.choice([1, 2, 3]))
    return out


def same_result_legit(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    shape = rng.randrange(4)
    out = w.healthy(rng.randrange(0, 3))
    if shape == 0:  # polling: the status changes every time
        for status in ["queued", "running", "running: 3/7 steps", "running: 6/7 steps", "succeeded"]:
            out += [w.fetch("https://ci.example.com/jobs/981", json.dumps({"status": status}))] + w.healthy(rng.choice([1, 2]))
    elif shape == 1:  # re-reading a file the agent edits between
        for step in range(4):
            out += [w.read(FILES[2], f"def test_{step}(): pass\n" * (step + 1)), w.edit(FILES[2], f"t{step}", f"t{step + 1}")]
            out += w.healthy(1)
    elif shape == 2:  # the same call spread further apart than the window
        call = w.read(FILES[5])
        for _ in range(3):
            out += [dict(call)] + w.healthy(11)
    else:  # a test run twice with the same result, then it passes
        out += [w.shell("npm test", "1 failing")] + w.healthy(2) + [w.shell("npm test", "1 failing")]
        out += w.healthy(2) + [w.shell("npm test", "all passing")]
    return out


def error_loop(w: Writer) -> list[dict[str, Any]]:
    """The same failure again and again: its text differs at most in volatile fields (ids), and the
    call that fails is the same call retried with a flag, a spacing or a cache-busting value changed."""
    rng = w.rng
    template = rng.choice(ERRORS)
    repeats = rng.choice([3, 4, 5])
    shape = rng.randrange(3)
    out = w.healthy(rng.randrange(0, 3))
    command = rng.choice(COMMANDS)
    for i in range(repeats):
        error = w.error_text(template, vary=False)
        if shape == 0:  # the same tool, the same command retried with a flag or spacing changed
            out.append(w.shell([command, f"{command} -v", f"{command}  -v", f"{command} -x", f"{command}  -x"][i],
                               error=error))
        elif shape == 1:  # a trivial edit, then the same failing build, verbose or not
            out.append(w.edit(FILES[0], f"x{i}", f"x{i + 1}"))
            out.append(w.shell("go build ./..." if i % 2 == 0 else "go build -v ./...", error=error))
        else:  # the same API call, a cache-busting value changing, the same 401
            name, key = w.d["fetch"]
            out.append({"tool": name, "args": {key: f"https://api.example.com/search?q=token&nocache={i}"},
                        "result": "", "error": error})
    return out


def error_legit(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    shape = rng.randrange(4)
    out = w.healthy(rng.randrange(0, 3))
    if shape == 0:  # different tools, each failing differently
        out += [w.read("missing.txt", "") | {"error": "ENOENT: no such file"}, w.shell("npm run nope", error="npm ERR! missing script: nope"),
                w.search("zzz", hits=0) | {"error": "grep: invalid regex"}]
    elif shape == 1:  # a retry that succeeds
        out += [w.shell("curl -sf https://api.example.com/health", error="HTTP 503 Service Unavailable"),
                w.shell("curl -sf https://api.example.com/health", error="HTTP 503 Service Unavailable"),
                w.shell("curl -sf https://api.example.com/health", "ok")]
    elif shape == 2:  # the build fails, each time with another error: the fixes progress
        for step, template in enumerate(rng.sample(ERRORS, 4)):
            out += [w.edit(FILES[0], f"a{step}", f"a{step + 1}"),
                    w.shell("go build ./...", error=w.error_text(template, vary=True))]
    else:  # two failures, then a different approach
        out += [w.shell("pip install foo==9", error="No matching distribution found for foo==9")] * 2
        out += w.healthy(4)
    return out


def near_duplicate_loop(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    base = rng.choice(["grep -rn \"{w}\" src", "find . -name '{w}*'", "ls -la {w}", "rg {w} --type py",
                       "python -c \"import {w}\""]).format(w=rng.choice(WORDS).lower())
    variants = [base, base.replace(" ", "  ", 1), base + " ", base.replace('"', "'"), " " + base,
                base.replace("'", '"'), base.replace(" ", "\t", 1)]
    repeats = rng.choice([3, 4, 5])
    result = rng.choice(["", "no matches", "command not found", "(no output)"])
    out = w.healthy(rng.randrange(0, 3))
    seen: set[str] = set()
    picked = []
    for variant in variants:
        if variant not in seen:
            seen.add(variant)
            picked.append(variant)
    for i in range(repeats):
        out.append(w.shell(picked[i % len(picked)], result))
    return out


def near_duplicate_legit(w: Writer) -> list[dict[str, Any]]:
    rng = w.rng
    shape = rng.randrange(4)
    out = w.healthy(rng.randrange(0, 3))
    word = rng.choice(WORDS).lower()
    if shape == 0:  # the flags change
        out += [w.shell(f"ls {flag} src", f"{i} entries") for i, flag in enumerate(["-l", "-la", "-lah", "-R"])]
    elif shape == 1:  # the paths change
        out += [w.shell(f"cat {path}", f"contents of {path}") for path in rng.sample(FILES, 4)]
    elif shape == 2:  # the same command respelt, the result moves on (a counter being watched)
        out += [w.shell(cmd, f"{n} rows") for n, cmd in enumerate(["wc -l out.csv", "wc  -l out.csv", "wc -l out.csv ",
                                                                    "wc -l  out.csv"])]
    else:  # the pattern narrows
        out += [w.shell(f"grep -rn {pattern} src", f"{9 - i} matches") for i, pattern in
                enumerate([word, word + "_", word + "_id", word + "_id ="])]
    return out


def long_healthy_run(w: Writer, calls: int) -> list[dict[str, Any]]:
    """About `calls` calls of an agent that keeps making progress: the legitimate look-alikes of every
    rule mixed with ordinary work, bookkeeping between (for the benchmark's long runs; not in the file)."""
    rng, out = w.rng, []
    legit = [cycle_legit, interleaved_legit, same_result_legit, error_legit, near_duplicate_legit]
    while len(out) < calls:
        pick = rng.randrange(4)
        if pick == 0:
            out += rng.choice(legit)(w)
        elif pick == 1:
            out += w.healthy(rng.randrange(3, 12))
        elif pick == 2:
            out += [w.think(), w.todo()]
        else:  # a test run, a fix, the test run again: fewer failures each time
            failing = rng.randrange(1, 4)
            for step in range(failing + 1):
                out.append(w.shell("pytest -q tests", f"{failing - step} failed, {40 + step} passed"))
                if step < failing:
                    out.append(w.edit(rng.choice(FILES), f"bug{rng.randrange(10**6)}", f"fix{rng.randrange(10**6)}"))
    return out[:calls]


SHAPES: dict[str, tuple[Shape, Shape]] = {
    "cycle": (cycle_loop, cycle_legit),
    "interleaved-repeat": (interleaved_loop, interleaved_legit),
    "same-result": (same_result_loop, same_result_legit),
    "error-loop": (error_loop, error_legit),
    "near-duplicate": (near_duplicate_loop, near_duplicate_legit),
}
PER_LABEL = 40  # sequences per (rule, label): 20 to tune on, 20 held out


def build() -> list[dict[str, Any]]:
    rows = []
    for rule, (loop, legit) in SHAPES.items():
        for label, shape in (("loop", loop), ("legit", legit)):
            for n in range(PER_LABEL):
                rng = random.Random(f"{rule}/{label}/{n}")
                calls = shape(Writer(rng, DIALECTS[n % len(DIALECTS)]))
                rows.append({"id": f"{rule}/{label}/{n:02d}", "rule": rule, "label": label,
                             "split": "tune" if n % 2 == 0 else "held-out", "shape": shape.__name__, "calls": calls})
    return rows


if __name__ == "__main__":
    with OUT.open("w", encoding="utf-8") as out:
        for row in build():
            out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
