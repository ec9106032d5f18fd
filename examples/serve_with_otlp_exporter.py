"""An agent in any language guarded by `otelguard serve`: the agent only exports OTLP; the service
judges its spans and answers what it decided at `GET /v1/verdicts?session=ID`.

Start the service first (`pip install '.[serve]'`), then run the agent:

    otelguard serve                                   # OTLP/HTTP on 127.0.0.1:4318
    python examples/serve_with_otlp_exporter.py       # OTELGUARD_SERVE_URL=http://host:port elsewhere

The agent here is a hand-written loop that keeps reading the same page (no model needed to run it);
in your agent, the OTLP exporter is the only change. With `--token-file`, set OTELGUARD_TOKEN too.
"""

import json
import os
import time
import urllib.parse
import urllib.request
import uuid

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

SERVE_URL = os.environ.get("OTELGUARD_SERVE_URL", "http://127.0.0.1:4318").rstrip("/")
TOKEN = os.environ.get("OTELGUARD_TOKEN")
HEADERS = {"Authorization": f"Bearer {TOKEN}"} if TOKEN else {}


def looping_agent(provider: TracerProvider, session: str) -> None:
    tracer = provider.get_tracer("serve-example")
    with tracer.start_as_current_span("invoke_agent reader", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "reader",
            "gen_ai.conversation.id": session}):
        for _ in range(5):
            with tracer.start_as_current_span("execute_tool read_page", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_page",
                    "gen_ai.tool.call.arguments": json.dumps({"page": 2}),
                    "gen_ai.conversation.id": session}) as span:
                span.set_attribute("gen_ai.tool.call.result", "CHANGELOG page 2 of 3: entries for 2.1.x")


def verdicts_of(session: str) -> list[dict]:
    query = urllib.parse.urlencode({"session": session})
    request = urllib.request.Request(f"{SERVE_URL}/v1/verdicts?{query}", headers=HEADERS)
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)["verdicts"]


def main() -> None:
    session = f"example-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{SERVE_URL}/v1/traces", headers=HEADERS)))
    looping_agent(provider, session)
    provider.shutdown()  # sends what is left
    deadline = time.monotonic() + 10
    verdicts = verdicts_of(session)
    while not any(verdict["action"] != "none" for verdict in verdicts) and time.monotonic() < deadline:
        time.sleep(0.2)  # the service judges what it received in the background
        verdicts = verdicts_of(session)
    acted = [verdict for verdict in verdicts if verdict["action"] != "none"]
    for verdict in acted:
        print(f"{verdict['guard']} {verdict['rule']} {verdict['action']}: {verdict['message']}")
    print(f"{len(acted)} verdict(s) with an action for session {session}")


if __name__ == "__main__":
    main()
