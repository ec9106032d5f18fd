"""OpenAI Agents SDK: `AgentsGuard` lets otelguard's verdicts reach an Agents SDK run.

The guard judges the spans of an OpenTelemetry bridge for the SDK's tracing, OpenInference's or
OpenLLMetry's `OpenAIAgentsInstrumentor`, installed on the TracerProvider that holds the
`GuardSpanProcessor`:

    from agents import Agent, Runner
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    import otelguard
    from otelguard.integrations.openai_agents import AgentsGuard

    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[BatchSpanProcessor(exporter)]))
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    guard = AgentsGuard()
    result = await guard.run(agent, "What is the weather in Paris?")   # Runner.run, guarded

What it does, through the SDK's own extension points:

- **inject / steer**: `RunConfig.call_model_input_filter` appends the guard's message to the next
  model input, after the step's tool outputs, as an input message with `role` ("user" by
  default; "system" or "developer" only when asked: the message quotes text the model wrote). Within the run it is sent again at the same place on every later call, so the model's
  view of the conversation stays consistent (pass `persist=False` when the server keeps the
  conversation: `previous_response_id`, `conversation_id`).
- **cancel**: the filter raises `otelguard.AgentCancelled` before the next model call, and
  `AgentsGuard.run` raises it when the cancel came on the run's last call.

`AgentsGuard` is the run's `otelguard.AgentControl`; `guard.run` / `guard.run_streamed` bind it
around `Runner.run` / `Runner.run_streamed`. To call the Runner yourself, bind it and pass its
config: `with otelguard.bind_control(guard): await Runner.run(agent, input,
run_config=guard.run_config(my_config))`. One guard per run or per conversation: messages that
arrive after a run's last model call are delivered in the next run that uses the same guard.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from typing import Any, Literal

try:
    from agents import Runner
    from agents.run_config import CallModelData, ModelInputData, RunConfig
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "otelguard.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'otelguard[openai-agents]'"
    ) from exc

from ..reactions.control import Mailbox, bind_control

__all__ = ["AgentsGuard"]

Role = Literal["system", "developer", "user"]


class AgentsGuard(Mailbox):
    """otelguard's control of one OpenAI Agents SDK run (or one conversation of runs).

    `inject`/`steer`/`cancel` are called from otelguard's control worker thread and only queue;
    the model-input filter delivers on the run's own task.
    """

    def __init__(self, *, role: Role = "user", persist: bool = True):
        if role not in ("system", "developer", "user"):
            raise ValueError(f"AgentsGuard role: must be 'system', 'developer' or 'user' (got {role!r})")
        self.role = role
        self.persist = persist
        super().__init__()
        self._delivery_lock = threading.Lock()
        self._delivered: list[tuple[int, dict[str, Any]]] = []  # (position in the sent input, item)
        self._first_item: Any = None
        self._last_length = 0

    # --- the SDK's extension points -----------------------------------------------------------------
    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """`base` (or a default RunConfig) whose model-input filter delivers this guard's messages.

        A filter already set on `base` runs first; this guard's messages go after its result.
        """
        base = base if base is not None else RunConfig()
        return dataclasses.replace(base, call_model_input_filter=self._filter(base.call_model_input_filter))

    def _filter(self, chained: Any) -> Any:
        async def call_model_input_filter(data: CallModelData[Any]) -> ModelInputData:
            model_data = data.model_data
            if chained is not None:
                result = chained(data)
                model_data = await result if inspect.isawaitable(result) else result
            self.raise_if_cancelled()
            model_data.input = self._deliver(list(model_data.input))
            return model_data

        return call_model_input_filter

    def _deliver(self, items: list[Any]) -> list[Any]:
        messages = self.drain()
        with self._delivery_lock:
            if self.persist:
                first = items[0] if items else None
                if first != self._first_item or len(items) < self._last_length:
                    self._delivered = []  # another run (or a server-kept conversation): start over
                self._first_item = first
                self._last_length = len(items)
                for position, item in self._delivered:
                    items.insert(min(position, len(items)), item)
            for message in messages:
                item = {"role": self.role, "content": message.text}
                if self.persist:
                    self._delivered.append((len(items), item))
                items.append(item)
        return items

    async def run(self, starting_agent: Any, input: Any, *, run_config: RunConfig | None = None,
                  **kwargs: Any) -> Any:
        """`Runner.run` with this guard bound; raises `otelguard.AgentCancelled` when the guard cancelled."""
        with bind_control(self):
            result = await Runner.run(starting_agent, input, run_config=self.run_config(run_config), **kwargs)
        self.raise_if_cancelled()
        return result

    def run_streamed(self, starting_agent: Any, input: Any, *, run_config: RunConfig | None = None,
                     **kwargs: Any) -> Any:
        """`Runner.run_streamed` with this guard bound; a cancel surfaces from `stream_events()`."""
        with bind_control(self):
            return Runner.run_streamed(starting_agent, input, run_config=self.run_config(run_config), **kwargs)
