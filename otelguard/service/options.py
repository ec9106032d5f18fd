"""What `otelguard serve` is started with: where it listens, whom it serves, how much it takes and
how long a request may take to arrive."""

from __future__ import annotations

from dataclasses import dataclass, field

from .access import TlsFiles, token_problem
from .forward import DEFAULT_QUEUE_BYTES as DEFAULT_FORWARD_QUEUE_BYTES
from .judge import JudgeOptions
from ..report.live import LIVE_SESSIONS

Address = tuple[str, int]
DEFAULT_HTTP: Address = ("127.0.0.1", 4318)
DEFAULT_GRPC: Address = ("127.0.0.1", 4317)
DEFAULT_METRICS: Address = ("127.0.0.1", 9464)
DEFAULT_MAX_REQUEST_BYTES = 20 * 1024 * 1024  # a request's body once decompressed
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Deadlines:
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    """Where to listen (None: not at all; port 0: any free port) and where to forward; who may talk
    to it (`token`: the bearer token every route asks for; `tls`: served on every listener), how
    much a request may hold (decompressed), how many connections (HTTP) or calls (gRPC) each listener
    serves at once and how long a request may take to arrive (`connections`)."""

    http: Address | None = DEFAULT_HTTP
    grpc: Address | None = DEFAULT_GRPC
    metrics: Address | None = DEFAULT_METRICS
    forward: str | None = None
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    token: str | None = None
    tls: TlsFiles | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    deadlines: Deadlines = field(default_factory=Deadlines)
    forward_queue_bytes: int = DEFAULT_FORWARD_QUEUE_BYTES  # requests waiting to be forwarded, serialized
    webhook: str | None = None  # verdicts that ask for something are POSTed here, signed with:
    webhook_secret: bytes = field(default=b"", repr=False)
    # gen_ai.evaluation.result events of the verdicts, sent to `forward` (`live.evaluation_events`):
    # "actions", "all" or "off"; none without `forward`.
    evaluation_events: str = "actions"
    # The live page at `GET /` on `http` (`service.page`): the sessions its store holds at most; 0: no page.
    page_sessions: int = LIVE_SESSIONS

    def __post_init__(self) -> None:
        problem = token_problem(self.token) if self.token is not None else ""
        if problem:
            raise ValueError(f"token: {problem}")
