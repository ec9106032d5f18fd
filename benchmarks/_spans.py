"""Agent-run span shapes for the live benchmarks: minimal ones, and ones shaped like pydantic-ai's.

Both shapes run the same steps with the same model output (short reasoning, a short text, a tool
call with distinct arguments, so no verdict fires): `invoke_agent` around `steps` x (`chat` ->
`execute_tool`) and a final `chat`.

- minimal: only the attributes the guard reads. The guard's share of the pipeline is then the
  largest: the worst case.
- pydantic-ai: the attributes pydantic-ai really writes (see tests/fixtures/pydantic-ai-*):
  request parameters, tool definitions and the agent's ids when a chat span starts; the conversation
  so far as `gen_ai.input.messages` (growing each step), system instructions, response model and id,
  usage and finish reasons when it ends; about 5 KB per chat span. The sizes and texts come from
  _pydantic_ai.py, shared with analyzer_throughput's generator.

Attribute values are built before the clock starts (they are the application's work, not the
pipeline's); each replay gives the run fresh agent-run ids, as pydantic-ai does per run.
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass

from opentelemetry.trace import SpanKind

from _pydantic_ai import MODEL_SCHEMA, REQUEST_PARAMETERS, TOOL_DEFINITIONS, TOOL_SCHEMA, words

AGENT = "weather"
MODEL = "gpt-4o"
TOOL = "get_weather"
SPANS_PER_RUN = 8  # with the default 3 steps: the agent span, 4 chat spans, 3 tool spans
REASONING = ("The user wants the weather for a city; I should call the weather tool with the city name "
             "and then summarise the result in one sentence. ")  # ~130 chars: far below min_reasoning_chars
FINAL_TEXT = "It is sunny everywhere you asked about."


def output_messages(text: str, reasoning: str, tool: tuple[str, dict] | None, call_id: str = "call_1") -> list[dict]:
    parts: list[dict] = [{"type": "thinking", "content": reasoning}, {"type": "text", "content": text}]
    if tool is not None:
        parts.append({"type": "tool_call", "id": call_id, "name": tool[0], "arguments": tool[1]})
    return [{"role": "assistant", "parts": parts, "finish_reason": "tool_call" if tool else "stop"}]


def minimal_agent_runs(tracer, runs: int, steps: int = 3) -> None:
    """`runs` agent runs with minimal spans (JSON encoded in the clock, as before the realistic shape)."""
    for r in range(runs):
        with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT, "gen_ai.system": "openai",
        }):
            for s in range(steps):
                args = {"city": f"city-{r}-{s}", "units": "metric"}
                with tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT, attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": MODEL,
                }) as span:
                    span.set_attributes({
                        "gen_ai.output.messages": json.dumps(
                            output_messages(f"Checking {args['city']}.", REASONING, (TOOL, args))),
                        "gen_ai.usage.input_tokens": 812, "gen_ai.usage.output_tokens": 41,
                        "gen_ai.response.finish_reasons": ("tool_call",),
                    })
                with tracer.start_as_current_span(f"execute_tool {TOOL}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": TOOL,
                    "gen_ai.tool.call.id": f"call_{s}", "gen_ai.tool.call.arguments": json.dumps(args),
                }) as span:
                    span.set_attribute("gen_ai.tool.call.result", f"It is sunny in {args['city']}, 21C.")
            with tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": MODEL,
            }) as span:
                span.set_attributes({
                    "gen_ai.output.messages": json.dumps(output_messages(FINAL_TEXT, REASONING, None)),
                    "gen_ai.usage.input_tokens": 1020, "gen_ai.usage.output_tokens": 12,
                    "gen_ai.response.finish_reasons": ("stop",),
                })


# --- pydantic-ai-shaped runs ------------------------------------------------------------------------
@dataclass(slots=True)
class Step:
    """One span's attributes: those it starts with and those set before it ends."""

    name: str
    kind: SpanKind
    start: dict
    end: dict


@dataclass(slots=True)
class PydanticAiRun:
    agent_start: dict
    agent_end: dict
    steps: list[Step]  # chat, execute_tool, chat, ..., the final chat: each a child of the agent span


