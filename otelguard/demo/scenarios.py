"""Scripted loops for `otelguard demo` and the tests: real pydantic-ai agents, scripted models.

Each scenario drives a real `pydantic_ai.Agent`, instrumented with pydantic-ai's own OpenTelemetry
instrumentation and guarded through `otelguard.integrations.pydantic_ai.OtelGuard`, with a
`FunctionModel` that falls into one loop kind and gets out of it once the guard's message reaches it
(or gives up after a bounded number of calls, so every scenario ends whatever the guard config):

- `repeated-tool-call`: the same `get_weather({"city": "Paris"})` call until the reminder arrives;
- `thinking-loop`: long reasoning-only calls (different text each time) until the steer arrives;
- `chanting-stream`: a streamed reply that chants one line, cut by `watch_stream`;
- `tool-timeout`: a tool that overruns its declared `timeout=`, aborted by the guard;
- `tool-cycle`: `read_page(2)`, `read_page(3)`, again and again: reminded, and steered when it goes on.

Needs pydantic-ai (`pip install 'otelguard[demo]'`), imported when a scenario runs.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from opentelemetry.sdk.trace import TracerProvider

from ..errors import AgentCancelled, RepetitiveOutputError

# --- scripted model output -----------------------------------------------------------------------

CHANT_LINES: tuple[str, ...] = ("Let me check.\n",) + ("I'll run the tests now.\n",) * 40
"""A chanting reply, one line per delta: a 24-character cycle of 974 characters in all."""

TIMEOUT_BUDGET_S = 0.1
"""The slow tool's declared timeout (pydantic-ai `timeout=`): the guard's budget, 100 ms."""

MAX_LOOP_CALLS = 6
"""A scripted model gives up looping after this many calls when no guard message reaches it."""

PRICED_AS = "gpt-4o-mini"
"""The planner's scripted model goes by the name of a model in genai-prices' table: its loop is priced."""

MAX_CYCLE_CALLS = 14
"""The cycling model gives up after this many calls (no-progress steers at its tenth with defaults)."""

_WORDS = """ability absent accept account action active actual adapter address adjust advance affect agenda
allocate almost alter amount analyze anchor answer append apply archive argue arrive aspect assert assume
attach attempt audit author backlog balance banner barrier batch become before behave belong benefit beyond
billing binary border bounce branch breadth bridge brief broken bucket buffer bundle button cable cadence
calendar canvas capture carbon carrier castle catalog ceiling center chance change channel chapter charge
checksum choose circle claim clause client cluster coarse column comfort commit common compile concern
confirm conflict consume context convert cookie corner correct counter couple crisp cursor custom damage
debate decade decide decode default defer degree delay delete deliver demand depend deploy derive design
detail detect device differ digest direct discard dispatch display distant divide docket domain double
draft driver during dynamic eager editor effect either elapsed element embed emerge emit enable encode
endpoint engine enough ensure entire entry equal escape estate evaluate event evict exact exceed expand
expect expire export extend extract fabric factor failure fallback family feature fetch fiber figure
filter finish fixture flag flatten flavor flush folder follow format forward fragile frame freeze funnel
gather gentle global govern gradual graph guard handle harbor harvest header health heavy hidden history
hollow honest horizon hybrid ignore image impact import incident index infer inline input inspect intent
invoke island jitter journal kernel ladder lambda latency layer ledger legacy length lever limit linger
listen locale magnet manual margin market matrix measure memory merge method middle minute mirror module
moment monitor motion native nearby needle nested neutral nimble normal notice number object obtain offset
opaque option orbit origin outage output owner packet parcel parse partial patch pattern pause payload
pebble period permit phrase pillar pivot planet pocket policy portal posture prefix primary probe profile
prompt proper proxy public puzzle quarter query queue quota random rapid reason record reduce refine region
reject relay remote render repair replay report resolve result retain return review ribbon rotate router
runtime sample schema scope screen script search season secret sector select sender sensor serial shadow
shallow signal silent simple single sketch socket source sparse stable status steady stream string subtle
suffix summary supply switch symbol syntax system target tenant thread ticket timber toggle token trace
travel trigger tunnel typical unique update upload urgent useful vacuum valley vendor verify vessel vision
volume wander weight window winter worker wrapper zenith""".split()
_OPENERS = ("Maybe", "Perhaps", "Wait,", "Hmm,", "Actually", "So", "Then", "Still,", "Okay,", "Alternatively")


def reasoning_text(seed: int, chars: int = 2600) -> str:
    """Deliberation that goes nowhere: about `chars` characters, a different text for each seed.

    Its repeat ratio stays near 0.35 and consecutive seeds share under 0.5 of their 4-character
    windows, so only the reasoning-only rule (not low-entropy or restated material) applies.
    """
    rng = random.Random(seed)
    sentences: list[str] = []
    size = 0
    while size < chars:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(7, 14)))
        sentence = f"{rng.choice(_OPENERS)} {words} ({rng.randint(10, 99999)})."
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --- what the model was sent -------------------------------------------------------------------------

def last_request_texts(messages: list[Any]) -> list[str]:
    """The text of every part of the newest request the model received (prompts, tool results)."""
    from pydantic_ai.messages import ModelRequest

    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            texts = []
            for part in message.parts:
                content = getattr(part, "content", None)
                texts.append(content if isinstance(content, str) else _as_json(content))
            return texts
        if message is not None:
            break
    return []


def _as_json(value: Any) -> str:
    try:
        return json.dumps(value, separators=(", ", ": "))
    except (TypeError, ValueError):
        return repr(value)


def _guard_texts(messages: list[Any], marker: str) -> list[str]:
    return [text for text in last_request_texts(messages) if marker in text]


# --- scenarios -------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one scenario did: the guard texts the model received, and how the run ended."""

    name: str
    model_calls: int = 0
    received: list[str] = field(default_factory=list)  # guard texts found in the model's requests
    ended: str = ""  # "answered: ..." | "cancelled: ..." | "cut: ..."
    error: BaseException | None = None


