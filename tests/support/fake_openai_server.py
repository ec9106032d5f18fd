"""A small OpenAI-compatible HTTP server on 127.0.0.1 for end-to-end tests with the real clients.

It serves `POST /v1/chat/completions` and `POST /v1/responses`, streamed (server-sent events) and not,
from a script: a function that receives the parsed request body and returns the `Reply` to send.
Every request body is recorded in `server.requests` (in arrival order) so a test can assert what the
model was sent. Start and stop it with `with FakeOpenAIServer(script) as server:`; the serving thread
is joined on exit.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

from http_replies import ReplyingHandler


@dataclass(frozen=True)
class ToolCallReply:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted model turn. `chunks` splits `text` into stream deltas (default: one delta)."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallReply, ...] = ()
    chunks: tuple[str, ...] | None = None
    output_tokens: int = 7
    reasoning_tokens: int = 0
    status: int = 200  # anything else answers with an OpenAI-style error body

    def __post_init__(self) -> None:
        if self.chunks is not None and not self.text:
            object.__setattr__(self, "text", "".join(self.chunks))

    def text_deltas(self) -> tuple[str, ...]:
        if self.chunks is not None:
            return self.chunks
        return (self.text,) if self.text else ()


@dataclass(frozen=True)
class Recorded:
    path: str
    body: dict[str, Any]


Script = Callable[[str, dict[str, Any]], Reply]  # (path, request body) -> reply


class FakeOpenAIServer:
    """`base_url` is `http://127.0.0.1:<port>/v1`; `requests` holds every request body received."""

    def __init__(self, script: Script):
        self.script = script
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def bodies(self, path_suffix: str = "") -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith(path_suffix)]

    # --- called by the handler -------------------------------------------------------------------
    def _record(self, path: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(Recorded(path, body))
        return self.script(path, body)

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


def _handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ReplyingHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
                return
            path = self.path.split("?", 1)[0].rstrip("/")
            if not (path.endswith("/chat/completions") or path.endswith("/responses")):
                self._json(404, {"error": {"message": f"unknown path {path}", "type": "invalid_request_error"}})
                return
            reply = server._record(path, body)
            if reply.status != 200:
                self._json(reply.status, {"error": {"message": "scripted error", "type": "server_error"}})
                return
            model = body.get("model") or "fake-model"
            chat = path.endswith("/chat/completions")
            if body.get("stream"):
                events = _chat_stream(server, model, reply) if chat else _responses_stream(server, model, reply)
                self._sse(events)
            else:
                self._json(200, _chat(server, model, reply) if chat else _response(server, model, reply))

        def _sse(self, events: Iterator[tuple[str | None, dict[str, Any] | str]]) -> None:
            self._sse_start()
            try:
                for event, payload in events:
                    data = payload if isinstance(payload, str) else json.dumps(payload)
                    head = f"event: {event}\n" if event else ""
                    self.wfile.write(f"{head}data: {data}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading (a cut stream)

    return Handler


# --- chat completions ------------------------------------------------------------------------------

def _chat_usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": 11,
        "completion_tokens": reply.output_tokens,
        "total_tokens": 11 + reply.output_tokens,
        "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
    }


def _finish_reason(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _chat(server: FakeOpenAIServer, model: str, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": server._next_id("call"), "type": "function",
             "function": {"name": call.name, "arguments": call.arguments_json}}
            for call in reply.tool_calls
        ]
    return {
        "id": server._next_id("chatcmpl"), "object": "chat.completion", "created": 1700000000, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply), "logprobs": None}],
        "usage": _chat_usage(reply),
    }


def _chat_stream(server: FakeOpenAIServer, model: str, reply: Reply) -> Iterator[tuple[None, dict[str, Any] | str]]:
    ident = server._next_id("chatcmpl")

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "id": ident, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}] if usage is None else [],
        }
        if usage is not None:
            payload["usage"] = usage
        return payload

    yield None, chunk({"role": "assistant", "content": ""})
    if reply.reasoning:
        yield None, chunk({"reasoning_content": reply.reasoning})
    for delta in reply.text_deltas():
        yield None, chunk({"content": delta})
    for index, call in enumerate(reply.tool_calls):
        yield None, chunk({"tool_calls": [{"index": index, "id": server._next_id("call"), "type": "function",
                                           "function": {"name": call.name, "arguments": call.arguments_json}}]})
    yield None, chunk({}, _finish_reason(reply))
    yield None, chunk({}, usage=_chat_usage(reply))
    yield None, "[DONE]"


# --- responses -------------------------------------------------------------------------------------

def _responses_usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": 11, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output_tokens, "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        "total_tokens": 11 + reply.output_tokens,
    }


def _output_items(server: FakeOpenAIServer, reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append({"type": "reasoning", "id": server._next_id("rs"),
                      "summary": [{"type": "summary_text", "text": reply.reasoning}],
                      "content": [{"type": "reasoning_text", "text": reply.reasoning}]})
    for call in reply.tool_calls:
        items.append({"type": "function_call", "id": server._next_id("fc"), "call_id": server._next_id("call"),
                      "name": call.name, "arguments": call.arguments_json, "status": "completed"})
    if reply.text:
        items.append({"type": "message", "id": server._next_id("msg"), "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
    return items


def _response(server: FakeOpenAIServer, model: str, reply: Reply, items: list[dict[str, Any]] | None = None,
              ident: str | None = None, status: str = "completed") -> dict[str, Any]:
    return {
        "id": ident or server._next_id("resp"), "object": "response", "created_at": 1700000000, "status": status,
        "model": model, "output": _output_items(server, reply) if items is None else items,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "temperature": 1.0, "top_p": 1.0,
        "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
        "usage": _responses_usage(reply) if status == "completed" else None,
    }


def _responses_stream(server: FakeOpenAIServer, model: str, reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    ident = server._next_id("resp")
    sequence = itertools.count()
    items = _output_items(server, reply)

    def event(kind: str, **payload: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **payload}

    yield event("response.created", response=_response(server, model, reply, [], ident, "in_progress"))
    for index, item in enumerate(items):
        if item["type"] == "message":
            opened = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=opened)
            yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
                        part={"type": "output_text", "text": "", "annotations": []})
            for delta in reply.text_deltas():
                yield event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                            delta=delta, logprobs=[])
            yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                        text=reply.text, logprobs=[])
            yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                        part=item["content"][0])
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=_response(server, model, reply, items, ident))
