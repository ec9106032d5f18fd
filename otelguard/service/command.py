"""`otelguard serve`: run a `GuardService` until SIGTERM or SIGINT, printing each alert as it fires.

    otelguard serve [--http HOST:PORT] [--grpc HOST:PORT] [--metrics HOST:PORT] [--config F]
                    [--forward URL [--evaluation-events actions|all|off]]
                    [--token-file F] [--tls-cert F --tls-key F] [--max-request-bytes N] [--queue N]
                    [--max-connections N] [--forward-queue-bytes N]
                    [--webhook URL]   (its secret in OTELGUARD_WEBHOOK_SECRET)

`off` for a listener turns it off. On SIGTERM or SIGINT the receivers stop, what was accepted is
judged (and forwarded), and the command exits 0. Exit status 2: bad usage, an invalid config, a
token that cannot authenticate or an address that cannot be bound (one line on stderr). A listener
on an address other than loopback without --token-file is warned about on stderr at start. The
process's soft limit on open descriptors is raised to its hard limit. Alert lines are written by
their own thread (`alerts.AlertLines`): stdout that nobody reads never holds the judge.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
import threading
from typing import TextIO
from urllib.parse import urlsplit

from ..reactions.evaluation_events import MODES
from .access import AccessError, TlsFiles, read_token
from .alerts import AlertLines
from .connections import raise_descriptor_limit
from .options import DEFAULT_MAX_CONNECTIONS
from .forward import DEFAULT_QUEUE_BYTES as DEFAULT_FORWARD_QUEUE_BYTES
from .judge import DEFAULT_QUEUE, JudgeOptions
from .options import DEFAULT_GRPC, DEFAULT_HTTP, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_METRICS, LIVE_SESSIONS, Address
from .webhook import SECRET_ENV

OFF = "off"


class ServeError(Exception):
    """A problem reported in one line; exit status 2."""


def address(text: str) -> Address | None:
    """HOST:PORT (`[::1]:4318` for IPv6), or `off`."""
    if text == OFF:
        return None
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT or {OFF}, e.g. 127.0.0.1:4318 (got {text!r})")
    return host, int(port)


def forward_url(text: str) -> str:
    return _http_url(text, "an OTLP/HTTP base URL, e.g. http://127.0.0.1:4318").rstrip("/")


def webhook_url(text: str) -> str:
    return _http_url(text, "an http(s) URL, e.g. https://hooks.example/otelguard")


def _http_url(text: str, expected: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"expected {expected} (got {text!r})")
    return text


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number above 0 (got {text!r})")
    return int(text)


def _shown(value: Address) -> str:
    return f"{value[0]}:{value[1]}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--http", type=address, default=DEFAULT_HTTP, metavar="HOST:PORT",
                        help=f"OTLP/HTTP receiver (/v1/traces, /v1/logs, /v1/metrics; default {_shown(DEFAULT_HTTP)})")
    parser.add_argument("--grpc", type=address, default=DEFAULT_GRPC, metavar="HOST:PORT",
                        help=f"OTLP/gRPC receiver (default {_shown(DEFAULT_GRPC)})")
    parser.add_argument("--metrics", type=address, default=DEFAULT_METRICS, metavar="HOST:PORT",
                        help=f"Prometheus text at /metrics (default {_shown(DEFAULT_METRICS)})")
    parser.add_argument("--config", metavar="F", help="guard config (YAML or JSON); default: all guards")
    parser.add_argument("--forward", type=forward_url, metavar="URL",
                        help="send what is received on to this OTLP/HTTP endpoint, spans with their verdicts")
    parser.add_argument("--evaluation-events", choices=MODES, default="actions",
                        help="with --forward, also send a gen_ai.evaluation.result log event per verdict with an "
                             "action (all: every verdict; off: none), on the judged span's trace and span ids "
                             "(default actions)")
    parser.add_argument("--token-file", metavar="F",
                        help="require 'Authorization: Bearer <the token in F>' on every HTTP route and gRPC call")
    parser.add_argument("--tls-cert", metavar="F", help="PEM certificate chain: serve HTTP, gRPC and metrics over TLS")
    parser.add_argument("--tls-key", metavar="F", help="the PEM private key of --tls-cert")
    parser.add_argument("--max-request-bytes", type=positive, default=DEFAULT_MAX_REQUEST_BYTES, metavar="N",
                        help=f"refuse a request larger than this once decompressed: HTTP 413, gRPC "
                             f"RESOURCE_EXHAUSTED (default {DEFAULT_MAX_REQUEST_BYTES})")
    parser.add_argument("--page-sessions", type=int, default=LIVE_SESSIONS, metavar="N",
                        help=f"sessions the live page at / holds (default {LIVE_SESSIONS}; 0: no page)")
    parser.add_argument("--webhook", type=webhook_url, metavar="URL",
                        help=f"POST each verdict that asks the agent for something here, as JSON signed with "
                             f"HMAC-SHA256 (the secret in ${SECRET_ENV})")
    parser.add_argument("--queue", type=positive, default=DEFAULT_QUEUE, metavar="N",
                        help=f"requests waiting for the judge; when full: HTTP 503 with Retry-After, gRPC "
                             f"UNAVAILABLE, which OTLP exporters retry (default {DEFAULT_QUEUE})")
    parser.add_argument("--max-connections", type=positive, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                        help=f"connections each HTTP listener serves at once (past it: 503), and gRPC calls at "
                             f"once (past it: RESOURCE_EXHAUSTED) (default {DEFAULT_MAX_CONNECTIONS})")
    parser.add_argument("--forward-queue-bytes", type=positive, default=DEFAULT_FORWARD_QUEUE_BYTES, metavar="N",
                        help=f"with --forward, the requests waiting to be sent on, in bytes; past it a request is "
                             f"dropped and counted (default {DEFAULT_FORWARD_QUEUE_BYTES})")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from ..guards.config import GuardConfig
    from ..errors import ConfigError
    from .options import ServiceOptions
    from .server import GuardService

    out = out or sys.stdout
    try:
        config = GuardConfig.load(args.config)
    except ConfigError as error:
        raise ServeError(f"--config {args.config}: {error}") from None
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ServeError("--tls-cert and --tls-key go together")
    try:
        token = read_token(args.token_file) if args.token_file else None
        tls = TlsFiles(args.tls_cert, args.tls_key) if args.tls_cert else None
        if tls is not None:
            tls.check()
    except AccessError as error:
        raise ServeError(str(error)) from None
    secret = os.environ.get(SECRET_ENV, "")
    if args.webhook and not secret:
        raise ServeError(f"--webhook needs its signing secret in ${SECRET_ENV}")
    if token is None:
        exposed = [f"{name} {_shown(where)}" for name, where in (("--http", args.http), ("--grpc", args.grpc),
                                                                ("--metrics", args.metrics))
                   if where is not None and not _loopback(where[0])]
        if exposed:
            print(f"otelguard serve: warning: without --token-file, anyone who can reach {', '.join(exposed)} "
                  f"can send spans, read verdicts and call the hook route (see docs/security.md)",
                  file=sys.stderr, flush=True)
    raise_descriptor_limit()
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    alerts = AlertLines(out)
    try:
        options = ServiceOptions(http=args.http, grpc=args.grpc, metrics=args.metrics, forward=args.forward,
                                 judge=JudgeOptions(queue=args.queue), token=token, tls=tls,
                                 max_request_bytes=args.max_request_bytes, max_connections=args.max_connections,
                                 forward_queue_bytes=args.forward_queue_bytes, webhook=args.webhook,
                                 webhook_secret=secret.encode(), evaluation_events=args.evaluation_events,
                                 page_sessions=max(0, args.page_sessions))
        service = GuardService(config, options, alerts=alerts)
        try:
            service.start()
        except OSError as error:
            service.stop()
            raise ServeError(f"cannot listen: {error.strerror or error}") from None
        listening = [f"OTLP/HTTP {service.http_url}" if args.http else "",
                     f"OTLP/gRPC {service.grpc_target}" if args.grpc else "",
                     f"metrics {service.metrics_url}" if args.metrics else "",
                     f"forwarding to {args.forward} (evaluation events: {args.evaluation_events})"
                     if args.forward else "",
                     f"webhook {args.webhook}" if args.webhook else "",
                     "bearer token required" if token else ""]
        alerts.line("otelguard serve: " + ", ".join(item for item in listening if item))
        while not stop.wait(0.5):
            pass
        alerts.line("otelguard serve: stopping; judging what was received")
        service.stop()
        judge = service.judge
        alerts.line(f"otelguard serve: {judge.received} spans received, {judge.judged_verdicts} verdicts"
                    + (f", {alerts.dropped} alert lines dropped (the output was not read)" if alerts.dropped else ""))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        alerts.close()
    return 0


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # another name: wherever it resolves
        return False
