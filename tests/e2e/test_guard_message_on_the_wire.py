"""What the model provider receives when pydantic-ai delivers the guard's reminder (the README's
"What the model sees" table): a real pydantic-ai Agent on its OpenAI chat model, talking HTTP to the
scripted OpenAI-compatible server in tests/support, guarded by the real processor.

- default (`role="user"`): a user message with the reminder verbatim, right after the tool results;
- `role="system"` on a profile with inline system prompts (OpenAI's): a system message in place;
- `role="system"` on a profile without them (most other providers): pydantic-ai frames the
  mid-conversation system prompt as a user message `<system>...</system>`.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles.openai import openai_model_profile
from pydantic_ai.providers.openai import OpenAIProvider
from fake_openai_server import FakeOpenAIServer, Reply, ToolCallReply

import otelguard
from otelguard.guards.repeat_tool_reminder import SHORT_TEXT
from otelguard.integrations.pydantic_ai import OtelGuard

REPEAT_AT_TWO = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]}


def same_call_three_times(path: str, body: dict[str, Any]) -> Reply:
    if sum(1 for message in body["messages"] if message["role"] == "tool") < 3:
        return Reply(tool_calls=(ToolCallReply("get_weather", {"city": "Paris"}),))
    return Reply(text="It is sunny in Paris.")


def messages_after_the_reminder(role: str, *, inline_system_prompts: bool) -> list[dict[str, Any]]:
    """The chat messages of the last request, from the second tool result on."""
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(REPEAT_AT_TWO))
    try:
        with FakeOpenAIServer(same_call_three_times) as server:
            profile = {**openai_model_profile("gpt-4o"), "supports_inline_system_prompts": inline_system_prompts}
            model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(base_url=server.base_url, api_key="test"),
                                    profile=profile)
            instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))
            agent = Agent(model, capabilities=[instrumentation, OtelGuard(role=role)])

            @agent.tool_plain
            def get_weather(city: str) -> str:
                return "sunny"

            agent.run_sync("What's the weather in Paris?")
            messages = server.bodies("/chat/completions")[-1]["messages"]
    finally:
        provider.shutdown()
    tool_results = [i for i, message in enumerate(messages) if message["role"] == "tool"]
    return messages[tool_results[1]:]


def test_by_default_the_reminder_is_a_user_message_after_the_tool_result():
    assert messages_after_the_reminder("user", inline_system_prompts=True)[1] == {"role": "user", "content": SHORT_TEXT}


def test_as_system_on_openai_the_reminder_is_a_system_message():
    assert messages_after_the_reminder("system", inline_system_prompts=True)[1] == {"role": "system", "content": SHORT_TEXT}


def test_as_system_without_inline_system_prompts_pydantic_ai_frames_it_in_a_user_message():
    assert messages_after_the_reminder("system", inline_system_prompts=False)[1] == {
        "role": "user", "content": f"<system>{SHORT_TEXT}</system>"}
