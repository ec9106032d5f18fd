"""Verdicts as GenAI evaluation events: one `gen_ai.evaluation.result` log record per verdict.

The OpenTelemetry GenAI semantic conventions (open-telemetry/semantic-conventions-genai,
model/gen-ai/events.yaml; moved there from open-telemetry/semantic-conventions) define this event
for the result of judging GenAI output, emitted through the logs API and parented to the span it
judges (`conventions.genai_events` reads them back: `otelguard analyze` compares them with its
replay). Backends that know the conventions show these without knowing otelguard. Per verdict:

    gen_ai.evaluation.name         otelguard.<guard>.<rule>
    gen_ai.evaluation.score.label  the action (remind, steer, cancel, ...; none)
    gen_ai.evaluation.score.value  the count the verdict rests on: the run of identical calls, the
                                   stalled model calls, or the repeated characters (when it has one)
    gen_ai.evaluation.explanation  the message the agent got (when it got one), then the verdict's
                                   evidence: the steps that made its pattern, with their spans
    gen_ai.response.id             the judged model response's id (when the span has one)

plus the span's own `otelguard.*` verdict attributes and `gen_ai.agent.name`, and for a loop (of
model calls or of tool calls) what it has spent so far (`otelguard.loop.input_tokens`,
`otelguard.loop.output_tokens`, `otelguard.loop.cost_usd`, or `otelguard.loop.unpriced` with the reason
it has no price; see loop_spend). The record's trace and span ids are the judged span's. Only verdicts cost anything here: spans without one never reach it.
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LoggerProvider, SeverityNumber, get_logger

from .._version import __version__
from ..model.actions import Action
from ..runtime.containment import Containment
from ..detectors.evidence import explained
from ..conventions.genai_events import AGENT_NAME, EXPLANATION, LABEL, NAME, VALUE, evaluation_name
from ..conventions.genai_events import EVALUATION as EVENT_NAME
from ..errors import ConfigError
from ..model.records import Verdict

MODES = ("actions", "all", "off")  # verdicts with an action / every verdict (action none too) / none
_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)


def evaluation_attributes(verdict: Verdict, agent_name: str | None, response_id: Any = None) -> dict[str, Any]:
    """The event's attributes for one verdict."""
    attributes: dict[str, Any] = {NAME: evaluation_name(verdict.guard, verdict.rule), LABEL: str(verdict.action)}
    count = next((n for n in (verdict.repeat_count, verdict.thinking_stalled, verdict.stream_chars) if n is not None), None)
    if count is not None:
        attributes[VALUE] = float(count)
    explanation = "\n\n".join(part for part in (verdict.message, explained(verdict.evidence)) if part)
    if explanation:
        attributes[EXPLANATION] = explanation
    if isinstance(response_id, str) and response_id:
        attributes["gen_ai.response.id"] = response_id
    if agent_name:
        attributes[AGENT_NAME] = agent_name
    attributes.update((key, str(value)) if isinstance(value, Action) else (key, value)
                      for key, value in verdict.attributes().items())
    return attributes


class EvaluationEvents:
    """Emits the evaluation events of a processor's verdicts through `logger_provider` (the global
    one when None; records emitted before one is set go to it once it is)."""

    def __init__(self, logger_provider: LoggerProvider | None, mode: str, containment: Containment):
        if mode not in MODES:
            raise ConfigError(f"evaluation_events: must be one of {', '.join(MODES)} (got {mode!r})")
        self.mode = mode
        self._all = mode == "all"
        self._containment = containment
        self._logger = None if mode == "off" else get_logger("otelguard", __version__, logger_provider=logger_provider)

    @classmethod
    def off(cls) -> EvaluationEvents:
        """An emitter that emits nothing."""
        return cls(None, "off", Containment(lambda where: None))

    def wants(self, verdict: Verdict) -> bool:
        return self._logger is not None and (self._all or verdict.action != Action.NONE)

    def emit(self, verdict: Verdict, trace_id: int, span_id: int, *, agent_name: str | None,
             response_id: Any = None, trace_flags: trace.TraceFlags = _SAMPLED,
             extra: dict[str, Any] | None = None) -> None:
        """One event for `verdict`, parented to the span (trace_id, span_id), with `extra` attributes
        (a loop's spend). The guard judges spans that record, so unless told otherwise the span counts
        as sampled."""
        if self._logger is None:
            return
        with self._containment.contained("evaluation_events"):
            judged = trace.NonRecordingSpan(trace.SpanContext(trace_id, span_id, is_remote=False, trace_flags=trace_flags))
            self._logger.emit(
                timestamp=time.time_ns(),
                context=trace.set_span_in_context(judged),
                severity_number=SeverityNumber.INFO if verdict.action == Action.NONE else SeverityNumber.WARN,
                event_name=EVENT_NAME,
                attributes={**evaluation_attributes(verdict, agent_name, response_id), **(extra or {})},
            )
