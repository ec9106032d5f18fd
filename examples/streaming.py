"""A streamed answer watched by otelguard: `watch_stream` passes every delta through and cuts the
stream with `otelguard.RepetitiveOutputError` once the output repeats itself.

    pip install '.[openai]'
    OPENAI_API_KEY=... python examples/streaming.py

OPENAI_BASE_URL and OTELGUARD_EXAMPLE_MODEL pick another OpenAI-compatible provider and model.
"""

import os

from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider

import otelguard

MODEL = os.environ.get("OTELGUARD_EXAMPLE_MODEL", "gpt-4o-mini")


def main() -> None:
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor())
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("streaming-example")

    client = OpenAI()
    prompt = [{"role": "user", "content": "Write a haiku about tests that pass."}]
    with tracer.start_as_current_span("invoke_agent poet", attributes={"gen_ai.operation.name": "invoke_agent"}):
        # [docs:streaming]
        stream = client.chat.completions.create(model=MODEL, messages=prompt, stream=True)
        try:
            for chunk in otelguard.watch_stream(stream):  # OpenAI chat chunks pass through unchanged
                if chunk.choices and chunk.choices[0].delta.content:
                    print(chunk.choices[0].delta.content, end="", flush=True)
            print()
        except otelguard.RepetitiveOutputError as error:
            print(f"\nstream cut by otelguard: {error} (rule {error.rule}, after {error.chars} characters)")
        # [/docs:streaming]
    provider.shutdown()


if __name__ == "__main__":
    main()
