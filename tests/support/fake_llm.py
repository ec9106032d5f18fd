"""A scripted fake LLM server for the real coding-agent CLIs (the only fake part of their end-to-end tests).

It speaks the APIs the four CLIs call: Anthropic Messages (Claude Code), Gemini generateContent and
streamGenerateContent (Gemini CLI), OpenAI Responses (Codex CLI) and Chat Completions (opencode), each
streamed or not. It is stateless, as a model is: the next step is the number of tool calls already in
the conversation the CLI sends, so a call the hook denied counts as made (the CLI shows the model the
denial as the call's result). A request that offers none of the scripted tools (a title, a summary)
gets `side_text`. Every scripted request is kept with the number of calls before it (`requests`), so a
test can read what the model was shown at each step.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from http_replies import ReplyingHandler


@dataclass
class Script:
    calls: list[tuple[str, dict[str, Any]]]  # (tool name, arguments), in order
    final: str = "Done."
    side_text: str = "OK"


@dataclass
class FakeLLM:
    script: Script
    requests: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (calls made before, body)

    def __post_init__(self) -> None:
        handler = type("Handler", (_Handler,), {"llm": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def first_step_showing(self, text: str) -> int | None:
        """The number of calls made before the first request whose conversation holds `text`."""
        quoted = json.dumps(text, ensure_ascii=False)[1:-1]  # as it appears inside a JSON string
        return next((step for step, body in self.requests if quoted in json.dumps(body, ensure_ascii=False)), None)

    def decide(self, prior_calls: int, offered: list[str]) -> tuple[str, Any, int | None]:
        names = {name for name, _ in self.script.calls}
        if not names & set(offered):
            return "side", self.script.side_text, None
        if prior_calls < len(self.script.calls):
            return "tool", self.script.calls[prior_calls], prior_calls
        return "final", self.script.final, prior_calls


def _anthropic_state(body: dict[str, Any]) -> tuple[int, list[str]]:
    calls = sum(1 for message in body.get("messages") or [] if message.get("role") == "assistant"
                and isinstance(message.get("content"), list)
                for block in message["content"] if block.get("type") == "tool_use")
    return calls, [tool.get("name") for tool in body.get("tools") or []]


def _gemini_state(body: dict[str, Any]) -> tuple[int, list[str]]:
    offered = [declaration.get("name") for tool in body.get("tools") or []
               for declaration in tool.get("functionDeclarations") or tool.get("function_declarations") or []]
    calls = sum(1 for content in body.get("contents") or [] if content.get("role") == "model"
                for part in content.get("parts") or [] if "functionCall" in part)
    return calls, offered


def _responses_state(body: dict[str, Any]) -> tuple[int, list[str]]:
    offered = [tool.get("name") or tool.get("type") for tool in body.get("tools") or []]
    items = body.get("input") if isinstance(body.get("input"), list) else []
    calls = sum(1 for item in items if item.get("type") in ("function_call", "custom_tool_call", "local_shell_call"))
    return calls, offered


def _chat_state(body: dict[str, Any]) -> tuple[int, list[str]]:
    offered = [(tool.get("function") or {}).get("name") or tool.get("name") for tool in body.get("tools") or []]
    calls = sum(len(message.get("tool_calls") or []) for message in body.get("messages") or []
                if message.get("role") == "assistant")
    return calls, offered


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


class _Handler(ReplyingHandler):
    llm: FakeLLM

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _sse(self, payload: Any, event: str | None = None) -> None:
        text = (f"event: {event}\n" if event else "") + "data: " + json.dumps(payload) + "\n\n"
        self.wfile.write(text.encode())
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        if self.path.rstrip("/").endswith("/models"):
            return self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model",
                                                                "created": 0, "owned_by": "fake"}]})
        self._json(404, {"error": {"message": "not found", "type": "not_found_error"}})

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        try:
            body = json.loads(self._body() or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        try:
            if path.endswith("/count_tokens"):
                return self._json(200, {"input_tokens": 1000})
            if ":countTokens" in path:
                return self._json(200, {"totalTokens": 1000})
            if path.endswith("/v1/messages"):
                state, reply = _anthropic_state, self._anthropic
            elif ":generateContent" in path or ":streamGenerateContent" in path:
                state, reply = _gemini_state, self._gemini
            elif path.endswith("/responses"):
                state, reply = _responses_state, self._responses
            elif path.endswith("/chat/completions"):
                state, reply = _chat_state, self._chat
            else:
                return self._json(404, {"error": {"message": f"not found: {path}", "type": "not_found_error"}})
            prior_calls, offered = state(body)
            decision = self.llm.decide(prior_calls, offered)
            if decision[0] != "side":
                self.llm.requests.append((prior_calls, body))
            reply(body, decision, path)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _anthropic(self, body: dict[str, Any], decision: tuple, path: str) -> None:
        kind, payload, step = decision
        usage = {"input_tokens": 1200, "output_tokens": 30, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if kind == "tool":
            name, arguments = payload
            content = [{"type": "text", "text": f"Step {step + 1}: calling {name}."},
                       {"type": "tool_use", "id": _id("toolu_"), "name": name, "input": arguments}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": payload}], "end_turn"
        message = {"id": _id("msg_"), "type": "message", "role": "assistant", "model": body.get("model", "claude"),
                   "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self._json(200, message)
        self._sse_start()
        self._sse({"type": "message_start", "message": dict(message, content=[], stop_reason=None,
                                                            usage=dict(usage, output_tokens=1))}, "message_start")
        for index, block in enumerate(content):
            if block["type"] == "text":
                self._sse({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                          "content_block_start")
                self._sse({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": block["text"]}}, "content_block_delta")
            else:
                self._sse({"type": "content_block_start", "index": index,
                           "content_block": dict(block, input={})}, "content_block_start")
                self._sse({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                          "content_block_delta")
            self._sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        self._sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": 30}}, "message_delta")
        self._sse({"type": "message_stop"}, "message_stop")

    def _gemini(self, body: dict[str, Any], decision: tuple, path: str) -> None:
        kind, payload, step = decision
        if kind == "tool":
            name, arguments = payload
            parts = [{"text": f"Step {step + 1}: calling {name}."}, {"functionCall": {"name": name, "args": arguments}}]
        else:
            parts = [{"text": payload}]
        response = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 30, "totalTokenCount": 1230},
                    "modelVersion": path.split("/models/")[-1].split(":")[0], "responseId": _id("")}
        if ":streamGenerateContent" not in path:
            return self._json(200, response)
        self._sse_start()
        self._sse(response)

    def _responses(self, body: dict[str, Any], decision: tuple, path: str) -> None:
        kind, payload, step = decision
        usage = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 30,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1230}
        text = f"Step {step + 1}: calling {payload[0]}." if kind == "tool" else payload
        items: list[dict[str, Any]] = [{"type": "message", "id": _id("msg_"), "role": "assistant", "status": "completed",
                                        "content": [{"type": "output_text", "text": text, "annotations": []}]}]
        if kind == "tool":
            items.append({"type": "function_call", "id": _id("fc_"), "call_id": _id("call_"), "name": payload[0],
                          "arguments": json.dumps(payload[1]), "status": "completed"})
        base = {"id": _id("resp_"), "object": "response", "created_at": int(time.time()),
                "model": body.get("model", "fake-model"), "status": "in_progress", "output": []}
        if not body.get("stream"):
            return self._json(200, dict(base, status="completed", output=items, usage=usage))
        self._sse_start()
        sequence = 0

        def event(kind: str, **fields: Any) -> None:
            nonlocal sequence
            sequence += 1
            self._sse(dict({"type": kind, "sequence_number": sequence}, **fields), kind)

        event("response.created", response=base)
        event("response.in_progress", response=base)
        for index, item in enumerate(items):
            if item["type"] == "message":
                event("response.output_item.added", output_index=index, item=dict(item, status="in_progress", content=[]))
                event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                      delta=item["content"][0]["text"])
                event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                      text=item["content"][0]["text"])
            else:
                event("response.output_item.added", output_index=index, item=dict(item, arguments=""))
                event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                      delta=item["arguments"])
                event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                      arguments=item["arguments"])
            event("response.output_item.done", output_index=index, item=item)
        event("response.completed", response=dict(base, status="completed", output=items, usage=usage))

    def _chat(self, body: dict[str, Any], decision: tuple, path: str) -> None:
        kind, payload, step = decision
        usage = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}
        call = None
        if kind == "tool":
            text, finish = f"Step {step + 1}: calling {payload[0]}.", "tool_calls"
            call = {"id": _id("call_"), "type": "function",
                    "function": {"name": payload[0], "arguments": json.dumps(payload[1])}}
        else:
            text, finish = payload, "stop"
        base = {"id": _id("chatcmpl-"), "created": int(time.time()), "model": body.get("model", "fake-model")}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text, **({"tool_calls": [call]} if call else {})}
            return self._json(200, dict(base, object="chat.completion", usage=usage,
                                        choices=[{"index": 0, "message": message, "finish_reason": finish}]))
        self._sse_start()
        base["object"] = "chat.completion.chunk"
        self._sse(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": text},
                                       "finish_reason": None}]))
        if call:
            self._sse(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [dict(call, index=0)]},
                                           "finish_reason": None}]))
        self._sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        self._sse(dict(base, choices=[], usage=usage))
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
