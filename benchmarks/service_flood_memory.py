"""`otelguard serve` under a flood from many senders: its memory follows `--queue` and
`--max-request-bytes`, not how long or how hard the flood goes on (issue 23).

`otelguard serve --queue N` runs in its own process; SENDERS threads post export requests
(protobuf, REQUEST_RUNS agent runs of 1 agent + 10 tool spans each, ~1 KB of arguments a tool span,
distinct trace ids in every request; the runs belong to REQUEST_RUNS conversations, so the engine's
per-agent state stays the same size and what grows is what waits) as fast as it answers, for FLOOD_S seconds. The service's resident memory
(VmRSS from /proc) is sampled every 50 ms; the figures are its peak, its level in the last third
of the flood (a plateau if bounded), and how many requests were taken (200) or refused (503, busy).
Two queue bounds are run: the plateau should follow the bound.

Run: .venv/bin/python benchmarks/service_flood_memory.py [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import os
import re
import subprocess
import sys
import threading
import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

SENDERS = 16
REQUEST_RUNS = 20
TOOLS_PER_RUN = 10
QUEUES = (8, 128)


def _attribute(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


_MARK = b"\xfe\xed\xfa\xce"


def template() -> bytes:
    """One export request of REQUEST_RUNS complete agent runs; each trace id is _MARK, the run's
    number (4 bytes) and 8 zero bytes that `requests` fills with the request's number."""
    message = ExportTraceServiceRequest()
    resource = message.resource_spans.add()
    resource.resource.attributes.append(_attribute("service.name", "flood"))
    spans = resource.scope_spans.add().spans
    for run in range(REQUEST_RUNS):
        trace_id = _MARK + run.to_bytes(4, "big") + bytes(8)
        root = spans.add(trace_id=trace_id, span_id=(1).to_bytes(8, "big"), name="invoke_agent flood",
                         start_time_unix_nano=1_000, end_time_unix_nano=10_000_000)
        root.attributes.extend([_attribute("gen_ai.operation.name", "invoke_agent"),
                                _attribute("gen_ai.agent.name", "flood"),
                                _attribute("gen_ai.conversation.id", f"conversation-{run}")])
        for tool in range(TOOLS_PER_RUN):
            span = spans.add(trace_id=trace_id, span_id=(tool + 2).to_bytes(8, "big"), parent_span_id=root.span_id,
                             name="execute_tool lookup", start_time_unix_nano=2_000 + tool * 1000,
                             end_time_unix_nano=2_500 + tool * 1000)
            span.attributes.extend([
                _attribute("gen_ai.operation.name", "execute_tool"), _attribute("gen_ai.tool.name", "lookup"),
                _attribute("gen_ai.tool.call.arguments", f'{{"page": {tool}, "query": "{"x" * 1000}"}}')])
    return message.SerializeToString()


def requests(body: bytes):
    """Endless distinct requests: the template with each trace id's last 8 bytes set to a counter
    (same length, so the protobuf stays valid; cheap, so the senders can outrun the judge)."""
    slots = [match.start() + 8 for match in re.finditer(re.escape(_MARK) + b"....\x00{8}", body, re.DOTALL)]
    assert len(slots) == REQUEST_RUNS * (TOOLS_PER_RUN + 1)
    for index in itertools.count(1):
        copy = bytearray(body)
        stamp = index.to_bytes(8, "big")
        for slot in slots:
            copy[slot:slot + 8] = stamp
        yield bytes(copy)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+) kB", status.read()).group(1)) / 1024


def flood(queue: int, seconds: float) -> dict[str, float]:
    service = subprocess.Popen(
        [sys.executable, "-m", "otelguard", "serve", "--http", "127.0.0.1:0", "--grpc", "off", "--metrics", "off",
         "--queue", str(queue)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    host, port = re.search(r"OTLP/HTTP http://([0-9.]+):(\d+)", service.stdout.readline()).groups()
    threading.Thread(target=service.stdout.read, daemon=True).start()  # its alert lines, unread
    idle = rss_mib(service.pid)
    bodies = requests(template())
    answers = {200: 0, 503: 0}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def send() -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        while time.monotonic() < deadline:
            with lock:
                body = next(bodies)
            connection.request("POST", "/v1/traces", body,
                               {"Content-Type": "application/x-protobuf"})
            answer = connection.getresponse()
            answer.read()
            with lock:
                answers[answer.status] = answers.get(answer.status, 0) + 1

    senders = [threading.Thread(target=send) for _ in range(SENDERS)]
    for thread in senders:
        thread.start()
    samples = []
    started = time.monotonic()
    while any(thread.is_alive() for thread in senders):
        samples.append((time.monotonic() - started, rss_mib(service.pid)))
        time.sleep(0.05)
    service.terminate()
    service.communicate(timeout=120)
    late = [rss for at, rss in samples if at >= seconds * 2 / 3]
    return {"idle": idle, "peak": max(rss for _, rss in samples), "late_min": min(late), "late_max": max(late),
            "taken": answers.get(200, 0), "busy": answers.get(503, 0)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    seconds = 6.0 if parser.parse_args().quick else 15.0
    size = len(template())
    print(f"{SENDERS} senders, {size / 1024:.0f} KiB a request ({REQUEST_RUNS * (TOOLS_PER_RUN + 1)} spans), "
          f"{seconds:.0f} s each")
    for queue in QUEUES:
        figures = flood(queue, seconds)
        print(f"--queue {queue:4d}: RSS idle {figures['idle']:.1f} MiB, peak {figures['peak']:.1f} MiB, "
              f"last third {figures['late_min']:.1f}-{figures['late_max']:.1f} MiB; "
              f"{figures['taken']} requests taken, {figures['busy']} refused busy (503)")


if __name__ == "__main__":
    main()
