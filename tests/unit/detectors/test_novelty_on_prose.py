"""`low-novelty` measures prose only: code in an answer (fenced, indented), diffs and listings share
most of their word n-grams by construction and are not judged; a drifting loop in prose still is.

The code comes from the real runs (tests/realruns): the 56 commands over 1 KB that the real agent
wrote and that, fenced in an answer, fell under `min_novelty` when code was measured too.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from loop_corpus import drift_loop, prose
from otel_support import output_messages
from realruns_support import command, rows, spans

from otelguard.detectors.prose import ProseFilter
from otelguard.engine import GuardEngine
from otelguard.model.records import SpanView

LONG_COMMANDS = rows("long_commands_low_novelty.jsonl")


def low_novelty(text: str) -> list[str]:
    """The actions of the low-novelty verdicts the default guards give a model call answering `text`."""
    engine = GuardEngine()
    span = SpanView("chat model", 1, 2, None, {"gen_ai.operation.name": "chat",
                                               "gen_ai.output.messages": output_messages(text=text)})
    engine.start(span)
    judged = engine.end(span)
    return [v.action for v in (judged.verdicts if judged is not None else ()) if v.rule == "low-novelty"]


def real_long_commands() -> list[str]:
    wanted: dict[str, set[str]] = {}
    for row in LONG_COMMANDS:
        wanted.setdefault(row["file"], set()).add(row["span_id"])
    found = [command(span) for file, ids in sorted(wanted.items()) for span in spans(file)
             if f"{span.span_id:016x}" in ids]
    assert len(found) == len(LONG_COMMANDS) == 56
    return found


@pytest.fixture(scope="module")
def commands() -> list[str]:
    return real_long_commands()


def test_real_commands_fenced_in_an_answer_are_not_low_novelty(commands):
    flagged = [text[:60] for text in commands
               if low_novelty(f"Here is the command I will run:\n\n```bash\n{text}\n```\n")]
    assert flagged == []


def test_real_commands_as_indented_code_are_not_low_novelty(commands):
    indented = ["I will run this:\n\n" + "\n".join("    " + line for line in text.splitlines()) for text in commands]
    assert [text[:60] for text in indented if low_novelty(text)] == []


def test_a_diff_and_a_numbered_listing_are_not_low_novelty(commands):
    code = commands[0].splitlines()
    diff = "\n".join(["The change:", "", "--- a/app.py", "+++ b/app.py", "@@ -1,40 +1,40 @@"]
                     + [("-" if n % 2 else "+") + line for n, line in enumerate(code * 2)])
    listing = "\n".join(["The file now reads:", ""] + [f"{n:>4}: {line}" for n, line in enumerate(code * 2, start=1)])
    assert low_novelty(diff) == [] and low_novelty(listing) == []


def test_a_drifting_loop_in_prose_around_code_is_still_low_novelty(commands):
    rng = random.Random(7)
    text = (prose(rng, 800) + "\n\n```bash\n" + commands[0] + "\n```\n\n" + drift_loop("shuffle", rng, 5000))
    assert low_novelty(text) == ["none"]  # flagged (the rule's default action)


MIXED = ("Intro line of prose.\n\n```python\nx = 1\n```text inside\n```\n\n    indented code\n    more\n"
         "- a bullet stays prose\n-removed line\n+added line\n  12: listed line\n$ ls -la\n"
         "````markdown\n```python\nnested\n```\n````\nClosing prose line that is rather long indeed.\n")


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_the_prose_is_the_same_however_the_text_arrives(cuts):
    """Lines are judged by their start: any split of the text gives the same prose at the same places."""
    def prose_of(pieces: list[str]) -> list[tuple[str, int]]:
        prose_filter, out = ProseFilter(), []
        for piece in pieces:
            out += prose_filter.feed(piece)
        out += prose_filter.finish()
        joined: list[tuple[str, int]] = []
        for text, at in out:
            if joined and joined[-1][1] + len(joined[-1][0]) == at:
                joined[-1] = (joined[-1][0] + text, joined[-1][1])
            else:
                joined.append((text, at))
        return joined

    pieces, at = [], 0
    for size in cuts * 20:
        if at >= len(MIXED):
            break
        pieces.append(MIXED[at:at + size])
        at += size
    pieces.append(MIXED[at:])
    whole = prose_of([MIXED])
    assert prose_of(pieces) == whole
    assert [text for text, _ in whole] == [
        "Intro line of prose.\n\n", "\n", "- a bullet stays prose\n",
        "Closing prose line that is rather long indeed.\n"]
