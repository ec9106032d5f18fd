"""`otelguard serve`: the guard as an OTLP service, for agents in any language.

Receivers (OTLP/HTTP and OTLP/gRPC) decode and queue; one judge thread replays the spans through the
same engine lifecycle as the live processor and the analyzer (`judge`); verdicts become the
processor's metrics, labelled with the sender's `service.name`, on a Prometheus endpoint; `--forward`
sends everything on, spans with their verdicts. Needs `otelguard[serve]`.
"""

from __future__ import annotations

from .judge import JudgeOptions
from .options import ServiceOptions
from .server import GuardService

__all__ = ["GuardService", "JudgeOptions", "ServiceOptions"]
