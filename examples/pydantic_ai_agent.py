"""A pydantic-ai agent guarded by otelguard: pydantic-ai traces its model and tool calls, the guard
judges them, and `OtelGuard` brings the guard's reminders back into the next model request.

    pip install '.[pydantic-ai]'
    OPENAI_API_KEY=... python examples/pydantic_ai_agent.py

Set OTEL_EXPORTER_OTLP_ENDPOINT to also export the spans (with their verdict attributes) over OTLP;
OPENAI_BASE_URL and OTELGUARD_EXAMPLE_MODEL pick another OpenAI-compatible provider and model.
"""

import os

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel

import otelguard
from otelguard.integrations.pydantic_ai import OtelGuard

MODEL = os.environ.get("OTELGUARD_EXAMPLE_MODEL", "gpt-4o-mini")


def main() -> None:
    downstream = []
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        downstream.append(BatchSpanProcessor(OTLPSpanExporter()))
    # [docs:pydantic-ai]
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=downstream))  # your export pipeline
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))

    agent = Agent(OpenAIChatModel(MODEL), name="weather-agent", capabilities=[OtelGuard()])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f"Weather in {city}: sunny, 21 C."

    result = agent.run_sync("What is the weather in Paris?")  # reminded if it loops on get_weather
    # [/docs:pydantic-ai]
    prompts = [part.content for message in result.all_messages() if isinstance(message, ModelRequest)
               for part in message.parts if isinstance(part, UserPromptPart)]
    for text in prompts[1:]:  # the first is the user's own prompt
        print(f"otelguard told the model: {text}")
    print(f"answer: {result.output}")
    provider.shutdown()


if __name__ == "__main__":
    main()
