"""`otelguard serve --webhook URL`: verdicts that ask the agent for something reach a local receiver
as signed JSON; the receiver checks the HMAC and the timestamp on its own, and answers with errors
first to see the retries; failures and drops are counted; a redirect is not followed."""

from __future__ import annotations

import threading
import time

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from loopback_support import Redirect
from otelguard.service.webhook import Webhook
from service_support import running_service, scrape, send_with
from webhook_support import SECRET, receiving


def _webhook_counts(service) -> dict[str, float]:
    families = scrape(service)
    counts = {s.labels["outcome"]: s.value for s in families["otelguard_webhook_deliveries"]
              if s.name.endswith("_total")}
    counts["retries"] = sum(s.value for s in families["otelguard_webhook_retries"] if s.name.endswith("_total"))
    return counts


def test_reminders_are_posted_signed_and_retried_until_accepted() -> None:
    """Five identical tool calls: reminders at the 3rd and 5th are posted (the counting verdicts
    are not), with their evidence; the receiver's 503 is retried, each attempt signed afresh."""
    with receiving(statuses=[503]) as receiver, \
            running_service(webhook=receiver.url, webhook_secret=SECRET) as service:
        send_with(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces"), "hooked-agent")
        assert service.flush()
        assert receiver.bad_signatures == 0
        assert receiver.attempts == 3
        assert [event["action"] for event in receiver.accepted] == ["remind", "remind"]
        assert [event["repeat_count"] for event in receiver.accepted] == [3, 5]
        first = receiver.accepted[0]
        assert first["guard"] == "repeat-tool-reminder" and first["rule"] == "repeat-threshold"
        assert first["verdict"] == "repeated_tool_call" and first["tool"] == "lookup"
        assert first["agent"] == "planner" and first["service"] == "hooked-agent"
        assert len(first["trace_id"]) == 32 and len(first["span_id"]) == 16
        assert first["message"].startswith("You are repeating the exact same tool call")
        # The steps that made it: the three identical calls, the judged one last; the session not paused.
        assert [entry["step"] for entry in first["evidence"]] == [1, 2, 3] and first["paused"] is False
        assert first["evidence"][-1]["span_id"] == first["span_id"]
        assert first["evidence"][0]["arguments_preview"] == '{"city":"Paris"}'
        assert len({event["id"] for event in receiver.accepted}) == 2
        assert _webhook_counts(service) == {"delivered": 2, "failed": 0, "dropped": 0, "retries": 1}


def test_a_refusing_receiver_is_counted_failed_without_retries() -> None:
    with receiving(statuses=[400, 400]) as receiver, \
            running_service(webhook=receiver.url, webhook_secret=b"another secret") as service:
        send_with(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces"), "wrong-secret")
        assert service.flush()
        assert receiver.bad_signatures == 2 and receiver.accepted == []
        assert _webhook_counts(service) == {"delivered": 0, "failed": 2, "dropped": 0, "retries": 0}


def test_a_full_queue_drops_and_counts_without_waiting() -> None:
    """The judge only enqueues: with the receiver stuck, verdicts past the queue are dropped at once."""
    hold = threading.Event()
    reader = InMemoryMetricReader()
    with receiving(hold=hold) as receiver:
        webhook = Webhook(receiver.url, SECRET, MeterProvider(metric_readers=[reader]), max_queue=2)
        webhook.send({"verdict": "repeated_tool_call", "action": "remind", "repeat_count": 0})
        assert receiver.arrived.wait(5)  # the sender is now held by the receiver
        started = time.monotonic()
        for index in range(1, 6):  # two queued, three dropped
            webhook.send({"verdict": "repeated_tool_call", "action": "remind", "repeat_count": index})
        assert time.monotonic() - started < 0.5
        hold.set()
        webhook.flush()
        webhook.close()
        assert [event["repeat_count"] for event in receiver.accepted] == [0, 1, 2]
    counts = {point.attributes["outcome"]: point.value
              for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
              if metric.name == "otelguard.webhook.deliveries" for point in metric.data.data_points}
    assert counts == {"delivered": 3, "failed": 0, "dropped": 3}


@pytest.mark.parametrize("status", [307, 308])  # the redirects that re-send a body
def test_a_redirect_is_not_followed(status: int) -> None:
    """A URL that answers with a redirect: the signed body goes nowhere else, and the delivery is
    final (counted failed, not retried)."""
    with receiving() as elsewhere, Redirect(status, elsewhere.url) as redirect, \
            running_service(webhook=redirect.base + "/otelguard", webhook_secret=SECRET) as service:
        send_with(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces"), "redirected")
        assert service.flush()
        assert redirect.posts == 2 and elsewhere.attempts == 0
        assert _webhook_counts(service) == {"delivered": 0, "failed": 2, "dropped": 0, "retries": 0}