Notify = Callable[[str], None]


class Scenarios:
    """Builds guarded agents on one TracerProvider (which holds the GuardSpanProcessor)."""

    def __init__(self, tracer_provider: TracerProvider, *, notify: Notify | None = None):
        self.tracer_provider = tracer_provider
        self.notify = notify or (lambda line: None)

    def agent(self, model: Any, name: str, **kwargs: Any) -> Any:
        from pydantic_ai import Agent
        from pydantic_ai.capabilities import Instrumentation
        from pydantic_ai.models.instrumented import InstrumentationSettings

        from ..integrations.pydantic_ai import OtelGuard

        instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=self.tracer_provider))
        return Agent(model, name=name, capabilities=[instrumentation, OtelGuard()], **kwargs)

    def _model_turn(self, outcome: Outcome, messages: list[Any], marker: str) -> list[str]:
        """A model call of the scenario: counted, and the guard texts (those containing `marker`) in
        its newest request kept and shown; returns them."""
        outcome.model_calls += 1
        told = _guard_texts(messages, marker)
        for text in told:
            outcome.received.append(text)
            self.notify(text)
        return told

    # 1 -----------------------------------------------------------------------------------------------
    async def repeated_tool_call(self) -> Outcome:
        """The model calls get_weather(city="Paris") until a reminder reaches it, then answers."""
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage

        outcome = Outcome("repeated-tool-call")

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            told = self._model_turn(outcome, messages, "tool call")
            if told or outcome.model_calls > MAX_LOOP_CALLS:
                return ModelResponse(parts=[TextPart("It is sunny in Paris.")], usage=RequestUsage(input_tokens=10, output_tokens=6))
            return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"})], usage=RequestUsage(input_tokens=10, output_tokens=12))

        agent = self.agent(FunctionModel(model, model_name="scripted-weather"), "weather-agent")

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return f"Weather in {city}: sunny, 21 C."

        return await self._run(outcome, agent, "What is the weather in Paris?")

    # 2 -----------------------------------------------------------------------------------------------
    async def thinking_loop(self) -> Outcome:
        """The model only deliberates (long reasoning, no answer) until it is steered, then answers."""
        from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage

        outcome = Outcome("thinking-loop")

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            told = self._model_turn(outcome, messages, "reasoning")
            if told or outcome.model_calls > MAX_LOOP_CALLS:
                return ModelResponse(parts=[TextPart("The flaky test comes from the cache TTL.")],
                                     usage=RequestUsage(input_tokens=10, output_tokens=12))
            thought = reasoning_text(outcome.model_calls)
            return ModelResponse(parts=[ThinkingPart(thought)], usage=RequestUsage(input_tokens=10, output_tokens=_tokens(thought)))

        # Scripted, but named after a model genai-prices knows, so the demo shows what its loop cost.
        agent = self.agent(FunctionModel(model, model_name=PRICED_AS), "planner-agent",
                           retries=MAX_LOOP_CALLS + 2)
        return await self._run(outcome, agent, "Why is test_checkout flaky?")

    # 3 -----------------------------------------------------------------------------------------------
    async def chanting_stream(self) -> Outcome:
        """A streamed reply chants one line; watch_stream cuts it, and the next run is told why."""
        from pydantic_ai.messages import ModelResponse, TextPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage

        from ..live.streams import watch_stream

        outcome = Outcome("chanting-stream")
        conversation = "demo-chanting-stream"

        async def stream(messages: list[Any], info: AgentInfo) -> Any:
            outcome.model_calls += 1
            for line in CHANT_LINES:
                yield line

        def answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
            self._model_turn(outcome, messages, "repeated itself")
            return ModelResponse(parts=[TextPart("The tests pass.")], usage=RequestUsage(input_tokens=10, output_tokens=4))

        agent = self.agent(FunctionModel(answer, stream_function=stream, model_name="scripted-reporter"),
                           "reporter-agent")
        shown = 0
        try:
            async with agent.run_stream("Run the tests and report.", conversation_id=conversation) as result:
                async for delta in watch_stream(result.stream_text(delta=True, debounce_by=None)):
                    shown += len(delta)
            outcome.ended = "streamed to the end"
        except RepetitiveOutputError as exc:
            outcome.ended = f"cut after {shown} characters ({exc.code}, rule {exc.rule})"
            outcome.error = exc
        # The correction the guard queued reaches the next run of the same conversation.
        await agent.run("Report the result in one line.", conversation_id=conversation)
        return outcome

    # 4 -----------------------------------------------------------------------------------------------
    async def tool_timeout(self) -> Outcome:
        """A tool declared with timeout=0.1 hangs; the guard aborts it and the model gets the error."""
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage

        from ..live.tools import tool_signal

        outcome = Outcome("tool-timeout")

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            self._model_turn(outcome, messages, "timed out")
            if outcome.model_calls > 1:
                return ModelResponse(parts=[TextPart("The test run timed out; try a smaller suite.")],
                                     usage=RequestUsage(input_tokens=10, output_tokens=9))
            return ModelResponse(parts=[ToolCallPart("run_tests", {"suite": "all"})], usage=RequestUsage(input_tokens=10, output_tokens=8))

        agent = self.agent(FunctionModel(model, model_name="scripted-runner"), "runner-agent")

        @agent.tool_plain(timeout=TIMEOUT_BUDGET_S)
        async def run_tests(suite: str) -> str:
            # A well-behaved tool forwards the guard's signal: it stops when the budget runs out.
            signal = tool_signal()
            try:
                await asyncio.wait_for(signal.wait_async(), timeout=5)
            except asyncio.TimeoutError:
                return f"{suite}: 412 passed"
            return f"{suite}: stopped ({signal.reason})"

        return await self._run(outcome, agent, "Run the whole test suite.")

    # 5 -----------------------------------------------------------------------------------------------
    async def tool_cycle(self) -> Outcome:
        """The model reads page 2, then page 3, then page 2 again...: it shrugs off the reminder and
        stops only when steered."""
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.usage import RequestUsage

        outcome = Outcome("tool-cycle")

        def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
            told = self._model_turn(outcome, messages, "No progress")
            if any("still repeating" in text for text in told) or outcome.model_calls > MAX_CYCLE_CALLS:
                return ModelResponse(parts=[TextPart("The changelog has no entry for 2.4; it ends at 2.3.")],
                                     usage=RequestUsage(input_tokens=10, output_tokens=14))
            page = 2 + outcome.model_calls % 2  # 3, 2, 3, 2, ...
            return ModelResponse(parts=[ToolCallPart("read_page", {"page": page})],
                                 usage=RequestUsage(input_tokens=10, output_tokens=8))

        agent = self.agent(FunctionModel(model, model_name="scripted-reader"), "reader-agent")

        @agent.tool_plain
        def read_page(page: int) -> str:
            return f"CHANGELOG page {page} of 3: entries for 2.{page - 1}.x"

        return await self._run(outcome, agent, "Find the changelog entry for version 2.4.")

    async def _run(self, outcome: Outcome, agent: Any, prompt: str) -> Outcome:
        try:
            result = await agent.run(prompt)
            outcome.ended = f"answered: {result.output}"
        except AgentCancelled as exc:
            outcome.ended = f"cancelled: {exc.cause}"
            outcome.error = exc
        return outcome


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    title: str
    run: Callable[[Scenarios], Awaitable[Outcome]]


SCENARIOS: tuple[ScenarioInfo, ...] = (
    ScenarioInfo("repeated-tool-call", "repeated tool call: get_weather(city=\"Paris\") again and again",
                 Scenarios.repeated_tool_call),
    ScenarioInfo("thinking-loop", "thinking loop: long reasoning-only calls, no answer",
                 Scenarios.thinking_loop),
    ScenarioInfo("chanting-stream", "chanting stream: \"I'll run the tests now.\" forever",
                 Scenarios.chanting_stream),
    ScenarioInfo("tool-timeout", "tool timeout: run_tests overruns its declared 100 ms",
                 Scenarios.tool_timeout),
    ScenarioInfo("tool-cycle", "tool cycle: read_page(2), read_page(3), read_page(2), ... without progress",
                 Scenarios.tool_cycle),
)
