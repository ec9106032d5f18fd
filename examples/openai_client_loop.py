"""A hand-written tool loop with the `openai` client, guarded by otelguard.

The openai instrumentation traces the model calls; `agent_run` and `tool_call` add the agent-run and
tool spans the guard needs, and `guard_messages` hands the loop what the guard has to tell the model.

    pip install '.[openai]'
    OPENAI_API_KEY=... python examples/openai_client_loop.py

Set OTEL_EXPORTER_OTLP_ENDPOINT to also export the spans (with their verdict attributes) over OTLP;
OPENAI_BASE_URL and OTELGUARD_EXAMPLE_MODEL pick another OpenAI-compatible provider and model.
"""

import json
import os

from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import otelguard
from otelguard.integrations.openai_client import agent_run, guard_messages, tool_call

MODEL = os.environ.get("OTELGUARD_EXAMPLE_MODEL", "gpt-4o-mini")
MAX_TURNS = 10
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}]


def get_weather(city: str) -> str:
    return f"Weather in {city}: sunny, 21 C."


def main() -> None:
    downstream = []
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        downstream.append(BatchSpanProcessor(OTLPSpanExporter()))
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=downstream))
    OpenAIInstrumentor().instrument(tracer_provider=provider)

    client = OpenAI()
    messages: list = [{"role": "user", "content": "What is the weather in Paris?"}]
    # [docs:openai-client]
    mailbox = otelguard.Mailbox()
    with agent_run("weather-agent", control=mailbox, tracer_provider=provider):
        for _ in range(MAX_TURNS):
            told = guard_messages(mailbox)  # raises otelguard.AgentCancelled when the guard cancels
            for message in told:
                print(f"otelguard told the model: {message['content']}")
            messages += told
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
            if not message.tool_calls:
                print(f"answer: {message.content}")
                break
            messages.append(message.model_dump(exclude_none=True))  # the assistant turn, before its tool results
            for call in message.tool_calls:
                with tool_call(call.function.name, call.function.arguments, call_id=call.id,
                               timeout_ms=5_000, tracer_provider=provider) as tool:  # a tool span, its budget armed
                    tool.set_result(get_weather(**json.loads(call.function.arguments)))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": tool.output})
    # [/docs:openai-client]
    provider.shutdown()


if __name__ == "__main__":
    main()
