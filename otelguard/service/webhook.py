"""`--webhook URL`: each verdict that asks the agent for something is POSTed there, signed.

The body is one JSON object (`sessions.verdict_event`: the verdict's fields, agent, session, trace and
span ids, message, time, and an `id` that stays the same across retries, for de-duplication). Headers:

    X-Otelguard-Timestamp: <unix seconds>
    X-Otelguard-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

A receiver recomputes the HMAC over the raw body, compares in constant time, and refuses a timestamp
more than `SKEW_S` (300 s) from its own clock (a replayed request). The secret comes from
`OTELGUARD_WEBHOOK_SECRET`, never the command line.

One thread sends, from a bounded queue (`max_queue` verdicts, `max_bytes` of their bodies): the judge
only enqueues, so a slow or dead receiver never holds ingestion; a full queue drops the verdict. Only
a 2xx answer is a delivery, and a redirect is not followed (the signed body goes nowhere else).
Connection errors, 408, 429 and 5xx are retried with exponential backoff (each attempt signed
afresh); other answers are final. Every outcome is counted
in `otelguard.webhook.deliveries` (delivered, failed, dropped) and each retry in
`otelguard.webhook.retries`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any

from opentelemetry.metrics import MeterProvider

from .sending import QueuedSender

SECRET_ENV = "OTELGUARD_WEBHOOK_SECRET"
SKEW_S = 300  # how far a receiver should let X-Otelguard-Timestamp be from its clock
TIMESTAMP_HEADER = "X-Otelguard-Timestamp"
SIGNATURE_HEADER = "X-Otelguard-Signature"
DEFAULT_QUEUE = 1000
DEFAULT_QUEUE_BYTES = 16 * 1024 * 1024
DEFAULT_ATTEMPTS = 5
OUTCOMES = ("delivered", "failed", "dropped")
_RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The `X-Otelguard-Signature` value of `body` sent at `timestamp`."""
    return "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


class Webhook(QueuedSender):
    def __init__(self, url: str, secret: bytes, meter_provider: MeterProvider, *, max_queue: int = DEFAULT_QUEUE,
                 max_bytes: int = DEFAULT_QUEUE_BYTES, attempts: int = DEFAULT_ATTEMPTS, backoff_s: float = 0.5,
                 timeout_s: float = 5.0):
        self.url = url
        self._secret = secret
        meter = meter_provider.get_meter("otelguard")
        self._deliveries = meter.create_counter(
            "otelguard.webhook.deliveries", unit="{verdict}",
            description="Verdicts posted to the webhook, by outcome: delivered, failed (after retries), dropped "
                        "(the queue was full)")
        self._retries = meter.create_counter("otelguard.webhook.retries", unit="{request}",
                                             description="Webhook requests retried")
        for outcome in OUTCOMES:
            self._deliveries.add(0, {"outcome": outcome})
        self._retries.add(0)
        super().__init__("otelguard-webhook", max_queue=max_queue, max_bytes=max_bytes, attempts=attempts,
                         backoff_s=backoff_s, timeout_s=timeout_s, retryable=_RETRYABLE)

    def send(self, event: dict[str, Any]) -> None:
        """Queue one verdict event (`sessions.verdict_event`); never blocks: a full queue drops it."""
        body = json.dumps({**event, "id": uuid.uuid4().hex}, separators=(",", ":"), default=str).encode()
        if not self.put(body, len(body)):
            self._deliveries.add(1, {"outcome": "dropped"})

    def deliver(self, body: bytes) -> None:
        def headers() -> dict[str, str]:  # each attempt signed at its own time
            timestamp = str(int(time.time()))
            return {"Content-Type": "application/json", TIMESTAMP_HEADER: timestamp,
                    SIGNATURE_HEADER: signature(self._secret, timestamp, body)}

        delivered = self.post(self.url, body, headers, on_retry=lambda: self._retries.add(1))
        self._deliveries.add(1, {"outcome": "delivered" if delivered else "failed"})

    def failed(self, body: bytes) -> None:
        self._deliveries.add(1, {"outcome": "failed"})