TOOL_DEFINITIONS_JSON = json.dumps(TOOL_DEFINITIONS)


def pydantic_ai_run(seed: int, steps: int = 3) -> PydanticAiRun:
    """One agent run's attributes as pydantic-ai (instrumentation version 3+) writes them."""
    rng = random.Random(seed)
    instructions = json.dumps([{"type": "text", "content": words(rng, rng.randint(400, 1500))}])
    history: list[dict] = [{"role": "user", "parts": [{"type": "text", "content": words(rng, rng.randint(50, 300))}]}]
    chat_start = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
        "gen_ai.request.model": MODEL, "model_request_parameters": REQUEST_PARAMETERS,
        "gen_ai.tool.definitions": TOOL_DEFINITIONS_JSON,
    }
    spans: list[Step] = []
    input_tokens = output_total = 0

    def chat(output: list[dict], finish: str) -> None:
        nonlocal input_tokens, output_total
        input_tokens = 400 + 4 * sum(len(json.dumps(m)) for m in history) // 16
        output_tokens = rng.randint(20, 120)
        output_total += output_tokens
        spans.append(Step(f"chat {MODEL}", SpanKind.CLIENT, chat_start, {
            "gen_ai.input.messages": json.dumps(history), "gen_ai.output.messages": json.dumps(output),
            "gen_ai.system_instructions": instructions, "logfire.json_schema": MODEL_SCHEMA,
            "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.response.model": f"{MODEL}-2024-08-06", "gen_ai.response.id": f"chatcmpl-{rng.getrandbits(96):024x}",
            "gen_ai.response.finish_reasons": (finish,),
        }))
        history.append(output[0])

    for s in range(steps):
        args = {"city": f"city-{seed}-{s}", "units": "metric"}
        call_id = f"call_{rng.getrandbits(64):016x}"
        chat(output_messages(f"Checking {args['city']}.", REASONING, (TOOL, args), call_id), "tool_call")
        result = f"It is sunny in {args['city']}, 21C. " + words(rng, rng.randint(50, 400))
        spans.append(Step(f"execute_tool {TOOL}", SpanKind.INTERNAL, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": TOOL, "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(args, separators=(",", ":")),
            "logfire.msg": f"running tool: {TOOL}", "logfire.json_schema": TOOL_SCHEMA,
        }, {"gen_ai.tool.call.result": result}))
        history.append({"role": "tool", "parts": [
            {"type": "tool_call_response", "id": call_id, "name": TOOL, "result": result}]})
    chat(output_messages(FINAL_TEXT, REASONING, None), "stop")
    return PydanticAiRun(
        agent_start={"gen_ai.operation.name": "invoke_agent", "model_name": MODEL, "agent_name": AGENT,
                     "logfire.msg": f"{AGENT} run"},
        agent_end={
            "final_result": FINAL_TEXT, "gen_ai.aggregated_usage.input_tokens": input_tokens,
            "gen_ai.aggregated_usage.output_tokens": output_total, "pydantic_ai.all_messages": json.dumps(history),
            "gen_ai.system_instructions": instructions, "logfire.json_schema": json.dumps({"type": "object", "properties": {
                "pydantic_ai.all_messages": {"type": "array"}, "gen_ai.system_instructions": {"type": "array"},
                "final_result": {"type": "object"}}}),
        },
        steps=spans,
    )


_run_ids = itertools.count(1)


def replay_pydantic_ai_runs(tracer, runs: list[PydanticAiRun]) -> None:
    """Replay prepared runs. Each gets fresh agent-run ids, which pydantic-ai puts on every span of
    the run (its baggage attributes, merged into each span's own)."""
    for run in runs:
        number = next(_run_ids)
        baggage = {"gen_ai.agent.name": AGENT, "gen_ai.agent.call.id": f"{number:036x}",
                   "gen_ai.conversation.id": f"{number + (1 << 64):036x}"}
        with tracer.start_as_current_span(f"invoke_agent {AGENT}", attributes={**run.agent_start, **baggage}) as agent:
            for step in run.steps:
                with tracer.start_as_current_span(step.name, kind=step.kind, attributes={**step.start, **baggage}) as span:
                    span.set_attributes(step.end)
            agent.set_attributes(run.agent_end)
