"""`otelguard serve`'s alert lines never hold the judge: written by a thread of their own from a
bounded queue, so an output nobody reads (a full pipe) leaves every verdict judged and counted, the
lines past the queue dropped and counted in `otelguard.service.alert_lines`."""

from __future__ import annotations

import io
import threading

from otelguard.service.alerts import AlertLines
from service_support import REMIND, _request_json, _tool_span, post, running_service, scrape, verdict_counts


class UnreadOutput(io.TextIOBase):
    """An output nobody reads: a write waits until the test lets it go, as on a full pipe."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.text: list[str] = []

    def write(self, text: str) -> int:
        self.release.wait(10)
        self.text.append(text)
        return len(text)


def _looping_trace(trace: int) -> bytes:
    """A trace of one tool called three times alike: one reminder, one alert line."""
    spans = [_tool_span(f"{trace:04x}00000000000{call}", trace_id=f"{trace:032x}") for call in (1, 2, 3)]
    for span in spans:
        span["attributes"].append({"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{}"}})
    return _request_json(spans)


def test_an_unread_output_drops_alert_lines_and_the_judge_goes_on() -> None:
    out = UnreadOutput()
    with running_service(alerts=AlertLines(out, max_lines=2)) as service:
        for trace in range(1, 11):
            assert post(service, "/v1/traces", _looping_trace(trace), "application/json")[0] == 200
        assert service.flush(timeout_s=5)
        assert verdict_counts(service)[REMIND] == 10
        lines = {sample.labels["outcome"]: sample.value for sample in scrape(service)["otelguard_service_alert_lines"]
                 if sample.name.endswith("_total")}
        # One line is held by the writer, two wait in the queue (or three, if the writer was not yet
        # at the first): the rest are dropped.
        assert lines["printed"] == 0 and 7 <= lines["dropped"] <= 8
        out.release.set()
    written = "".join(out.text).splitlines()  # an alert longer than the width goes on, further indented
    alerts = [line for line in written if line.startswith("  ALERT")]
    assert len(alerts) == 10 - lines["dropped"] and all(line.startswith("      ") for line in written if line not in alerts)
