"""Attribute values shaped like the ones pydantic-ai writes (see tests/fixtures/pydantic-ai-*):
tool definitions, model request parameters, logfire JSON schemas, and word-salad text of a given size
for instructions, messages and tool results. Shared by the span-overhead and analyzer benchmarks."""

from __future__ import annotations

import json
import random

WORDS = ("the of and to in is that for it as with was on be by this are from or at which an have not "
         "weather city forecast compare result tool call model answer check data value reason step plan "
         "request response check again because therefore however maybe consider option parse").split()


def words(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


TOOL_DEFINITIONS = [
    {"name": name, "description": f"{name.replace('_', ' ').capitalize()} for the user's question.",
     "parameters": {"additionalProperties": False, "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                    "required": ["q"], "type": "object"}}
    for name in ("get_weather", "search", "lookup_user", "fetch_page")
]
REQUEST_PARAMETERS = json.dumps({
    "function_tools": [{"name": d["name"], "parameters_json_schema": d["parameters"], "description": d["description"],
                        "outer_typed_dict_key": None, "strict": None, "kind": "function"} for d in TOOL_DEFINITIONS],
    "builtin_tools": [], "output_mode": "text", "output_object": None, "output_tools": [], "allow_text_output": True,
})
MODEL_SCHEMA = json.dumps({"type": "object", "properties": {k: {"type": "array"} for k in (
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "model_request_parameters",
    "gen_ai.tool.definitions")}})
TOOL_SCHEMA = json.dumps({"type": "object", "properties": {"gen_ai.tool.call.arguments": {"type": "object"},
                                                            "gen_ai.tool.call.result": {"type": "object"}}})
