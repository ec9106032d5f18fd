"""A labelled corpus for the stream and reasoning rules: loops they must catch, content they must leave.

Written for otelguard (nothing copied): every sample is built here from seeded generators, except the
markdown table, read from the recorded fixture. Each sample is labelled `loop` or `legit`, belongs to
the rule it exercises, and to one half: `tune` (the half the defaults were chosen on) or `held-out`
(the half the figures in benchmarks/RESULTS.md report). A loop sample knows its `onset`: the
character where the looping starts, so the characters from onset to the cut can be measured.

Rules: `repeating-cycle` (the seed's short-cycle rule, structure aware), `long-cycle`, `low-novelty`
(over one call's text) and `text-loop` (over the text-only answers of one agent run).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from stream_support import cut
import paths

FIXTURES = paths.FIXTURES

TUNE, HELD_OUT = "tune", "held-out"
LOOP, LEGIT = "loop", "legit"


@dataclass(frozen=True)
class Sample:
    name: str
    rule: str
    label: str
    text: str = ""
    onset: int = 0  # loops: where the looping starts (characters)
    calls: tuple[tuple[str, bool], ...] = ()  # text-loop: (answer text, called a tool) per model call
    runs: tuple[int, ...] = ()  # text-loop: indexes of calls that start a new agent run
    split: str = field(default=TUNE)


# --- text generators ---------------------------------------------------------------------------------
SUBJECTS = ("the parser", "this function", "the cache layer", "our retry loop", "the config loader",
            "the scheduler", "the HTTP client", "the test suite", "the migration", "the index builder",
            "the auth middleware", "the exporter", "the queue worker", "the CLI", "the tokenizer",
            "the planner", "the database pool", "the feature flag", "the rate limiter", "the renderer")
VERBS = ("reads", "rejects", "caches", "rewrites", "validates", "forwards", "drops", "retries",
         "serialises", "counts", "splits", "merges", "orders", "locks", "loads", "compares", "skips")
OBJECTS = ("every record", "the first header", "stale entries", "the user's token", "a nested list",
           "empty strings", "the final batch", "two timestamps", "unknown fields", "the response body",
           "each column", "the lock file", "negative offsets", "the warm-up run", "unicode keys")
TAILS = ("before it returns", "when the flag is off", "on the second attempt", "after a timeout",
         "only in debug builds", "for large inputs", "unless the cache is cold", "in under a millisecond",
         "while the worker sleeps", "as the docs describe", "since version 2.3", "without a copy")
CONNECT = ("So", "Then", "However,", "Also,", "Next,", "Because of that,", "In practice", "Note that",
           "Interestingly,", "By contrast,", "Finally,", "Meanwhile,")


def sentence(rng: random.Random) -> str:
    parts = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TAILS)]
    if rng.random() < 0.5:
        parts.insert(0, rng.choice(CONNECT))
    text = " ".join(parts)
    if rng.random() < 0.4:
        text += f" ({rng.randint(2, 9999)} {rng.choice(['ms', 'rows', 'bytes', 'calls', 'items'])})"
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "!", "?", ";"])


def prose(rng: random.Random, chars: int) -> str:
    """Technical prose of at least `chars` characters that never settles into a cycle."""
    out: list[str] = []
    size = 0
    while size < chars:
        piece = sentence(rng) + ("\n\n" if rng.random() < 0.15 else " ")
        out.append(piece)
        size += len(piece)
    return "".join(out)


def split_halves(samples: list[Sample]) -> list[Sample]:
    """Alternate the halves within each rule and label, so both hold every family."""
    counters: dict[tuple[str, str], int] = {}
    out = []
    for sample in samples:
        key = (sample.rule, sample.label)
        index = counters.get(key, 0)
        counters[key] = index + 1
        out.append(Sample(**{**sample.__dict__, "split": TUNE if index % 2 == 0 else HELD_OUT}))
    return out


# --- legitimate output: shared by the character rules ---------------------------------------------------
def markdown_table_fixture() -> str:
    """The visible text of the recorded markdown-table stream (tests/fixtures)."""
    path = FIXTURES / "openllmetry-openai-attributes-chat-stream-markdown-table.otlp.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for attribute in span.get("attributes", []):
                        if attribute["key"] == "gen_ai.output.messages":
                            messages = json.loads(attribute["value"]["stringValue"])
                            return messages[0]["parts"][0]["content"]
    raise AssertionError("the markdown-table fixture holds no output message")


def fence(lang: str, body: str, rng: random.Random) -> str:
    return prose(rng, 120) + f"\n```{lang}\n" + body + "```\n" + prose(rng, 100)


def legit_texts() -> list[tuple[str, str]]:
    """(name, text) of legitimately repetitive or structured output, and of plain prose."""
    rng = random.Random(1901)
    s: list[tuple[str, str]] = []
    # vectors.md, "must never trip"
    s.append(("vector-markdown-table", "".join(f"| {i} | item-{i} | {'ok' if i % 3 else 'pending'} |\n" for i in range(40))))
    s.append(("vector-css", "".join(f".row-{i} {{ display: flex; align-items: center; gap: 8px; }}\n" for i in range(40))))
    s.append(("vector-json-list", json.dumps([{"id": i, "name": f"item-{i}", "done": i % 2 == 0} for i in range(40)], indent=2)))
    s.append(("vector-logs", "".join(f"2026-09-18T16:0{i % 10}:00 INFO processing record {i} done\n" for i in range(60))))
    s.append(("vector-stubs", "".join(f"def handler_{i}(request):\n    raise NotImplementedError\n\n\n" for i in range(40))))
    s.append(("vector-bullets", "".join(f"- item {i}: checked\n" for i in range(40))))
    s.append(("markdown-table-fixture", markdown_table_fixture()))
    # repetition that is the content itself
    s.append(("fence-lookup-zeros", fence("c", "static const uint8_t table[256] = {\n" + "".join("    " + "0, " * 16 + "\n" for _ in range(16)) + "};\n", rng)))
    s.append(("fence-zero-matrix", fence("python", "identity = [\n" + "".join("    [" + ", ".join("1" if c == r else "0" for c in range(12)) + "],\n" for r in range(12)) + "]\n", rng)))
    s.append(("csv-all-zero", "sensor,t0,t1,t2,t3,t4,t5\n" + "".join(f"s{i},0,0,0,0,0,0\n" for i in range(60))))
    s.append(("csv-zero-rows", "a,b,c,d,e,f,g,h\n" + "0,0,0,0,0,0,0,0\n" * 80))
    s.append(("tsv-zero-rows", "x\ty\tz\tw\n" + "0\t0\t0\t0\n" * 120))
    s.append(("matrix-zeros", fence("", "".join(" ".join("0" for _ in range(16)) + "\n" for _ in range(30)), rng)))
    s.append(("ascii-grid", fence("", "".join("+---" * 8 + "+\n" + "|   " * 8 + "|\n" for _ in range(8)) + "+---" * 8 + "+\n", rng)))
    s.append(("box-drawing-frame", "┌" + "─" * 40 + "┐\n" + "".join("│" + " " * 40 + "│\n" for _ in range(14)) + "└" + "─" * 40 + "┘\n"))
    s.append(("box-drawing-table", "".join("├──────┼──────┼──────┤\n│  0   │  0   │  0   │\n" for _ in range(12))))
    s.append(("json-nulls", json.dumps({"values": [None] * 120})))
    s.append(("json-zeros-pretty", json.dumps({"weights": [0] * 60}, indent=2)))
    s.append(("json-matrix", json.dumps([[0] * 10 for _ in range(20)])))
    s.append(("hexdump-zeros", "".join(f"{i * 16:08x}  " + "00 " * 16 + " |................|\n" for i in range(24))))
    s.append(("fence-empty-rows-table", fence("", "| " + " | ".join(["  "] * 6) + " |\n" + "|----|----|----|----|----|----|\n" + "|    |    |    |    |    |    |\n" * 40, rng)))
    s.append(("progress-bars", "".join(f"epoch {i:02d} [" + "#" * 30 + f"] loss=0.{rng.randint(100, 999)}\n" for i in range(30))))
    s.append(("pytest-output", "".join(f"tests/test_mod_{i}.py::test_case_{j} PASSED{' ' * (4 - len(str(j)))}[{(i * 8 + j) % 100:3d}%]\n" for i in range(8) for j in range(6))))
    s.append(("pytest-dots", "============ test session starts ============\ncollected 420 items\n\n" + "".join("tests/test_unit_" + str(i) + ".py " + "." * 60 + "\n" for i in range(7)) + "\n===== 420 passed in 3.21s =====\n"))
    s.append(("long-table", "| id | owner | state | retries |\n|---|---|---|---|\n" + "".join(f"| {i} | {rng.choice(['ana', 'bo', 'cy', 'dee'])} | {rng.choice(['ok', 'failed', 'queued'])} | {rng.randint(0, 3)} |\n" for i in range(150))))
    s.append(("long-list", "".join(f"{i}. Review {rng.choice(OBJECTS)} in module {i % 7}\n" for i in range(1, 120))))
    s.append(("checklist", "".join(f"- [ ] step {i}: run the suite again\n" for i in range(50))))
    s.append(("css-grid", "".join(f".col-{i} {{ flex: 0 0 {100 * i // 12}%; max-width: {100 * i // 12}%; }}\n" for i in range(1, 13)) * 1))
    s.append(("log-heartbeat", "".join(f"[{10 + i // 60:02d}:{i % 60:02d}:00] worker-3 heartbeat ok queue=0\n" for i in range(80))))
    s.append(("code-python", fence("python", "".join(f"def test_{name}():\n    assert parse({name!r}) == {i}\n\n" for i, name in enumerate(["a", "bb", "ccc", "dddd", "e1", "f2", "g3", "h4", "i5", "j6", "k7", "l8"])), rng)))
    s.append(("code-rust-enum", fence("rust", "enum Op {\n" + "".join(f"    Op{i},\n" for i in range(60)) + "}\n", rng)))
    s.append(("sql-inserts", "".join(f"INSERT INTO t (id, v) VALUES ({i}, 0);\n" for i in range(60))))
    s.append(("yaml-list", "items:\n" + "".join(f"  - name: svc-{i}\n    replicas: 1\n    enabled: true\n" for i in range(40))))
    s.append(("prose-report", prose(rng, 3000)))
    s.append(("prose-short", prose(rng, 1200)))
    s.append(("lyrics-chorus", "".join(prose(rng, 160) + "\nAnd the lights go on, and the lights go off,\nand we sing until the morning.\n\n" for _ in range(4))))
    s.append(("letters-template", "".join(f"Dear {n},\nThank you for your order #{1000 + i}. It ships on Monday. Please keep this email for your records.\nBest regards,\nThe shop\n\n" for i, n in enumerate(["Ana", "Bo", "Cy", "Dee", "Eve"]))))
    s.append(("wide-box", "╔" + "═" * 90 + "╗\n" + "".join("║" + " " * 90 + "║\n" for _ in range(12)) + "╚" + "═" * 90 + "╝\n"))
    s.append(("wide-zero-csv", "".join(",".join(["0"] * 60) + "\n" for _ in range(12))))
    s.append(("wide-table-empty", "| " + " | ".join(f"c{i}" for i in range(20)) + " |\n" + "|" + "---|" * 20 + "\n" + ("|" + "   |" * 20 + "\n") * 10))
    # long tables whose rows are all alike (appended after the first commit: both halves get one)
    s.append(("csv-zero-rows-long", "id,a,b,c,d,e,f,g\n" + "".join(f"{i},0,0,0,0,0,0,0\n" for i in range(40)) + "0,0,0,0,0,0,0,0\n" * 300))
    s.append(("fence-zero-grid-long", fence("", "".join("0 " * 31 + "0\n" for _ in range(96)), rng)))
    s.append(("diff-output", "".join(f"@@ -{i * 10},3 +{i * 10},3 @@\n-    timeout = {i}\n+    timeout = {i + 1}\n" for i in range(40))))
    return s


# --- loops ----------------------------------------------------------------------------------------------
SHORT_UNITS = (
    "好。\n发。\n好。\n好。\n", "Emitting.\n好。\n发。\n好。\n好。\n", "I need to check the file again.\n",
    "Wait, let me reconsider. ", "Let me re-check. ", "好。执行。", "Thinking...\n", "Okay.\n", "done done ",
    "So the answer is 42. ", "The value is still zero.\n", "确认。继续。", "もう一度確認します。", "Проверяю снова. ",
    "I'll call the tool now.\n", "- retry\n", "**Note:** same as above.\n", "Hmm, ", "No. Yes. ", "...and then ",
    "<br>", "  ", "ok ok ok\n", "Calling search()... ", "Step 3: repeat step 3.\n", "à la ligne. ",
    "Reading config.yaml\n", "again and again ", "¿Qué? ", "loop: ", "so so so. ", "we continue. ",
)

PARAGRAPHS = (
    "I should double-check the configuration before continuing. The loader reads the YAML file, then "
    "validates every key against the schema, and only then starts the workers. ",
    "Let me think about this again. The test fails because the fixture is created after the client, so "
    "the client never sees the mocked endpoint and calls the real one instead.\n\n",
    "Actually, the simplest fix is to move the import to the top of the module and remove the circular "
    "reference between config and engine; that keeps the public API unchanged.\n",
    "好的，我再检查一下配置文件。加载器先读取文件，然后根据模式验证每个键，最后启动工作进程。这样应该没有问题。\n",
    "**Summary:** the request times out because the pool is exhausted. Increase `max_connections` or "
    "release connections after each call.\n\n",
    "Wait — the loop condition is `i < n`, but n is updated inside the loop, so it never terminates. I need "
    "to copy n before the loop starts. Let me verify that assumption by reading the code once more. ",
)


def loop_prefix(rng: random.Random) -> str:
    return prose(rng, rng.randint(0, 900)) if rng.random() < 0.85 else ""


def short_cycle_loops() -> list[Sample]:
    rng = random.Random(1902)
    out = []
    for i, unit in enumerate(SHORT_UNITS):
        prefix = loop_prefix(rng)
        out.append(Sample(f"short-cycle-{i}", "repeating-cycle", LOOP, prefix + unit * (2400 // len(unit) + 1), len(prefix)))
    # repetition inside structure that never ends is a loop too, cut past max_structured_repeat_chars
    for i, (opening, unit) in enumerate((("```\n", "0, "), ("```c\nint t[] = {", "0x00, "), ("| a | b |\n|---|---|\n", "| 0 | 0 |\n"),
                                         ("[", "null, "), ("┌──┐\n", "│  │\n"), ("a,b,c\n", "0,0,0\n"))):
        prefix = loop_prefix(rng) + opening
        out.append(Sample(f"endless-structure-{i}", "repeating-cycle", LOOP, prefix + unit * (24000 // len(unit)), len(prefix)))
    return out


def long_cycle_loops() -> list[Sample]:
    rng = random.Random(1903)
    out = []
    for i in range(36):
        base = PARAGRAPHS[i % len(PARAGRAPHS)]
        # Vary the paragraph's length across the rule's range (65..512): cut or extend with prose.
        target = 70 + (i * 37) % 440
        unit = (base + prose(random.Random(i), target))[:target]
        if unit.count(unit[:8]) > 1:  # keep the unit from holding a shorter cycle
            unit = unit[1:]
        prefix = loop_prefix(rng)
        # a loop goes on (to the token limit): 4000 characters of it at least, past the breaker's slow cadence
        out.append(Sample(f"long-cycle-{i}", "long-cycle", LOOP, prefix + unit * max(8, 4000 // len(unit)), len(prefix)))
    return out


SYNONYMS = {
    "check": ("check", "verify", "inspect", "re-check"), "file": ("file", "config", "configuration file"),
    "again": ("again", "once more", "one more time"), "think": ("think", "consider", "reason"),
    "answer": ("answer", "result", "conclusion"), "wrong": ("wrong", "off", "not right"),
}
DRIFT_SENTENCES = (
    "I need to check the file again before answering",
    "the answer depends on whether the file was saved",
    "let me think about the order of the steps",
    "maybe the test is wrong and the code is fine",
    "I should check the file again to be sure",
    "the answer might still be wrong so let me think",
    "first I will read the file and then decide",
)


def reword(rng: random.Random, text: str, rate: float) -> str:
    words = []
    for word in text.split():
        options = SYNONYMS.get(word)
        words.append(rng.choice(options) if options and rng.random() < rate else word)
    return " ".join(words)


def jitter(rng: random.Random, text: str) -> str:
    text = text.replace(" ", rng.choice([" ", "  ", " ", "\n"]), rng.randint(0, 3))
    return text + rng.choice([". ", ".. ", "! ", ", ", ".\n", "; ", " — "])


def drift_loop(kind: str, rng: random.Random, chars: int) -> str:
    pool = list(DRIFT_SENTENCES[: rng.randint(3, 7)])
    out: list[str] = []
    size = 0
    state = 0
    while size < chars:
        if kind == "shuffle":
            rng.shuffle(pool)
            piece = " ".join(s[0].upper() + s[1:] + "." for s in pool) + " "
        elif kind == "jitter":
            piece = "".join(jitter(rng, s[0].upper() + s[1:]) for s in pool)
        elif kind == "reword":
            piece = " ".join(reword(rng, s, 0.5).capitalize() + "." for s in pool) + " "
        else:  # two states alternating with small rewording
            state ^= 1
            a = "The build is broken, so I will revert the change and run the tests"
            b = "The tests pass now, so I will re-apply the change and build again"
            piece = reword(rng, (a if state else b).replace("change", rng.choice(["change", "commit", "patch"])), 0.4) + ". "
        out.append(piece)
        size += len(piece)
    return "".join(out)


def drift_loops() -> list[Sample]:
    rng = random.Random(1904)
    out = []
    for i in range(40):
        kind = ("shuffle", "jitter", "reword", "alternate")[i % 4]
        prefix = loop_prefix(rng)
        out.append(Sample(f"drift-{kind}-{i}", "low-novelty", LOOP, prefix + drift_loop(kind, rng, 6000), len(prefix)))
    return out


# --- text-only turn loops ---------------------------------------------------------------------------------
def text_loop_samples() -> list[Sample]:
    rng = random.Random(1905)
    out: list[Sample] = []
    answers = ("I'll look up the weather in Paris now.", "Let me search for the file.", "Done. The report is ready.",
               "I cannot access that resource.", "Calling `read_file(path='a.txt')`.", "OK.",
               "Action: search\nAction Input: {\"q\": \"otel\"}", "I will now run the tests.")
    for i in range(34):
        answer = answers[i % len(answers)]
        calls: list[tuple[str, bool]] = [("I'll start by reading the task.", True)] if i % 3 == 0 else []
        if i % 2 == 0:  # three near-identical text-only answers in a row
            for _ in range(3):
                calls.append((jitter(rng, answer).strip() if i % 4 == 0 else answer, False))
        else:  # a streak restating itself: the parser rejects every action, no tool is ever called
            for _ in range(5):
                calls.append((reword(rng, "I need to check the file again. " + answer, 0.6) + rng.choice(["", " Retrying.", " Sorry."]), False))
        out.append(Sample(f"text-loop-{i}", "text-loop", LOOP, calls=tuple(calls), runs=(0,)))
    for i in range(34):
        calls = []
        runs = [0]
        if i % 4 == 0:  # the same short answer, but once per user prompt (a new run each time)
            for _ in range(4):
                runs.append(len(calls))
                calls.append(("OK.", False))
            runs = runs[1:]
        elif i % 4 == 1:  # tools between the answers
            for j in range(6):
                calls.append((f"Let me look that up ({j}).", True))
                calls.append((answers[i % len(answers)], j % 2 == 0))
        elif i % 4 == 2:  # text-only answers that say different things (a plan, then the work, then a summary)
            for j in range(4):
                calls.append((sentence(rng) + " " + sentence(rng), False))
        else:  # answers sharing a template, with different content
            for j in range(4):
                calls.append((f"Here is the result for {rng.choice(['Paris', 'Oslo', 'Lima', 'Pune', 'Kyiv'])}-{j}: "
                              f"{rng.randint(-10, 35)}°C, {rng.choice(['rain', 'sun', 'wind', 'fog'])}, "
                              f"humidity {rng.randint(20, 99)}%.", j % 2 == 1))
        out.append(Sample(f"text-legit-{i}", "text-loop", LEGIT, calls=tuple(calls), runs=tuple(runs)))
    return out


def corpus() -> list[Sample]:
    samples: list[Sample] = []
    legit = legit_texts()
    samples += short_cycle_loops()
    samples += [Sample(name, "repeating-cycle", LEGIT, text) for name, text in legit]
    samples += long_cycle_loops()
    samples += [Sample(name, "long-cycle", LEGIT, text) for name, text in legit]
    samples += drift_loops()
    samples += [Sample(name, "low-novelty", LEGIT, text) for name, text in legit]
    samples += text_loop_samples()
    return split_halves(samples)


def deltas(text: str, seed: int, sizes: tuple[int, int] = (1, 7)) -> list[str]:
    """The text cut into token-like deltas of uneven sizes (seeded)."""
    return cut(text, random.Random(seed), sizes)


# --- judging a sample the way the guard does ------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    rule: str | None  # the rule that flagged or cut it; None when nothing did
    cut: bool  # cut mid-stream (action break) rather than flagged at the end or steered
    after_onset: int | None = None  # loops: characters (text-loop: answers) from the onset to the cut or flag


def judge(sample: Sample, guard, *, reasoning: bool = False, seed: int = 0) -> Outcome:
    """Run one sample through a ThinkingLoopGuard as the live guard would: a character sample streamed
    in token-like deltas through the guard's breaker (its reasoning breaker with `reasoning`), then,
    when nothing cut it, the call's end (`on_model_end`, which judges what only the whole text can
    tell); a text-loop sample call by call, a run starting where the sample says."""
    from otelguard.guards.base import ModelFacts
    from otelguard.model.records import Content, ModelCall, RequestedToolCall, SpanView

    span = SpanView(name="chat m", trace_id=1, span_id=2)
    if sample.rule == "text-loop":
        state = guard.new_state()
        for index, (text, tool) in enumerate(sample.calls):
            if index in sample.runs and index:
                guard.on_agent_run(state)
            call = ModelCall(text=text, tool_calls=(RequestedToolCall("act", "{}"),) if tool else (),
                             output_content=Content.OK)
            for verdict in guard.on_model_end(state, call, span, ModelFacts()):
                if verdict.rule == "text-loop" and verdict.action.value != "none":
                    return Outcome("text-loop", False, index + 1)
        return Outcome(None, False)
    breaker = guard.new_reasoning_breaker() if reasoning else guard.new_breaker()
    fed = deltas(sample.text, seed)
    for delta in fed:
        trip = breaker.push(delta)
        if trip is not None:
            return Outcome(trip.rule, True, trip.chars - sample.onset)
    trip = breaker.finish()
    if trip is not None:
        return Outcome(trip.rule, False, trip.chars - sample.onset)
    call = ModelCall(text="" if reasoning else sample.text, reasoning=sample.text if reasoning else "",
                     output_content=Content.OK)
    for verdict in guard.on_model_end(guard.new_state(), call, span, ModelFacts()):
        if verdict.verdict == "repetitive_output":
            return Outcome(verdict.rule, False, (verdict.stream_chars or len(sample.text)) - sample.onset)
    return Outcome(None, False)
