"""Helpers for tests of `otelguard serve`: a service on ephemeral ports, and its metrics read back."""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from otelguard.service import GuardService, JudgeOptions, ServiceOptions

ANY_PORT = ("127.0.0.1", 0)


@contextmanager
def running_service(config: Any = None, *, grpc: bool = False, forward: str | None = None,
                    judge: JudgeOptions | None = None, **kwargs: Any) -> Iterator[GuardService]:
    """A started service on free ports (gRPC only when asked), stopped on exit."""
    options = ServiceOptions(http=ANY_PORT, grpc=ANY_PORT if grpc else None, metrics=ANY_PORT, forward=forward,
                             judge=judge or JudgeOptions(tick_s=0.05))
    service = GuardService(config, options, **kwargs)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def scrape(service: GuardService) -> dict[str, list[Any]]:
    """The service's /metrics as Prometheus parses it: metric family name -> samples."""
    with urllib.request.urlopen(service.metrics_url, timeout=5) as answer:
        text = answer.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def verdict_counts(service: GuardService, service_name: str | None = None) -> Counter[tuple[str, str, str]]:
    """(guard, rule, action) -> verdicts counted in /metrics, for one sender or all."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for sample in scrape(service).get("otelguard_verdicts", []):
        if not sample.name.endswith("_total"):
            continue
        labels = sample.labels
        if service_name is not None and labels.get("service_name") != service_name:
            continue
        if sample.value:
            counts[labels["otelguard_guard"], labels["otelguard_rule"], labels["otelguard_action"]] += int(sample.value)
    return counts


def post(service: GuardService, path: str, body: bytes, content_type: str = "application/x-protobuf",
         **headers: str) -> tuple[int, bytes, dict[str, str]]:
    """POST to the service's HTTP receiver; (status, body, headers), errors included."""
    request = urllib.request.Request(service.http_url + path, data=body, method="POST",
                                     headers={"Content-Type": content_type, **headers})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)
