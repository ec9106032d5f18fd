"""`--webhook URL`: each verdict that asks the agent for something is POSTed there, signed.

The body is one JSON object (`sessions.verdict_event`: the verdict's fields, agent, session, trace and
span ids, message, time, and an `id` that stays the same across retries, for de-duplication). Headers:

    X-Otelguard-Timestamp: <unix seconds>
    X-Otelguard-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

A receiver recomputes the HMAC over the raw body, compares in constant time, and refuses a timestamp
more than `SKEW_S` (300 s) from its own clock (a replayed request). The secret comes from
`OTELGUARD_WEBHOOK_SECRET`, never the command line.

One thread sends, from a bounded queue: the judge only enqueues, so a slow or dead receiver never
holds ingestion; a full queue drops the verdict. Connection errors, 408, 429 and 5xx are retried with
exponential backoff (each attempt signed afresh); other answers are final. Every outcome is counted
in `otelguard.webhook.deliveries` (delivered, failed, dropped) and each retry in
`otelguard.webhook.retries`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import threading
import time
import uuid
from typing import Any

import requests
from opentelemetry.metrics import MeterProvider

logger = logging.getLogger("otelguard")

SECRET_ENV = "OTELGUARD_WEBHOOK_SECRET"
SKEW_S = 300  # how far a receiver should let X-Otelguard-Timestamp be from its clock
TIMESTAMP_HEADER = "X-Otelguard-Timestamp"
SIGNATURE_HEADER = "X-Otelguard-Signature"
DEFAULT_QUEUE = 1000
DEFAULT_ATTEMPTS = 5
OUTCOMES = ("delivered", "failed", "dropped")
_RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
_STOP = object()


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The `X-Otelguard-Signature` value of `body` sent at `timestamp`."""
    return "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


class Webhook:
    def __init__(self, url: str, secret: bytes, meter_provider: MeterProvider, *, max_queue: int = DEFAULT_QUEUE,
                 attempts: int = DEFAULT_ATTEMPTS, backoff_s: float = 0.5, timeout_s: float = 5.0):
        self.url = url
        self._secret = secret
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._timeout_s = timeout_s
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
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._stopping = threading.Event()
        self._session = requests.Session()
        self._thread = threading.Thread(target=self._run, name="otelguard-webhook", daemon=True)
        self._thread.start()

    def send(self, event: dict[str, Any]) -> None:
        """Queue one verdict event (`sessions.verdict_event`); never blocks: a full queue drops it."""
        body = json.dumps({**event, "id": uuid.uuid4().hex}, separators=(",", ":"), default=str).encode()
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self._deliveries.add(1, {"outcome": "dropped"})

    def flush(self) -> None:
        """Wait until every queued verdict has been delivered or given up on."""
        self._queue.join()

    def close(self, timeout_s: float = 10.0) -> None:
        """Send what is queued for up to `timeout_s` (retries cut short), then stop."""
        deadline = time.monotonic() + timeout_s
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            pass
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._stopping.set()  # a retry still waiting gives up now
        self._thread.join(1.0)
        self._session.close()

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            try:
                if body is _STOP:
                    return
                try:
                    outcome = self._post(body)
                except Exception:  # a bug: logged; the thread goes on (flush waits on it)
                    logger.exception("otelguard serve: webhook delivery failed")
                    outcome = "failed"
                self._deliveries.add(1, {"outcome": outcome})
            finally:
                self._queue.task_done()

    def _post(self, body: bytes) -> str:
        problem = ""
        for attempt in range(self._attempts):
            if attempt:
                self._retries.add(1)
                if self._stopping.wait(self._backoff_s * 2 ** (attempt - 1)):
                    break
            timestamp = str(int(time.time()))
            headers = {"Content-Type": "application/json", TIMESTAMP_HEADER: timestamp,
                       SIGNATURE_HEADER: signature(self._secret, timestamp, body)}
            try:
                answer = self._session.post(self.url, data=body, headers=headers, timeout=self._timeout_s)
            except requests.RequestException as error:
                problem = str(error)
                continue
            if answer.ok:
                return "delivered"
            problem = f"HTTP {answer.status_code}"
            if answer.status_code not in _RETRYABLE:
                break
        logger.warning("otelguard serve: webhook %s failed: %s", self.url, problem)
        return "failed"
