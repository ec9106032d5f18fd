"""Attribute keys and values otelguard reads and writes. Constants only.

Grouped by who defines them: the OpenTelemetry GenAI semantic conventions, OpenInference,
OpenLLMetry (Traceloop), pydantic-ai's legacy (instrumentation version 2) keys, and otelguard's own.
"""

from __future__ import annotations

# --- OpenTelemetry GenAI semantic conventions -------------------------------------------------

GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_DETAILS_REASONING_TOKENS = "gen_ai.usage.details.reasoning_tokens"  # pydantic-ai
GEN_AI_USAGE_REASONING_TOKENS = "gen_ai.usage.reasoning_tokens"  # OpenLLMetry
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# gen_ai.operation.name values
OP_INVOKE_AGENT = "invoke_agent"
OP_EXECUTE_TOOL = "execute_tool"
OP_CHAT = "chat"
OP_TEXT_COMPLETION = "text_completion"
OP_GENERATE_CONTENT = "generate_content"

# gen_ai.output.messages part types
PART_TEXT = "text"
PART_TOOL_CALL = "tool_call"
PART_REFUSAL = "refusal"
PART_THINKING = "thinking"  # pydantic-ai
PART_REASONING = "reasoning"  # semconv; OpenLLMetry (Responses: a JSON string of summary items)
PART_REASONING_TEXT = "reasoning_text"  # OpenLLMetry agents: a Python repr `Content(text=..., ...)`

# --- General OpenTelemetry ---------------------------------------------------------------------

EXCEPTION_EVENT = "exception"
EXCEPTION_MESSAGE = "exception.message"

# --- OpenInference -----------------------------------------------------------------------------

OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
OI_KIND_AGENT = "AGENT"
OI_KIND_LLM = "LLM"
OI_KIND_TOOL = "TOOL"
OI_KIND_CHAIN = "CHAIN"

INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
SESSION_ID = "session.id"
AGENT_NAME = "agent.name"
TOOL_NAME = "tool.name"
LLM_MODEL_NAME = "llm.model_name"
LLM_FINISH_REASON = "llm.finish_reason"
LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.completion"
LLM_TOKEN_COUNT_PROMPT = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION_REASONING = "llm.token_count.completion_details.reasoning"

# Flattened output messages: llm.output_messages.{i}.message.<suffix>
LLM_OUTPUT_MESSAGES_PREFIX = "llm.output_messages."
MESSAGE_CONTENT = "message.content"
MESSAGE_CONTENTS_PREFIX = "message.contents."  # .{k}.message_content.{type,text}
MESSAGE_CONTENT_TYPE = "message_content.type"
MESSAGE_CONTENT_TEXT = "message_content.text"
MESSAGE_TOOL_CALLS_PREFIX = "message.tool_calls."  # .{j}.tool_call.function.{name,arguments}
TOOL_CALL_FUNCTION_NAME = "tool_call.function.name"
TOOL_CALL_FUNCTION_ARGUMENTS = "tool_call.function.arguments"
CONTENT_TYPE_TEXT = "text"
CONTENT_TYPE_REASONING = "reasoning"

# Raw provider payload key that carries chat reasoning (only inside output.value)
RAW_REASONING_CONTENT = "reasoning_content"

# Textless streaming event OpenInference adds once per streamed call
OI_FIRST_TOKEN_EVENT = "First Token Stream Event"

# --- OpenLLMetry (Traceloop) -------------------------------------------------------------------

TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"
TL_KIND_AGENT = "agent"
TL_KIND_TOOL = "tool"
TL_KIND_WORKFLOW = "workflow"

LLM_REQUEST_TYPE = "llm.request.type"  # legacy marker: chat | completion | embedding | rerank
GEN_AI_IS_STREAMING = "gen_ai.is_streaming"
GEN_AI_OPENAI_API_BASE = "gen_ai.openai.api_base"

# Legacy indexed completions: gen_ai.completion.{i}.<suffix>
GEN_AI_COMPLETION_PREFIX = "gen_ai.completion."
COMPLETION_CONTENT = "content"
COMPLETION_REASONING = "reasoning"
COMPLETION_FINISH_REASON = "finish_reason"
COMPLETION_TOOL_CALLS_PREFIX = "tool_calls."  # .{j}.{name,arguments}
COMPLETION_FUNCTION_CALL_NAME = "function_call.name"
COMPLETION_FUNCTION_CALL_ARGUMENTS = "function_call.arguments"
GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"  # legacy
GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"  # legacy
LLM_USAGE_REASONING_TOKENS = "llm.usage.reasoning_tokens"  # legacy

GEN_AI_COMPLETION_CHUNK_EVENT = "gen_ai.content.completion.chunk"
LLM_COMPLETION_CHUNK_EVENT = "llm.content.completion.chunk"  # legacy name

# --- pydantic-ai instrumentation version 2 -----------------------------------------------------

PYDANTIC_AI_V2_AGENT_SPAN = "agent run"
PYDANTIC_AI_V2_TOOL_SPAN = "running tool"
PYDANTIC_AI_AGENT_NAME = "agent_name"
PYDANTIC_AI_TOOL_ARGUMENTS = "tool_arguments"
PYDANTIC_AI_TOOL_RESPONSE = "tool_response"

# --- otelguard's own ---------------------------------------------------------------------------

OTELGUARD_TOOL_TIMEOUT_MS = "otelguard.tool.timeout_ms"
OTELGUARD_CHUNK_EVENT = "otelguard.chunk"
OTELGUARD_CHUNK_TEXT = "otelguard.chunk.text"
OTELGUARD_CHUNK_KIND = "otelguard.chunk.kind"
CHUNK_KIND_TEXT = "text"
CHUNK_KIND_REASONING = "reasoning"

# Verdict attributes written on judged spans (design §5)
OTELGUARD_VERDICT = "otelguard.verdict"
OTELGUARD_GUARD = "otelguard.guard"
OTELGUARD_RULE = "otelguard.rule"
OTELGUARD_ACTION = "otelguard.action"
