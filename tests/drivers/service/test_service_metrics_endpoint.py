"""`otelguard serve`'s metrics listener answers at the URL it prints, `/metrics` itself, with no
redirect (Prometheus and plain curl do not follow one), in the format the scraper asks for."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from service_support import running_service


def _get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    """GET without following redirects, as a scraper does: (status, content type, body)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        connection.request("GET", parts.path, headers={"Accept": accept} if accept else {})
        answer = connection.getresponse()
        return answer.status, answer.getheader("Content-Type", ""), answer.read().decode()
    finally:
        connection.close()


def test_metrics_answers_200_at_the_printed_url_in_the_asked_format() -> None:
    with running_service() as service:
        assert service.metrics_url.endswith("/metrics")
        status, content_type, text = _get(service.metrics_url)
        assert status == 200 and content_type.startswith("text/plain")
        assert "otelguard_service_spans_total" in text
        status, content_type, text = _get(service.metrics_url, "application/openmetrics-text; version=1.0.0")
        assert status == 200 and content_type.startswith("application/openmetrics-text")
        assert text.rstrip().endswith("# EOF")
        assert _get(service.metrics_url.removesuffix("/metrics") + "/other")[0] == 404
