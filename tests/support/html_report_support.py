"""Inputs for the HTML report's tests: a looping agent run written as OTLP JSON with any strings in it
(hostile ones for the injection tests), and the page's parts read back with the standard library."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from paths import REAL_RUNS

CORPUS = REAL_RUNS / "swe-lite-deepseek" / "traces"
# Corpus runs with an acting verdict (no-progress reminders; see tests/realruns/labels.jsonl), and one without.
CORPUS_WITH_VERDICTS = ("deepseek_chat_dev_rerun__marshmallow-code__marshmallow-1343.otlp.jsonl.gz",)
CORPUS_QUIET = ("deepseek_chat_dev__pvlib__pvlib-python-1072.otlp.jsonl.gz",)

T0 = 1_790_000_000_000_000_000

# Each payload sets window.__pwned if the page ever runs it as script or markup.
PAYLOADS = (
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "javascript:window.__pwned = 3",
    "</script><script>window.__pwned = 4</script>",
    "<!-- <script>window.__pwned = 5</script>",
    '<svg onload="window.__pwned = 6"><script>window.__pwned = 7</script></svg>',
    "\u2028\u2029\"'`${window.__pwned = 8}` \ud800",
    '<a href="javascript:window.__pwned = 9">x</a><iframe srcdoc="<script>parent.__pwned = 10</script>"></iframe>',
)
HOSTILE = " ".join(PAYLOADS)


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value}


def _span(trace: int, span: int, parent: int | None, name: str, start: int, end: int, attributes: dict[str, Any],
          error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": f"{trace:032x}", "spanId": f"{span:016x}", "name": name, "kind": 1,
        "startTimeUnixNano": str(T0 + start), "endTimeUnixNano": str(T0 + end),
        "attributes": [{"key": key, "value": _value(value)} for key, value in attributes.items()],
        "status": {"code": 2} if error else {},
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def looping_run(trace: int = 1, *, agent: str = "looper", tool: str = "lookup", arguments: str = '{"q": "same"}',
                result: str = "nothing new", text: str = "Let me look again.", conversation: str | None = None,
                calls: int = 5, model: str = "gpt-4o") -> list[dict[str, Any]]:
    """One agent run: `calls` rounds of a model call asking for `tool` with the same `arguments` and the
    tool call answering `result` (repeat-tool-reminder reminds at the 3rd and 5th)."""
    base = trace << 12
    agent_attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if conversation is not None:
        agent_attributes["gen_ai.conversation.id"] = conversation
    spans = [_span(trace, base, None, f"invoke_agent {agent}", 0, 10_000_000 * (calls + 1), agent_attributes)]
    for call in range(calls):
        start = 10_000_000 * call + 1000
        output = [{"role": "assistant", "parts": [
            {"type": "text", "content": text},
            {"type": "tool_call", "id": f"c{call}", "name": tool, "arguments": json.loads(arguments)},
        ]}]
        spans.append(_span(trace, base + 2 * call + 1, base, f"chat {model}", start, start + 4_000_000, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.response.model": model,
            "gen_ai.usage.input_tokens": 1000 + call, "gen_ai.usage.output_tokens": 50,
            "gen_ai.output.messages": json.dumps(output)}))
        spans.append(_span(trace, base + 2 * call + 2, base, f"execute_tool {tool}", start + 5_000_000,
                           start + 6_000_000 + call * 100_000, {
                               "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                               "gen_ai.tool.call.id": f"c{call}", "gen_ai.tool.call.arguments": arguments,
                               "gen_ai.tool.call.result": result}))
    return spans


def write_traces(path: Path, spans: list[dict[str, Any]], scope: str = "tests") -> Path:
    request = {"resourceSpans": [{"resource": {"attributes": []},
                                  "scopeSpans": [{"scope": {"name": scope}, "spans": spans}]}]}
    # ensure_ascii: a lone surrogate in a payload stays a JSON escape (the analyzer reads it back as one)
    path.write_text(json.dumps(request) + "\n", encoding="ascii")
    return path


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[dict[str, str | None]] = []
        self.metas: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            self._open, self._text = dict(attrs), []
        elif tag == "style":
            self.styles.append(dict(attrs))
        elif tag == "meta":
            self.metas.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


def page_parts(html: str) -> _Scripts:
    """The page's script elements (attributes, text), style and meta elements, and every start tag, as
    an HTML parser reads them."""
    parser = _Scripts()
    parser.feed(html)
    parser.close()
    return parser


def page_data(html: str) -> dict[str, Any]:
    """The page's JSON data blocks by id."""
    return {attrs["id"]: json.loads(text) for attrs, text in page_parts(html).scripts
            if attrs.get("type") == "application/json" and attrs.get("id")}


def csp_of(html: str) -> str:
    metas = [meta for meta in page_parts(html).metas if (meta.get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(metas) == 1
    return metas[0]["content"] or ""


def nonce_of(csp: str) -> str:
    match = re.search(r"script-src 'nonce-([A-Za-z0-9_-]+)'", csp)
    assert match is not None
    return match.group(1)
