"""An OpenAI Agents SDK agent guarded by otelguard: OpenInference's bridge turns the SDK's traces into
OpenTelemetry spans, the guard judges them, and `AgentsGuard` brings its reminders back into the
next model input.

    pip install '.[openai-agents]'
    OPENAI_API_KEY=... python examples/openai_agents_sdk.py

OPENAI_BASE_URL and OTELGUARD_EXAMPLE_MODEL pick another OpenAI-compatible provider and model.
"""

import asyncio
import os

from agents import Agent, function_tool, set_trace_processors
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider

import otelguard
from otelguard.integrations.openai_agents import AgentsGuard

MODEL = os.environ.get("OTELGUARD_EXAMPLE_MODEL", "gpt-4o-mini")


@function_tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Weather in {city}: sunny, 21 C."


async def main() -> None:
    # [docs:openai-agents]
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor())
    set_trace_processors([])  # the SDK's traces go to OpenTelemetry only, not to OpenAI's trace upload
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    guard = AgentsGuard()  # the guard's reminders go into the next model input, after the tool outputs
    agent = Agent(name="weather-agent", model=MODEL, tools=[get_weather])
    result = await guard.run(agent, "What is the weather in Paris?")  # also guard.run_streamed(...)
    # [/docs:openai-agents]
    print(f"answer: {result.final_output}")
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
