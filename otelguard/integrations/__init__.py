"""Integrations: how otelguard's verdicts reach a running agent in each framework.

Each module imports its framework lazily (only when you import the module), so `import otelguard`
never needs them. Install the matching extra:

- `otelguard.integrations.pydantic_ai` (`pip install 'otelguard[pydantic-ai]'`): the `OtelGuard`
  capability. Guard messages go into the next model request, cancel raises `otelguard.AgentCancelled`,
  a tool's own `timeout=` is its guard budget.
- `otelguard.integrations.openai_agents` (`pip install 'otelguard[openai-agents]'`): `AgentsGuard`,
  a `RunConfig` whose `call_model_input_filter` delivers guard messages and raises on cancel.
- `otelguard.integrations.openai_client` (`pip install 'otelguard[openai]'`): helpers for a
  hand-written loop with the plain `openai` client and an `otelguard.Mailbox`.
"""

from __future__ import annotations

__all__: list[str] = []
