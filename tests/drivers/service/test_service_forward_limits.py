"""`otelguard serve --forward URL` against a next hop that misbehaves: one that never answers holds
at most `--forward-queue-bytes` of requests (the rest dropped and counted, the service's memory
bounded whatever the requests' sizes), and one that redirects is not followed."""

from __future__ import annotations

import threading

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from loopback_support import LoopbackServer, Recorder, Redirect
from service_support import post, running_service, scrape

KIB = 1024


def _metrics_request(size: int) -> bytes:
    """A metrics request (forwarded as received) whose resource carries `size` bytes."""
    request = ExportMetricsServiceRequest()
    request.resource_metrics.add().resource.attributes.append(
        KeyValue(key="padding", value=AnyValue(string_value="x" * size)))
    return request.SerializeToString()


def _forwarded(service) -> dict[str, float]:
    return {sample.labels["outcome"]: sample.value for sample in scrape(service)["otelguard_forward_requests"]
            if sample.name.endswith("_total") and sample.labels["signal"] == "metrics"}


def test_a_silent_next_hop_holds_at_most_the_queues_bytes() -> None:
    """Ten requests of 300 KiB to a next hop that answers nothing until released, with 1 MiB of
    queue: one is being sent, three wait (900 KiB), the others are dropped at once."""
    release = threading.Event()
    arrived = threading.Event()

    def answer_late(path: str, body: bytes) -> tuple[int, str, bytes]:
        arrived.set()
        release.wait(10)
        return 200, "application/x-protobuf", b""

    with LoopbackServer(answer_late) as silent, \
            running_service(forward=silent.base, forward_queue_bytes=1024 * KIB) as service:
        assert post(service, "/v1/metrics", _metrics_request(300 * KIB))[0] == 200
        assert arrived.wait(5)  # the sender is now held by the next hop
        for _ in range(9):
            assert post(service, "/v1/metrics", _metrics_request(300 * KIB))[0] == 200
        assert _forwarded(service)["dropped"] == 6
        release.set()
        assert service.flush()
        assert _forwarded(service) == {"ok": 4, "dropped": 6, "failed": 0}


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirecting_next_hop_is_not_followed(status: int) -> None:
    with Recorder() as elsewhere, Redirect(status, elsewhere.base + "/v1/metrics") as redirect, \
            running_service(forward=redirect.base) as service:
        assert post(service, "/v1/metrics", _metrics_request(10))[0] == 200
        assert service.flush()
        assert redirect.posts == 1 and elsewhere.bodies == {}
        assert _forwarded(service)["failed"] == 1
